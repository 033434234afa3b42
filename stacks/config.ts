/**
 * Validates the raw stack config and applies defaults. Every problem is collected and
 * reported together, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { z } from "zod";
import { DEFAULT_PARTITION_TABLE, GpuWorkerArgsError, isPlainObject, mergeSettings, normalizeFabricMode, partitionIdProblem, PartitionPlanError, partitionTable, planBoard, PlanError, planWorkerGpus, toolkitVersion, toolkitVersionProblems, WHOLE_VALUES, workDirAndDatasetsProblem } from "../components";
import { describe, formatPath, issuesOf } from "./issues";
import { NamespaceKey, unknownKeyProblems } from "./namespace-keys";
import { parseWeb, webHostProblems } from "./web-config";
import type { WebConfig } from "./web-schema";
import { boardSpecOf } from "./board-config";
import { BoardConfig, BoardFabric, boardFabricSchema, BoardRef, boardRefSchema, BoardWorkerConfig, BUILTIN_DEFAULTS, HostConfig, hostEntrySchema, Settings, settingsSchema, transportSchema } from "./schema";

export class StackConfigError extends Error {
    constructor(public readonly problems: string[]) {
        super(`invalid stack config (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` + problems.map((p) => `  - ${p}`).join("\n"));
        this.name = "StackConfigError";
    }
}

export interface RawStackConfig {
    defaults?: unknown;
    hosts?: unknown;
    /** `gpu-workers:web`: the stack's Concourse web node (optional). */
    web?: unknown;
    /** gpu-workers:allowNoHosts: true lets an empty hosts list through (up then deletes every worker). */
    allowNoHosts?: unknown;
    /**
     * Every key the stack config sets in the project's namespace (namespaceKeysOf): one that is
     * neither the four above nor a secret key the settings name, and looks like one of them or
     * holds a setting (an object or a list), is a mistake: a typo such as `gpu-workers:default`
     * would otherwise be ignored, and none of its settings apply. Other text is let be: a secret
     * of a host since removed from the stack, say.
     */
    keys?: NamespaceKey[];
}

/** The validated stack: the hosts that are workers on their own, the shared boards with their workers, and the web node when it has one. */
export interface StackConfig {
    hosts: HostConfig[];
    boards: BoardConfig[];
    web?: WebConfig;
}

/** Why an empty hosts list is refused, and the two ways on. */
export const NO_HOSTS_PROBLEM = "hosts: the list is empty, so pulumi up would delete every worker this stack made. " +
    "To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true";

const INVENTORY_KEYS = ["vendor", "gpus", "nvswitches", "tegra", "driverVersion", "cudaVersion"] as const;
const SETTINGS_KEYS = Object.keys(settingsSchema.shape) as (keyof typeof settingsSchema.shape)[];
const HOST_KEYS = new Set<string>(["name", "renamedFrom", "transport", ...INVENTORY_KEYS, ...SETTINGS_KEYS, "fabric", "board"]);
/** What a shared board itself may set: it is no worker, so worker settings belong on its workers. */
const BOARD_OWN_SETTINGS = new Set(["fabricManager", "verify"]);




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
function covered(path: string, reported: string[]): boolean {
    return reported.some((r) => r === "" || path === r || path.startsWith(`${r}.`) || path.startsWith(`${r}[`));
}

function pickSettings(layer: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(SETTINGS_KEYS.filter((k) => layer[k] !== undefined).map((k) => [k, layer[k]]));
}

interface ParsedHost {
    /** Name, transport and inventory, when they parsed (a board's worker has no inventory of its own). */
    entry?: Pick<HostConfig, "name" | "renamedFrom" | "transport"> & { inventory?: HostConfig["inventory"] };
    /** Settings with defaults applied and the reported bad fields left out, when the rest parsed. */
    settings?: Settings;
    /** Setting paths reported in the defaults or on this host. */
    reported: string[];
    problems: string[];
    /** A shared board's fabric, when given and valid. */
    fabric?: BoardFabric;
    /** A board's worker: which board, and what it asks for. */
    board?: BoardRef;
    /** Whether `board` was given (valid or not): the host is a board's worker. */
    boardWorker: boolean;
}

