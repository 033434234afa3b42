/**
 * Reads what a settings schema says about its fields: each field's doc (`.meta({description})`),
 * its default (`.default(value)`, or `.meta({defaultText})` where the default is computed
 * elsewhere, such as the vendor's toolkit version) and the defaults as one object. The schema is
 * the one place these are written; the README's tables and the built-in defaults are derived
 * from it here. Pure.
 */
import { z } from "zod";

/** One documented field: its dotted path, its default as the docs show it, and its meaning. */
export interface FieldDoc {
    path: string;
    /** The default written as the README shows it (`all`, `[_writable, _rw]`), or undefined for none. */
    default?: string;
    description?: string;
}

function innerOf(schema: z.ZodType): z.ZodType | undefined {
    if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodPrefault) {
        return schema.unwrap() as z.ZodType;
    }
    return undefined;
}

/** The schema and its wrappers, outermost first. */
function layers(schema: z.ZodType): z.ZodType[] {
    const out: z.ZodType[] = [];
    for (let s: z.ZodType | undefined = schema; s; s = innerOf(s)) out.push(s);
    return out;
}

/** The metadata of a field, from whichever of its wrappers carries it. */
export function metaOf(schema: z.ZodType): { description?: string; defaultText?: string } {
    const out: { description?: string; defaultText?: string } = {};
    for (const s of layers(schema)) {
        const meta = s.meta();
        if (!meta) continue;
        if (out.description === undefined && typeof meta.description === "string") out.description = meta.description;
        if (out.defaultText === undefined && typeof meta.defaultText === "string") out.defaultText = meta.defaultText;
    }
    return out;
}

/** The field's `.default(value)`, when it has one. */
export function defaultOf(schema: z.ZodType): { value: unknown } | undefined {
    const d = layers(schema).find((s) => s instanceof z.ZodDefault);
    return d ? { value: d.parse(undefined) } : undefined;
}

/** The object schema of a group of settings (not an optional object, which is one value as a whole). */
export function groupOf(schema: z.ZodType): z.ZodObject | undefined {
    return schema instanceof z.ZodObject ? schema : undefined;
}

/** A default as the README writes it: plain words, lists in brackets, objects as `{key: value}`. */
export function formatDefault(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(formatDefault).join(", ")}]`;
    if (typeof value === "object" && value !== null)
        return `{${Object.entries(value)
            .map(([k, v]) => `${k}: ${formatDefault(v)}`)
            .join(", ")}}`;
    return String(value);
}

/** Every field of a settings schema, groups (verify, concourse...) walked into, in declaration order. */
export function fieldDocs(schema: z.ZodObject, prefix = ""): FieldDoc[] {
    const out: FieldDoc[] = [];
    for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
        const path = prefix ? `${prefix}.${key}` : key;
        const group = groupOf(field);
        if (group) {
            out.push(...fieldDocs(group, path));
            continue;
        }
        const meta = metaOf(field);
        const given = defaultOf(field);
        out.push({
            path,
            ...(given ? { default: `\`${formatDefault(given.value)}\`` } : meta.defaultText !== undefined ? { default: meta.defaultText } : {}),
            ...(meta.description !== undefined ? { description: meta.description } : {}),
        });
    }
    return out;
}

/** The defaults a settings schema declares, as one object of its shape (fields without a default left out). */
export function defaultsOf(schema: z.ZodObject): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
        const group = groupOf(field);
        if (group) out[key] = defaultsOf(group);
        else {
            const given = defaultOf(field);
            if (given) out[key] = given.value;
        }
    }
    return out;
}

/** The settings table of the README: one row per field, `key | default | meaning`. */
export function settingsTable(docs: FieldDoc[]): string {
    const rows = docs.map((d) => {
        if (d.description === undefined) throw new Error(`${d.path}: the schema gives no description (.meta({ description }))`);
        return `| \`${d.path}\` | ${d.default ?? "–"} | ${d.description} |`;
    });
    return ["| key | default | meaning |", "|---|---|---|", ...rows].join("\n");
}
