/**
 * The sources of the `*.generated.ts` settings interfaces: each of the components' settings schemas
 * written out as an interface, one field per setting with the schema's doc (`.meta({ description })`)
 * and default as its JSDoc, each field's type read from the schema (`z.input<typeof schema>`), so
 * that an editor and the package's `.d.ts` show a setting's doc where GpuWorkerArgs,
 * ConcourseWebArgs and KubernetesGpuNodesArgs take it. The schema stays the one place a doc is
 * written: `npm run build` writes the files from it (cli/settings-types.ts) and a unit test fails
 * while a file differs. Pure.
 */
import { z } from "zod";
import { kubernetesSettingsSchema, settingsSchema, webSettingsSchema } from "../../components";
import { defaultOf, formatDefault, groupOf, metaOf } from "../../components/program";

/** One generated interface: its file, its name, the schema and where the file imports it from. */
export interface SettingsInterface {
    /** The file's path in the repo. */
    file: string;
    name: string;
    schema: z.ZodObject;
    /** The schema's exported name, and the module the generated file imports it from. */
    schemaName: string;
    schemaModule: string;
    /**
     * A layer of settings (SettingsLayer, GpuWorker's): every group and field optional. Otherwise
     * the schema's input (`z.input`), a field optional where the schema gives it a default or lets it out.
     */
    layer: boolean;
    /** The interface's own doc, line by line. */
    doc: string[];
}

export const SETTINGS_INTERFACES: SettingsInterface[] = [
    {
        file: "components/lib/settings/settings-layer.generated.ts",
        name: "WorkerSettingsLayer",
        schema: settingsSchema,
        schemaName: "settingsSchema",
        schemaModule: "./settings",
        layer: true,
        doc: [
            "One layer of a worker's settings as a caller gives it (GpuWorker's arguments, a stack's",
            "`defaults` or one host): any group, any field of it; what is left out takes the default.",
            "SettingsLayer written out field by field, with each setting's doc from the schema.",
        ],
    },
    {
        file: "components/lib/settings/web-settings.generated.ts",
        name: "WebSettingsInput",
        schema: webSettingsSchema,
        schemaName: "webSettingsSchema",
        schemaModule: "./web-settings",
        layer: false,
        doc: ["The web's settings as ConcourseWebArgs takes them (webSettingsSchema's input), with each setting's doc from the schema."],
    },
    {
        file: "components/lib/kubernetes/settings.generated.ts",
        name: "KubernetesSettingsInput",
        schema: kubernetesSettingsSchema,
        schemaName: "kubernetesSettingsSchema",
        schemaModule: "./settings",
        layer: false,
        doc: ["The cluster's settings as KubernetesGpuNodesArgs takes them (kubernetesSettingsSchema's input), with each setting's doc from the schema."],
    },
];

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

/** Whether the schema's input may leave the field out (it has a default, or is optional). */
function optionalInput(field: z.ZodType): boolean {
    return field._zod.optin !== undefined;
}

/** The fields of `schema` at `depth` (1: the interface's, 2: a group's), `input` the TS type of the object they are in. */
function fields(spec: SettingsInterface, schema: z.ZodObject, input: string, prefix: string, depth: number): string[] {
    const indent = "    ".repeat(depth);
    const out: string[] = [];
    for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
        const path = prefix ? `${prefix}.${key}` : key;
        out.push(...jsdoc(field, path, indent));
        const mark = spec.layer || optionalInput(field) ? "?" : "";
        const group = groupOf(field);
        // A layer is partial two levels down (SettingsLayer); the schema's input as deep as its groups go.
        if (group && (!spec.layer || depth === 1)) {
            const inner = `${spec.layer || optionalInput(field) ? `NonNullable<${input}["${key}"]>` : `${input}["${key}"]`}`;
            out.push(`${indent}${key}${mark}: {`, ...fields(spec, group, inner, path, depth + 1), `${indent}};`);
        } else {
            out.push(`${indent}${key}${mark}: ${input}["${key}"];`);
        }
    }
    return out;
}

/** `export type name = [items]`, on one line where it fits in the project's 160 columns, as prettier writes it. */
function checkLines(name: string, items: string[]): string[] {
    const line = `export type ${name} = [${items.join(", ")}];`;
    return line.length <= 160 ? [line] : [`export type ${name} = [`, ...items.map((i) => `    ${i},`), "];"];
}

/** The generated file's text. */
export function settingsInterfaceSource(spec: SettingsInterface): string {
    const input = `z.input<typeof ${spec.schemaName}>`;
    const same = spec.layer ? "SettingsLayer" : input;
    return [
        `// Written by \`npm run build\` (cli/settings-types.ts) from ${spec.schemaName}, where each doc and default is written:`,
        "// edit them there. A unit test fails while this file differs from what the schema gives.",
        'import type { z } from "zod";',
        `import type { ${spec.layer ? "SettingsLayer, " : ""}${spec.schemaName} } from "${spec.schemaModule}";`,
        "",
        "/**",
        ...spec.doc.map((l) => ` * ${l}`),
        " */",
        `export interface ${spec.name} {`,
        ...fields(spec, spec.schema, input, "", 1),
        "}",
        "",
        `/** The interface is ${spec.layer ? "SettingsLayer" : "the schema's input"} exactly, its groups and every field's type: tsc fails here otherwise. */`,
        ...checkLines(`${spec.name}Check`, [`IsTrue<Same<${spec.name}, ${same}>>`, `IsTrue<Same<keyof ${spec.name}, keyof ${same}>>`]),
        "type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;",
        "type IsTrue<T extends true> = T;",
        "",
    ].join("\n");
}