/** A board's worker: name and transport only (its GPUs come from its partition). */
const boardWorkerEntrySchema = z.object({ name: hostEntrySchema.shape.name, transport: transportSchema });

/** The fabricManager.mode the host or the defaults give, as written (before the settings are checked). */
function givenMode(raw: Record<string, unknown>, defaults: Layer): unknown {
    const own = isPlainObject(raw.fabricManager) ? raw.fabricManager.mode : undefined;
    return own ?? (isPlainObject(defaults.settings.fabricManager) ? defaults.settings.fabricManager.mode : undefined);
}

function parseHost(raw: unknown, i: number, defaults: Layer): ParsedHost {
    const prefix = `hosts[${i}]`;
    if (!isPlainObject(raw)) return { reported: [], problems: [`${prefix}: expected an object with name, transport and the GPU inventory`], boardWorker: false };
    const problems: string[] = [];
    const unknown = Object.keys(raw).filter((k) => !HOST_KEYS.has(k));
    if (unknown.length > 0) problems.push(`${prefix}: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
    const boardWorker = raw.board !== undefined;

    let entry: ParsedHost["entry"];
    if (boardWorker) {
        for (const key of INVENTORY_KEYS.filter((k) => raw[k] !== undefined)) problems.push(`${prefix}.${key}: a board's worker takes its GPUs from its partition; declare the GPUs on the board`);
        for (const key of ["selection", "fabricManager"].filter((k) => raw[k] !== undefined)) {
            problems.push(`${prefix}.${key}: ${key === "selection" ? "a board's worker gets every GPU of its partition" : "a board's worker runs no fabricmanager (the board's service VM does)"}`);
        }
        if (raw.fabric !== undefined) problems.push(`${prefix}.fabric: a board's worker is no board (fabric is for a host whose fabricManager.mode is service-vm)`);
        const parsed = boardWorkerEntrySchema.safeParse({ name: raw.name, transport: raw.transport }, { reportInput: true });
        if (parsed.success) entry = parsed.data;
        else problems.push(...issuesOf(parsed.error, prefix));
    } else {
        const parsed = hostEntrySchema.safeParse({
            name: raw.name,
            renamedFrom: raw.renamedFrom,
            transport: raw.transport,
            inventory: Object.fromEntries(INVENTORY_KEYS.filter((k) => raw[k] !== undefined).map((k) => [k, raw[k]])),
        }, { reportInput: true });
        if (parsed.success) entry = { name: parsed.data.name, ...(parsed.data.renamedFrom ? { renamedFrom: parsed.data.renamedFrom } : {}), transport: parsed.data.transport, inventory: parsed.data.inventory };
        else {
            // Inventory fields sit directly on the host, so drop the internal "inventory" segment.
            problems.push(...parsed.error.issues.map((issue) => {
                const path = issue.path[0] === "inventory" ? issue.path.slice(1) : issue.path;
                return `${formatPath(prefix, path)}: ${describe(issue)}`;
            }));
        }
    }
    let board: BoardRef | undefined;
    if (boardWorker) {
        const parsed = boardRefSchema.safeParse(raw.board, { reportInput: true });
        if (parsed.success) board = parsed.data;
        else problems.push(...issuesOf(parsed.error, `${prefix}.board`));
    }
    let fabric: BoardFabric | undefined;
    let table: BoardFabric["partitionTable"] | undefined;
    if (raw.fabric !== undefined && !boardWorker) {
        if (givenMode(raw, defaults) === "service-vm" || !isPlainObject(raw.fabric)) {
            const parsed = boardFabricSchema.safeParse(raw.fabric, { reportInput: true });
            if (parsed.success) fabric = parsed.data;
            else problems.push(...issuesOf(parsed.error, `${prefix}.fabric`));
        } else {
            // A host that runs fabricmanager itself has a board too: only its partition table.
            const others = Object.keys(raw.fabric).filter((k) => k !== "partitionTable");
            if (others.length > 0) problems.push(`${prefix}.fabric: ${others.join(", ")}: only for a shared board (fabricManager.mode: service-vm); a host that runs fabricmanager itself takes only partitionTable`);
            const parsed = boardFabricSchema.shape.partitionTable.safeParse(raw.fabric.partitionTable, { reportInput: true });
            if (parsed.success) table = parsed.data;
            else problems.push(...issuesOf(parsed.error, `${prefix}.fabric.partitionTable`));
        }
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
    if (settings.success) {
        problems.push(...roleProblems(raw, prefix, entry, settings.data, boardWorker));
        const s = settings.data;
        const workDir = covered("concourse.workDir", reported) || covered("datasets.root", reported) ? undefined : workDirAndDatasetsProblem(s.concourse.workDir, s.datasets.root);
        if (workDir) problems.push(`${prefix}.concourse.workDir: ${workDir}`);
        // Where fabricmanager runs on the host (elsewhere the GPU plan refuses partitions outright).
        if (runsFabricManager(entry, s) && !boardWorker && !covered("fabricManager.partitions", reported) && (table !== undefined || raw.fabric === undefined)) {
            const known = partitionTable(table ?? DEFAULT_PARTITION_TABLE, entry?.name ?? prefix);
            s.fabricManager.partitions.forEach((id, j) => {
                const problem = partitionIdProblem(known, id);
                if (problem) problems.push(`${prefix}.fabricManager.partitions[${j}]: ${problem}${table === undefined ? " (the default table; another board declares its own as fabric.partitionTable)" : ""}`);
            });
        }
    }
    return {
        entry,
        settings: settings.success ? settings.data : undefined,
        reported,
        problems,
        fabric,
        board,
        boardWorker,
    };
}

/** Whether fabricmanager runs on the host itself (where its partitions are activated). */
function runsFabricManager(entry: ParsedHost["entry"], settings: Settings): boolean {
    return (entry?.inventory?.nvswitches ?? 0) > 0 && ["host", "auto"].includes(normalizeFabricMode(settings.fabricManager.mode));
}

function isBoard(settings: Settings | undefined): boolean {
    return settings !== undefined && normalizeFabricMode(settings.fabricManager.mode) === "service-vm";
}

/** What a shared board, a board's worker and any other host may and must have. */
function roleProblems(raw: Record<string, unknown>, prefix: string, entry: ParsedHost["entry"], settings: Settings, boardWorker: boolean): string[] {
    const problems: string[] = [];
    const lxd = entry && "lxd" in entry.transport ? entry.transport.lxd : undefined;
    if (raw.renamedFrom !== undefined && (boardWorker || isBoard(settings))) {
        problems.push(`${prefix}.renamedFrom: only for a host that is a worker of its own (or the web); a shared board and its workers keep their names`);
    }
    if (boardWorker) {
        if (entry && lxd?.type !== "virtual-machine") problems.push(`${prefix}.transport: a board's worker is an LXD virtual machine on the board (lxd: {type: virtual-machine, network, address, ...}): its GPUs are whole PCI devices`);
        return problems;
    }
    if (lxd?.type === "virtual-machine") problems.push(`${prefix}.transport.lxd.type: virtual-machine is for the workers of a shared board (board: {name, gpus}); other LXD workers are containers`);
    if (!isBoard(settings)) {
        const onlyTable = isPlainObject(raw.fabric) && Object.keys(raw.fabric).every((k) => k === "partitionTable");
        if (onlyTable && !runsFabricManager(entry, settings)) problems.push(`${prefix}.fabric: only for a board: a shared one (fabricManager.mode: service-vm), or one that runs fabricmanager itself (NVSwitches declared, fabricManager.mode host or auto)`);
        return problems;
    }
    if (entry && !("ssh" in entry.transport)) problems.push(`${prefix}.transport: a shared board is reached over SSH (its libvirt runs the fabricmanager service VM; its workers are LXD VMs)`);
    if (raw.fabric === undefined) problems.push(`${prefix}.fabric: required for fabricManager.mode service-vm (the partition table, the NVSwitches' PCI addresses and the service VM)`);
    for (const key of SETTINGS_KEYS.filter((k) => raw[k] !== undefined && !BOARD_OWN_SETTINGS.has(k))) {
        problems.push(`${prefix}.${key}: a shared board is no worker itself; give worker settings to its workers (or under defaults)`);
    }
    if (settings.fabricManager.partitions.length > 0) problems.push(`${prefix}.fabricManager.partitions: a board's partitions come from its workers (board: {name, gpus} or {name, partition} on each)`);
    return problems;
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
    problems.push(...sameMachineProblems(hosts), ...renameProblems(hosts));
    const ports = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        const lxd = entry?.transport.lxd;
        if (!lxd) return;
        const key = `${lxd.server.socket ?? lxd.server.url ?? "local"} ${lxd.sshAddress}:${lxd.sshPort}`;
        const first = ports.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].transport.lxd.sshPort: ${lxd.sshPort} is already used by hosts[${first}] on the same LXD server`);
        else ports.set(key, i);
    });
    hosts.forEach(({ entry, settings: s, reported, boardWorker }, i) => {
        // Boards and their workers are planned together below.
        if (!entry?.inventory || !s || boardWorker || isBoard(s)) return;
        try {
            planWorkerGpus(entry.inventory, { selection: s.selection, cdi: s.toolkit.cdi, fabricManager: s.fabricManager, extraTags: s.concourse.tags, driverPin: s.driver.version });
        } catch (e) {
            if (!(e instanceof PlanError)) throw e;
            // A dropped bad field stands in for the built-in default here (fabricManager.mode "of" became
            // auto), so a plan error about that setting would be a follow-on, not the user's mistake.
            const setting = e.path.split(".")[0];
            if (!reported.some((r) => r === "" || r.split(/[.[]/)[0] === setting)) problems.push(`hosts[${i}].${e.message}`);
        }
    });
    problems.push(...boardProblems(hosts));
    return problems;
}

/**
 * Two hosts of the stack on one machine (the same SSH address and port, or the same LXD instance)
 * would each write the other's worker over, and records on the host would keep either's delete
 * from undoing anything: refused before anything runs. (The web may share a worker's machine.)
 */
function sameMachineProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const seen = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        if (!entry) return;
        const { ssh, lxd } = entry.transport;
        const [key, what] = ssh
            ? [`ssh ${ssh.host.toLowerCase()}:${ssh.port}`, `transport.ssh.host: ${ssh.host}:${ssh.port}`]
            : [`lxd ${lxd!.server.url ?? lxd!.server.socket ?? "local"} ${lxd!.instance}`, `transport.lxd.instance: ${lxd!.instance}`];
        const first = seen.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].${what} is the machine of hosts[${first}] too: one machine is one host of the stack`);
        else seen.set(key, i);
    });
    return problems;
}

