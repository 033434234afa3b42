/**
 * Validates the raw stack config and applies defaults. Every problem is collected and
 * reported together, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { z } from "zod";
import { PlanError, planWorkerGpus } from "../components/gpu/plan";
import { BUILTIN_DEFAULTS, HostConfig, hostEntrySchema, settingsSchema } from "./schema";

export class StackConfigError extends Error {
    constructor(public readonly problems: string[]) {
        super(`invalid stack config (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` + problems.map((p) => `  - ${p}`).join("\n"));
        this.name = "StackConfigError";
    }
}

export interface RawStackConfig {
    defaults?: unknown;
    hosts?: unknown;
}

const INVENTORY_KEYS = ["vendor", "gpus", "nvswitches", "tegra"] as const;
const SETTINGS_KEYS = Object.keys(settingsSchema.shape) as (keyof typeof settingsSchema.shape)[];
const HOST_KEYS = new Set<string>(["name", "transport", ...INVENTORY_KEYS, ...SETTINGS_KEYS]);

/** `["gpus", 0, "index"]` under `hosts[2]` -> `hosts[2].gpus[0].index`. */
export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
    let out = prefix;
    for (const part of path) {
        out += typeof part === "number" ? `[${part}]` : `${out ? "." : ""}${String(part)}`;
    }
    return out || "(root)";
}

function issuesOf(error: z.ZodError, prefix: string): string[] {
    return error.issues.map((issue) => `${formatPath(prefix, issue.path)}: ${describe(issue)}`);
}

function describe(issue: z.core.$ZodIssue): string {
    if (issue.code === "unrecognized_keys") return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
    if (issue.code === "invalid_type" && !("input" in issue && issue.input !== undefined)) return `required (${issue.message.replace(/^Invalid input: /, "")})`;
    return issue.message;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Objects merge key by key; anything else (arrays included) is replaced by the override. */
export function deepMerge(base: unknown, override: unknown): unknown {
    if (override === undefined) return base;
    if (!isPlainObject(base) || !isPlainObject(override)) return override;
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(override)) out[key] = deepMerge(base[key], value);
    return out;
}

/** Checks the settings a layer (defaults or one host) gives, without requiring the rest. */
function checkPartialSettings(layer: Record<string, unknown>, prefix: string): string[] {
    const problems: string[] = [];
    for (const key of SETTINGS_KEYS) {
        if (layer[key] === undefined) continue;
        const field = settingsSchema.shape[key];
        const schema = field instanceof z.ZodObject ? field.partial() : field;
        const result = (schema as z.ZodType).safeParse(layer[key], { reportInput: true });
        if (!result.success) problems.push(...issuesOf(result.error, formatPath(prefix, [key])));
    }
    return problems;
}

function pickSettings(layer: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(SETTINGS_KEYS.filter((k) => layer[k] !== undefined).map((k) => [k, layer[k]]));
}

function parseHost(raw: unknown, i: number, defaults: Record<string, unknown>): { host?: HostConfig; problems: string[] } {
    const prefix = `hosts[${i}]`;
    if (!isPlainObject(raw)) return { problems: [`${prefix}: expected an object with name, transport and the GPU inventory`] };
    const problems: string[] = [];
    const unknown = Object.keys(raw).filter((k) => !HOST_KEYS.has(k));
    if (unknown.length > 0) problems.push(`${prefix}: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);

    const entry = hostEntrySchema.safeParse({
        name: raw.name,
        transport: raw.transport,
        inventory: Object.fromEntries(INVENTORY_KEYS.filter((k) => raw[k] !== undefined).map((k) => [k, raw[k]])),
    }, { reportInput: true });
    if (!entry.success) {
        // Inventory fields sit directly on the host, so drop the internal "inventory" segment.
        problems.push(...entry.error.issues.map((issue) => {
            const path = issue.path[0] === "inventory" ? issue.path.slice(1) : issue.path;
            return `${formatPath(prefix, path)}: ${describe(issue)}`;
        }));
    }

    const layerProblems = checkPartialSettings(raw, prefix);
    problems.push(...layerProblems);
    const merged = deepMerge(deepMerge(BUILTIN_DEFAULTS, defaults), pickSettings(raw));
    const settings = settingsSchema.safeParse(merged, { reportInput: true });
    if (!settings.success && layerProblems.length === 0) {
        problems.push(...settings.error.issues.map((issue) => `${formatPath(prefix, issue.path)}: ${describe(issue)}${issue.input === undefined ? " — set it under defaults or on this host" : ""}`));
    }
    if (problems.length > 0 || !entry.success || !settings.success) return { problems };
    return { host: { ...settings.data, name: entry.data.name, transport: entry.data.transport, inventory: entry.data.inventory }, problems };
}

function crossHostProblems(hosts: HostConfig[]): string[] {
    const problems: string[] = [];
    const seen = new Map<string, number>();
    hosts.forEach((h, i) => {
        const first = seen.get(h.name);
        if (first !== undefined) problems.push(`hosts[${i}].name: ${h.name} is already used by hosts[${first}]`);
        else seen.set(h.name, i);
    });
    const ports = new Map<string, number>();
    hosts.forEach((h, i) => {
        if (!("lxd" in h.transport)) return;
        const key = `${h.transport.lxd.server.socket ?? h.transport.lxd.server.url ?? "local"} ${h.transport.lxd.sshAddress}:${h.transport.lxd.sshPort}`;
        const first = ports.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].transport.lxd.sshPort: ${h.transport.lxd.sshPort} is already used by hosts[${first}] on the same LXD server`);
        else ports.set(key, i);
    });
    hosts.forEach((h, i) => {
        try {
            planWorkerGpus(h.inventory, { selection: h.selection, cdi: h.toolkit.cdi, fabricManager: h.fabricManager, extraTags: h.concourse.tags });
        } catch (e) {
            if (!(e instanceof PlanError)) throw e;
            problems.push(`hosts[${i}].${e.message}`);
        }
    });
    return problems;
}

/** Validates the whole stack config; throws StackConfigError listing every problem. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    const problems: string[] = [];
    let defaults: Record<string, unknown> = {};
    if (raw.defaults !== undefined) {
        if (!isPlainObject(raw.defaults)) {
            problems.push("defaults: expected an object of settings shared by all hosts");
        } else {
            const unknown = Object.keys(raw.defaults).filter((k) => !(SETTINGS_KEYS as string[]).includes(k));
            if (unknown.length > 0) problems.push(`defaults: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (defaults take only ${SETTINGS_KEYS.join(", ")})`);
            const layer = checkPartialSettings(raw.defaults, "defaults");
            problems.push(...layer);
            if (layer.length === 0) defaults = pickSettings(raw.defaults);
        }
    }
    if (!Array.isArray(raw.hosts)) {
        problems.push("hosts: expected a list of hosts (gpu-workers:hosts in the stack config)");
        throw new StackConfigError(problems);
    }
    const hosts: HostConfig[] = [];
    raw.hosts.forEach((entry, i) => {
        const parsed = parseHost(entry, i, defaults);
        problems.push(...parsed.problems);
        if (parsed.host) hosts.push(parsed.host);
    });
    if (problems.length === 0) problems.push(...crossHostProblems(hosts));
    if (problems.length > 0) throw new StackConfigError(problems);
    return hosts;
}
