/**
 * The source of settings-layer.generated.ts: SettingsLayer written out as an interface, one
 * field per setting with the schema's doc (`.meta({ description })`) and default as its JSDoc,
 * each field's type read from the schema (`z.input<typeof settingsSchema>`), so that an editor
 * and the package's `.d.ts` show a setting's doc where GpuWorkerArgs takes it. The schema stays
 * the one place a doc is written: `npm run build` writes the file from it (cli/settings-types.ts)
 * and a unit test fails while the file differs. Pure.
 */
import { z } from "zod";
import { defaultOf, formatDefault, groupOf, metaOf } from "./schema-docs";
import { settingsSchema } from "./settings";

/** The file's path in the repo, and the interface's name. */
export const SETTINGS_INTERFACE_FILE = "components/lib/settings/settings-layer.generated.ts";
export const SETTINGS_INTERFACE_NAME = "WorkerSettingsLayer";

/** A field's doc as JSDoc lines at `indent`: its description, then its default. */
function jsdoc(field: z.ZodType, where: string, indent: string): string[] {
    const meta = metaOf(field);
    if (meta.description === undefined) throw new Error(`${where}: the schema gives no description (.meta({ description }))`);
    const given = defaultOf(field);
    const defaultText = given ? `\`${formatDefault(given.value)}\`` : meta.defaultText;
    // A description may hold anything but the end of a comment.
    const lines = [meta.description, ...(defaultText !== undefined ? ["", `Default: ${defaultText}.`] : [])].map((l) => l.replace(/\*\//g, "*\\/"));
    return [`${indent}/**`, ...lines.map((l) => (l === "" ? `${indent} *` : `${indent} * ${l}`)), `${indent} */`];
}

/** The generated file's text, from `schema` (the components' settings schema). */
export function settingsInterfaceSource(schema: z.ZodObject = settingsSchema): string {
    const out = [
        "// Written by `npm run build` (cli/settings-types.ts) from settingsSchema (settings.ts), where each doc and default",
        "// is written: edit them there. A unit test fails while this file differs from what the schema gives.",
        'import type { z } from "zod";',
        'import type { SettingsLayer, settingsSchema } from "./settings";',
        "",
        "/**",
        " * One layer of a worker's settings as a caller gives it (GpuWorker's arguments, a stack's",
        " * `defaults` or one host): any group, any field of it; what is left out takes the default.",
        " * SettingsLayer written out field by field, with each setting's doc from the schema.",
        " */",
        `export interface ${SETTINGS_INTERFACE_NAME} {`,
    ];
    for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
        out.push(...jsdoc(field, key, "    "));
        const group = groupOf(field);
        if (!group) {
            out.push(`    ${key}?: z.input<typeof settingsSchema>["${key}"];`);
            continue;
        }
        out.push(`    ${key}?: {`);
        for (const [inner, innerField] of Object.entries(group.shape) as [string, z.ZodType][]) {
            out.push(
                ...jsdoc(innerField, `${key}.${inner}`, "        "),
                `        ${inner}?: NonNullable<z.input<typeof settingsSchema>["${key}"]>["${inner}"];`,
            );
        }
        out.push("    };");
    }
    out.push(
        "}",
        "",
        "/** The interface is SettingsLayer exactly, its groups and every field's type: tsc fails here otherwise. */",
        `export type ${SETTINGS_INTERFACE_NAME}Check = [IsTrue<Same<${SETTINGS_INTERFACE_NAME}, SettingsLayer>>, IsTrue<Same<keyof ${SETTINGS_INTERFACE_NAME}, keyof SettingsLayer>>];`,
        "type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;",
        "type IsTrue<T extends true> = T;",
        "",
    );
    return out.join("\n");
}
