/**
 * Validates the raw stack config and applies defaults. Every problem is collected and
 * reported together, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { z } from "zod";
import { PlanError, planWorkerGpus } from "../components/lib/gpu/plan";
import { isPlainObject, mergeSettings } from "../components/lib/plan/settings";
import { BUILTIN_DEFAULTS, HostConfig, hostEntrySchema, Settings, settingsSchema } from "./schema";

export class StackConfigError extends Error {
    constructor(public readonly problems: string[]) {
        super(`invalid stack config (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` + problems.map((p) => `  - ${p}`).join("\n"));
        this.name = "StackConfigError";
    }
}

export interface RawStackConfig {
    defaults?: unknown;
    hosts?: unknown;
    /** gpu-workers:allowNoHosts: true lets an empty hosts list through (up then deletes every worker). */
    allowNoHosts?: unknown;
}

/** Why an empty hosts list is refused, and the two ways on. */
export const NO_HOSTS_PROBLEM = "hosts: the list is empty, so pulumi up would delete every worker this stack made. " +
    "To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true";

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



/** One layer of settings (the stack's defaults or one host's own) after checking it. */
interface Layer {
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
function checkLayer(layer: Record<string, unknown>, prefix: string): Layer {
    const out: Layer = { settings: pickSettings(layer), reported: [], problems: [] };
    for (const key of SETTINGS_KEYS) {
        if (layer[key] === undefined) continue;
        const field = settingsSchema.shape[key];
        const schema = field instanceof z.ZodObject ? field.partial() : field;
        const result = (schema as z.ZodType).safeParse(layer[key], { reportInput: true });
        if (result.success) continue;
        out.problems.push(...issuesOf(result.error, formatPath(prefix, [key])));
        for (const issue of result.error.issues) {
            // Lists are replaced, not merged, so a bad item drops the whole list.
            const cut = issue.path.findIndex((part) => typeof part === "number");
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
function covered(path: string, reported: string[]): boolean {
    return reported.some((r) => r === "" || path === r || path.startsWith(`${r}.`) || path.startsWith(`${r}[`));
}

function pickSettings(layer: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(SETTINGS_KEYS.filter((k) => layer[k] !== undefined).map((k) => [k, layer[k]]));
}

interface ParsedHost {
    /** Name, transport and inventory, when they parsed. */
    entry?: Pick<HostConfig, "name" | "transport" | "inventory">;
    /** Settings with defaults applied and the reported bad fields left out, when the rest parsed. */
    settings?: Settings;
    /** Setting paths reported in the defaults or on this host. */
    reported: string[];
    problems: string[];
}

function parseHost(raw: unknown, i: number, defaults: Layer): ParsedHost {
    const prefix = `hosts[${i}]`;
    if (!isPlainObject(raw)) return { reported: [], problems: [`${prefix}: expected an object with name, transport and the GPU inventory`] };
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

    const own = checkLayer(raw, prefix);
    problems.push(...own.problems);
    const reported = [...defaults.reported, ...own.reported];
    const merged = mergeSettings(mergeSettings(BUILTIN_DEFAULTS, defaults.settings), own.settings);
    const settings = settingsSchema.safeParse(merged, { reportInput: true });
    if (!settings.success) {
        for (const issue of settings.error.issues) {
            const path = formatPath("", issue.path);
            // A field dropped for being bad is already reported; don't also call it missing.
            if (covered(path, reported)) continue;
            problems.push(`${prefix}.${path}: ${describe(issue)}${issue.input === undefined ? " — set it under defaults or on this host" : ""}`);
        }
    }
    return {
        entry: entry.success ? { name: entry.data.name, transport: entry.data.transport, inventory: entry.data.inventory } : undefined,
        settings: settings.success ? settings.data : undefined,
        reported,
        problems,
    };
}

/** Checks across hosts, and each host's GPU plan, on whatever parsed (a host with other problems included). */
function crossHostProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const seen = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        if (!entry) return;
        const first = seen.get(entry.name);
        if (first !== undefined) problems.push(`hosts[${i}].name: ${entry.name} is already used by hosts[${first}]`);
        else seen.set(entry.name, i);
    });
    const ports = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        if (!entry || !("lxd" in entry.transport)) return;
        const { lxd } = entry.transport;
        const key = `${lxd.server.socket ?? lxd.server.url ?? "local"} ${lxd.sshAddress}:${lxd.sshPort}`;
        const first = ports.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].transport.lxd.sshPort: ${lxd.sshPort} is already used by hosts[${first}] on the same LXD server`);
        else ports.set(key, i);
    });
    hosts.forEach(({ entry, settings: s, reported }, i) => {
        if (!entry || !s) return;
        try {
            planWorkerGpus(entry.inventory, { selection: s.selection, cdi: s.toolkit.cdi, fabricManager: s.fabricManager, extraTags: s.concourse.tags });
        } catch (e) {
            if (!(e instanceof PlanError)) throw e;
            // A dropped bad field stands in for the built-in default here (fabricManager.mode "of" became
            // auto), so a plan error about that setting would be a follow-on, not the user's mistake.
            const setting = e.path.split(".")[0];
            if (!reported.some((r) => r === "" || r.split(/[.[]/)[0] === setting)) problems.push(`hosts[${i}].${e.message}`);
        }
    });
    return problems;
}

/** Validates the whole stack config; throws StackConfigError listing every problem. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    const problems: string[] = [];
    let defaults: Layer = { settings: {}, reported: [], problems: [] };
    if (raw.defaults !== undefined) {
        if (!isPlainObject(raw.defaults)) {
            // Hosts can't tell what they were meant to inherit, so don't call their settings missing.
            defaults = { settings: {}, reported: [""], problems: ["defaults: expected an object of settings shared by all hosts"] };
        } else {
            const unknown = Object.keys(raw.defaults).filter((k) => !(SETTINGS_KEYS as string[]).includes(k));
            if (unknown.length > 0) problems.push(`defaults: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (defaults take only ${SETTINGS_KEYS.join(", ")})`);
            defaults = checkLayer(raw.defaults, "defaults");
        }
        problems.push(...defaults.problems);
    }
    if (raw.allowNoHosts !== undefined && typeof raw.allowNoHosts !== "boolean") {
        problems.push("allowNoHosts: expected true or false (gpu-workers:allowNoHosts in the stack config)");
    }
    if (!Array.isArray(raw.hosts)) {
        problems.push("hosts: expected a list of hosts (gpu-workers:hosts in the stack config)");
        throw new StackConfigError(problems);
    }
    if (raw.hosts.length === 0 && raw.allowNoHosts !== true) problems.push(NO_HOSTS_PROBLEM);
    const hosts = raw.hosts.map((entry, i) => parseHost(entry, i, defaults));
    for (const host of hosts) problems.push(...host.problems);
    problems.push(...crossHostProblems(hosts));
    if (problems.length > 0) throw new StackConfigError(problems);
    // No problems means every host parsed whole.
    return hosts.flatMap(({ entry, settings }) => (entry && settings ? [{ ...settings, ...entry }] : []));
}