/** A rename names a host that is gone from the stack (not this one's own name, nor another's now). */
function renameProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const names = new Map(hosts.flatMap(({ entry }, i) => (entry ? [[entry.name, i] as const] : [])));
    const claimed = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        const old = entry?.renamedFrom;
        if (!old) return;
        const at = names.get(old);
        if (at === i) problems.push(`hosts[${i}].renamedFrom: ${old} is this host's name already (drop renamedFrom once the renamed stack is up)`);
        else if (at !== undefined) problems.push(`hosts[${i}].renamedFrom: ${old} is the name of hosts[${at}]; a host renamed from it must be gone from the stack`);
        const first = claimed.get(old);
        if (first !== undefined) problems.push(`hosts[${i}].renamedFrom: hosts[${first}] was renamed from ${old} too`);
        else claimed.set(old, i);
    });
    return problems;
}

/**
 * The toolkit version against its vendor's published form and the CVE floor: only here is the
 * vendor known (a version in the defaults may suit one vendor's hosts and not another's).
 */
function toolkitProblems(hosts: ParsedHost[]): string[] {
    return hosts.flatMap(({ entry, settings: s, reported }, i) => {
        if (!entry?.inventory || !s || entry.inventory.vendor === "none" || covered("toolkit.version", reported)) return [];
        const version = toolkitVersion(entry.inventory.vendor, s.toolkit.version);
        if (version === "preinstalled") return [];
        return toolkitVersionProblems(entry.inventory.vendor, version).map((p) => `hosts[${i}].toolkit.version: ${p}`);
    });
}

