/**
 * One host of the stack config: its entry (name, transport, inventory), its settings layered
 * over the defaults, and what its role allows (a worker of its own, a shared board, a board's
 * worker). Each problem is collected with its path (`hosts[2].gpus[0].index: ...`).
 */
import { z } from "zod";
import {
    DEFAULT_PARTITION_TABLE,
    isPlainObject,
    mergeSettings,
    normalizeFabricMode,
    partitionIdProblem,
    partitionTable,
    toolkitVersion,
    toolkitVersionProblems,
    WHOLE_VALUES,
    workDirAndDatasetsProblem,
} from "../components/program";
import { describe, formatPath, issuesOf } from "./issues";
import {
    BoardFabric,
    boardFabricSchema,
    BoardRef,
    boardRefSchema,
    BUILTIN_DEFAULTS,
    HostConfig,
    hostEntrySchema,
    Settings,
    settingsSchema,
    transportSchema,
} from "./schema";

const INVENTORY_KEYS = ["vendor", "gpus", "nvswitches", "tegra", "driverVersion", "cudaVersion"] as const;
export const SETTINGS_KEYS = Object.keys(settingsSchema.shape) as (keyof typeof settingsSchema.shape)[];
const HOST_KEYS = new Set<string>(["name", "renamedFrom", "transport", ...INVENTORY_KEYS, ...SETTINGS_KEYS, "fabric", "board"]);
/** What a shared board itself may set: it is no worker, so worker settings belong on its workers. */
const BOARD_OWN_SETTINGS = new Set(["fabricManager", "verify"]);

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

