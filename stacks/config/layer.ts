/**
 * One layer of settings (the stack's defaults or one host's own), checked on its own: its bad
 * fields are reported and dropped, so that its valid ones still apply and what was dropped is
 * not called missing as well.
 */
import { z } from "zod";
import { isPlainObject, WHOLE_VALUES } from "../../components/program";
import { formatPath, issuesOf } from "./issues";
import { settingsSchema } from "./schema";

export const SETTINGS_KEYS = Object.keys(settingsSchema.shape) as (keyof typeof settingsSchema.shape)[];

/** One layer of settings (the stack's defaults or one host's own) after checking it. */
export interface Layer {
    /** The layer's settings minus the fields that failed, so its valid fields still apply. */
    settings: Record<string, unknown>;
    /** Paths already reported (`concourse.tsaHost`); "" when the whole layer is unusable. */
    reported: string[];
    problems: string[];
}

/** A copy of `value` without the field at `path`. */
function without(value: Record<string, unknown>, [head, ...rest]: PropertyKey[]): Record<string, unknown> {
    const out = { ...value };
    const inner = out[String(head)];
    if (rest.length > 0 && isPlainObject(inner)) out[String(head)] = without(inner, rest);
    else delete out[String(head)];
    return out;
}

/** Checks the settings a layer (defaults or one host) gives, without requiring the rest. */
export function checkLayer(layer: Record<string, unknown>, prefix: string): Layer {
    const out: Layer = { settings: pickSettings(layer), reported: [], problems: [] };
    for (const key of SETTINGS_KEYS) {
        if (layer[key] === undefined) continue;
        const field = settingsSchema.shape[key];
        const schema = field instanceof z.ZodObject ? field.partial() : field;
        const result = (schema as z.ZodType).safeParse(layer[key], { reportInput: true });
        if (result.success) continue;
        out.problems.push(...issuesOf(result.error, formatPath(prefix, [key])));
        for (const issue of result.error.issues) {
            // Lists are replaced, not merged, so a bad item drops the whole list; so does a bad part of a whole value.
            const cut = issue.path.findIndex((part, at) => typeof part === "number" || WHOLE_VALUES.has(formatPath("", [key, ...issue.path.slice(0, at)])));
            const path = [key, ...(cut < 0 ? issue.path : issue.path.slice(0, cut))];
            const bad = issue.code === "unrecognized_keys" && cut < 0 ? issue.keys.map((k) => [...path, k]) : [path];
            for (const b of bad) {
                out.settings = without(out.settings, b);
                out.reported.push(formatPath("", b));
            }
        }
    }
    return out;
}

/** Whether `path` is at or under a path already reported ("" covers everything). */
export function covered(path: string, reported: string[]): boolean {
    return reported.some((r) => r === "" || path === r || path.startsWith(`${r}.`) || path.startsWith(`${r}[`));
}

function pickSettings(layer: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(SETTINGS_KEYS.filter((k) => layer[k] !== undefined).map((k) => [k, layer[k]]));
}

/** The stack's defaults (`gpu-workers:defaults`) as the layer every host's own settings go over. */
export function parseDefaults(raw: unknown): Layer {
    if (raw === undefined) return { settings: {}, reported: [], problems: [] };
    // Hosts can't tell what they were meant to inherit, so don't call their settings missing.
    if (!isPlainObject(raw)) return { settings: {}, reported: [""], problems: ["defaults: expected an object of settings shared by all hosts"] };
    const unknown = Object.keys(raw).filter((k) => !(SETTINGS_KEYS as string[]).includes(k));
    const layer = checkLayer(raw, "defaults");
    if (unknown.length === 0) return layer;
    const problem = `defaults: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (defaults take only ${SETTINGS_KEYS.join(", ")})`;
    return { ...layer, problems: [problem, ...layer.problems] };
}