/** The boards with their workers, from hosts that parsed whole; each board's workers in stack order. */
function collectBoards(hosts: ParsedHost[]): { board: BoardConfig; at: number; workersAt: number[] }[] {
    return hosts.flatMap((h, at) => {
        if (!h.entry?.inventory || !h.settings || !isBoard(h.settings) || !h.fabric || !h.entry.transport.ssh) return [];
        const workersAt = hosts.map((w, j) => (w.board?.name === h.entry!.name ? j : -1)).filter((j) => j >= 0);
        const workers: BoardWorkerConfig[] = workersAt.flatMap((j) => {
            const w = hosts[j];
            return w.entry && w.settings && w.board ? [{ ...w.settings, name: w.entry.name, transport: w.entry.transport, board: w.board }] : [];
        });
        if (workers.length !== workersAt.length) return [];
        return [{ board: { name: h.entry.name, transport: { ssh: h.entry.transport.ssh }, inventory: h.entry.inventory, verify: h.settings.verify, fabric: h.fabric, workers }, at, workersAt }];
    });
}

/** Each worker's board exists and is one; each board has workers; the planner can meet every board's workers. */
function boardProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const byName = new Map(hosts.flatMap((h, i) => (h.entry ? [[h.entry.name, { h, i }] as const] : [])));
    hosts.forEach((w, i) => {
        if (!w.board) return;
        const target = byName.get(w.board.name);
        if (!target) problems.push(`hosts[${i}].board.name: there is no host ${w.board.name}`);
        else if (target.h.settings && !isBoard(target.h.settings)) problems.push(`hosts[${i}].board.name: ${w.board.name} (hosts[${target.i}]) is not a shared board (its fabricManager.mode is ${target.h.settings.fabricManager.mode}, not service-vm)`);
    });
    hosts.forEach((h, i) => {
        if (!h.entry || !isBoard(h.settings) || h.boardWorker) return;
        // A worker whose board: did not parse may well mean this board; it is reported already.
        if (!hosts.some((w) => w.boardWorker && (w.board === undefined || w.board.name === h.entry!.name))) {
            problems.push(`hosts[${i}]: no worker uses board ${h.entry.name} (give a worker board: {name: ${h.entry.name}, gpus: N})`);
        }
    });
    for (const { board, at, workersAt } of collectBoards(hosts)) {
        try {
            planBoard(boardSpecOf(board));
        } catch (e) {
            // A request the planner cannot meet is the worker's (or, as a whole, the board's); any other
            // planning error (a worker's GPU plan, a GPU without a PCI address) is the board's.
            // A worker's own settings (its TSA, say) are reported at their own paths.
            if (e instanceof GpuWorkerArgsError) continue;
            if (e instanceof PartitionPlanError && e.request !== undefined) problems.push(`hosts[${workersAt[e.request]}].board: ${e.message}`);
            else if (e instanceof Error) problems.push(`hosts[${at}] (board ${board.name}): ${e.message}`);
            else throw e;
        }
    }
    return problems;
}