export interface ParsedHost {
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

export function parseHost(raw: unknown, i: number, defaults: Layer): ParsedHost {
    const prefix = `hosts[${i}]`;
    if (!isPlainObject(raw))
        return { reported: [], problems: [`${prefix}: expected an object with name, transport and the GPU inventory`], boardWorker: false };
    const problems: string[] = [];
    const unknown = Object.keys(raw).filter((k) => !HOST_KEYS.has(k));
    if (unknown.length > 0) problems.push(`${prefix}: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
    const boardWorker = raw.board !== undefined;

    let entry: ParsedHost["entry"];
    if (boardWorker) {
        for (const key of INVENTORY_KEYS.filter((k) => raw[k] !== undefined))
            problems.push(`${prefix}.${key}: a board's worker takes its GPUs from its partition; declare the GPUs on the board`);
        for (const key of ["selection", "fabricManager"].filter((k) => raw[k] !== undefined)) {
            problems.push(
                `${prefix}.${key}: ${key === "selection" ? "a board's worker gets every GPU of its partition" : "a board's worker runs no fabricmanager (the board's service VM does)"}`,
            );
        }
        if (raw.fabric !== undefined)
            problems.push(`${prefix}.fabric: a board's worker is no board (fabric is for a host whose fabricManager.mode is service-vm)`);
        const parsed = boardWorkerEntrySchema.safeParse({ name: raw.name, transport: raw.transport }, { reportInput: true });
        if (parsed.success) entry = parsed.data;
        else problems.push(...issuesOf(parsed.error, prefix));
    } else {
        const parsed = hostEntrySchema.safeParse(
            {
                name: raw.name,
                renamedFrom: raw.renamedFrom,
                transport: raw.transport,
                inventory: Object.fromEntries(INVENTORY_KEYS.filter((k) => raw[k] !== undefined).map((k) => [k, raw[k]])),
            },
            { reportInput: true },
        );
        if (parsed.success)
            entry = {
                name: parsed.data.name,
                ...(parsed.data.renamedFrom ? { renamedFrom: parsed.data.renamedFrom } : {}),
                transport: parsed.data.transport,
                inventory: parsed.data.inventory,
            };
        else {
            // Inventory fields sit directly on the host, so drop the internal "inventory" segment.
            problems.push(
                ...parsed.error.issues.map((issue) => {
                    const path = issue.path[0] === "inventory" ? issue.path.slice(1) : issue.path;
                    return `${formatPath(prefix, path)}: ${describe(issue)}`;
                }),
            );
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
            if (others.length > 0)
                problems.push(
                    `${prefix}.fabric: ${others.join(", ")}: only for a shared board (fabricManager.mode: service-vm); a host that runs fabricmanager itself takes only partitionTable`,
                );
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
        const workDir =
            covered("concourse.workDir", reported) || covered("datasets.root", reported)
                ? undefined
                : workDirAndDatasetsProblem(s.concourse.workDir, s.datasets.root);
        if (workDir) problems.push(`${prefix}.concourse.workDir: ${workDir}`);
        // Where fabricmanager runs on the host (elsewhere the GPU plan refuses partitions outright).
        if (
            runsFabricManager(entry, s) &&
            !boardWorker &&
            !covered("fabricManager.partitions", reported) &&
            (table !== undefined || raw.fabric === undefined)
        ) {
            const known = partitionTable(table ?? DEFAULT_PARTITION_TABLE, entry?.name ?? prefix);
            s.fabricManager.partitions.forEach((id, j) => {
                const problem = partitionIdProblem(known, id);
                if (problem)
                    problems.push(
                        `${prefix}.fabricManager.partitions[${j}]: ${problem}${table === undefined ? " (the default table; another board declares its own as fabric.partitionTable)" : ""}`,
                    );
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

export function isBoard(settings: Settings | undefined): boolean {
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
        if (entry && lxd?.type !== "virtual-machine")
            problems.push(
                `${prefix}.transport: a board's worker is an LXD virtual machine on the board (lxd: {type: virtual-machine, network, address, ...}): its GPUs are whole PCI devices`,
            );
        return problems;
    }
    if (lxd?.type === "virtual-machine")
        problems.push(
            `${prefix}.transport.lxd.type: virtual-machine is for the workers of a shared board (board: {name, gpus}); other LXD workers are containers`,
        );
    if (!isBoard(settings)) {
        const onlyTable = isPlainObject(raw.fabric) && Object.keys(raw.fabric).every((k) => k === "partitionTable");
        if (onlyTable && !runsFabricManager(entry, settings))
            problems.push(
                `${prefix}.fabric: only for a board: a shared one (fabricManager.mode: service-vm), or one that runs fabricmanager itself (NVSwitches declared, fabricManager.mode host or auto)`,
            );
        return problems;
    }
    if (entry && !("ssh" in entry.transport))
        problems.push(`${prefix}.transport: a shared board is reached over SSH (its libvirt runs the fabricmanager service VM; its workers are LXD VMs)`);
    if (raw.fabric === undefined)
        problems.push(`${prefix}.fabric: required for fabricManager.mode service-vm (the partition table, the NVSwitches' PCI addresses and the service VM)`);
    for (const key of SETTINGS_KEYS.filter((k) => raw[k] !== undefined && !BOARD_OWN_SETTINGS.has(k))) {
        problems.push(`${prefix}.${key}: a shared board is no worker itself; give worker settings to its workers (or under defaults)`);
    }
    if (settings.fabricManager.partitions.length > 0)
        problems.push(`${prefix}.fabricManager.partitions: a board's partitions come from its workers (board: {name, gpus} or {name, partition} on each)`);
    return problems;
}

/**
 * The toolkit version against its vendor's published form and the CVE floor: only here is the
 * vendor known (a version in the defaults may suit one vendor's hosts and not another's).
 */
export function toolkitProblems(hosts: ParsedHost[]): string[] {
    return hosts.flatMap(({ entry, settings: s, reported }, i) => {
        if (!entry?.inventory || !s || entry.inventory.vendor === "none" || covered("toolkit.version", reported)) return [];
        const version = toolkitVersion(entry.inventory.vendor, s.toolkit.version);
        if (version === "preinstalled") return [];
        return toolkitVersionProblems(entry.inventory.vendor, version).map((p) => `hosts[${i}].toolkit.version: ${p}`);
    });
}