/** The hosts that are workers on their own (boards and their workers: parseStack). Throws like parseStack. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    return parseStack(raw).hosts;
}

/** Validates the whole stack config, web and boards included; throws StackConfigError listing every problem. */
export function parseStack(raw: RawStackConfig): StackConfig {
    const problems: string[] = raw.keys === undefined ? [] : unknownKeyProblems(raw.keys, [raw.defaults, raw.hosts, raw.web]);
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
    problems.push(...toolkitProblems(hosts));
    const release = mergeSettings(BUILTIN_DEFAULTS.concourse, defaults.settings.concourse) as { version: string; binary?: unknown };
    const web = raw.web === undefined ? undefined : parseWeb(raw.web, release);
    if (web) problems.push(...web.problems);
    // Shared boards are no workers; their workers take the web's TSA like any other.
    const whole = hosts.map(({ entry, settings }) => (entry?.inventory && settings && !isBoard(settings) ? { ...settings, ...entry, inventory: entry.inventory } : undefined));
    if (!web || web.web) problems.push(...webHostProblems(web?.web, hosts.map((h, i) => ({ config: whole[i], reported: (path: string) => covered(path, h.reported) }))));
    if (problems.length > 0) throw new StackConfigError(problems);
    // No problems means every host parsed whole.
    return {
        hosts: hosts.flatMap(({ entry, settings, boardWorker }) => (entry?.inventory && settings && !boardWorker && !isBoard(settings) ? [{ ...settings, ...entry, inventory: entry.inventory }] : [])),
        boards: collectBoards(hosts).map(({ board }) => board),
        ...(web?.web ? { web: web.web } : {}),
    };
}
