/**
 * One host of the stack config: its entry (name, transport, inventory), its settings layered
 * over the defaults, and what its role allows (a worker of its own, a shared board, a board's
 * worker). Each problem is collected with its path (`hosts[2].gpus[0].index: ...`).
 */
import { z } from "zod";
import {
    DEFAULT_PARTITION_TABLE,
    isPlainObject,
    normalizeFabricMode,
    parseSettings,
    partitionIdProblem,
    partitionTable,
    toolkitVersion,
    jobMappingAndFoldersProblem,
    toolkitVersionProblems,
    workDirAndDatasetsProblem,
} from "../../components/program";
import { describe, formatPath, issuesOf } from "./issues";
import { checkLayer, covered, Layer, SETTINGS_KEYS } from "./layer";
import { BoardFabric, boardFabricSchema, BoardRef, boardRefSchema, HostConfig, hostEntrySchema, Settings, settingsSchema, transportSchema } from "./schema";

const INVENTORY_KEYS = ["vendor", "gpus", "nvswitches", "tegra", "driverVersion", "cudaVersion"] as const;
const HOST_KEYS = new Set<string>(["name", "renamedFrom", "rack", "transport", ...INVENTORY_KEYS, ...SETTINGS_KEYS, "fabric", "board"]);
/** What a shared board itself may set: it is no worker, so worker settings belong on its workers. */
const BOARD_OWN_SETTINGS = new Set(["fabricManager", "verify"]);

/** Name, transport and inventory (a board's worker has no inventory of its own). */
type HostEntry = Pick<HostConfig, "name" | "renamedFrom" | "transport"> & { inventory?: HostConfig["inventory"] };

export interface ParsedHost {
    /** Name, transport and inventory, when they parsed. */
    entry?: HostEntry;
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

/** What one part of a host parsed to, when it did, and its problems. */
interface Part<T> {
    value?: T;
    problems: string[];
}

/** A board's worker: name and transport only (its GPUs come from its partition). */
const boardWorkerEntrySchema = z.object({ name: hostEntrySchema.shape.name, transport: transportSchema });

export function parseHost(raw: unknown, i: number, defaults: Layer): ParsedHost {
    const prefix = `hosts[${i}]`;
    if (!isPlainObject(raw))
        return { reported: [], problems: [`${prefix}: expected an object with name, transport and the GPU inventory`], boardWorker: false };
    const boardWorker = raw.board !== undefined;
    const entry = boardWorker ? boardWorkerEntry(raw, prefix) : hostEntry(raw, prefix);
    const board: Part<BoardRef> = boardWorker ? boardRef(raw.board, prefix) : { problems: [] };
    const fabric: Part<FabricGiven> = raw.fabric !== undefined && !boardWorker ? hostFabric(raw, prefix, defaults) : { problems: [] };
    const own = checkLayer(raw, prefix);
    const reported = [...defaults.reported, ...own.reported];
    const settings = hostSettings(prefix, defaults, own, reported);
    const given: GivenHost = { raw, prefix, entry: entry.value, boardWorker, table: fabric.value?.table, reported };
    return {
        entry: entry.value,
        settings: settings.value,
        reported,
        problems: [
            ...unknownKeyProblems(raw, prefix),
            ...entry.problems,
            ...board.problems,
            ...fabric.problems,
            ...own.problems,
            ...settings.problems,
            ...(settings.value ? settingsProblems(given, settings.value) : []),
        ],
        fabric: fabric.value?.fabric,
        board: board.value,
        boardWorker,
    };
}

function unknownKeyProblems(raw: Record<string, unknown>, prefix: string): string[] {
    const unknown = Object.keys(raw).filter((k) => !HOST_KEYS.has(k));
    return unknown.length > 0 ? [`${prefix}: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`] : [];
}

/** A board's worker's name and transport, and what it may not set (its GPUs and fabric are its board's). */
function boardWorkerEntry(raw: Record<string, unknown>, prefix: string): Part<HostEntry> {
    const problems: string[] = [];
    for (const key of INVENTORY_KEYS.filter((k) => raw[k] !== undefined))
        problems.push(`${prefix}.${key}: a board's worker takes its GPUs from its partition; declare the GPUs on the board`);
    for (const key of ["selection", "fabricManager"].filter((k) => raw[k] !== undefined)) {
        problems.push(
            `${prefix}.${key}: ${key === "selection" ? "a board's worker gets every GPU of its partition" : "a board's worker runs no fabricmanager (the board's service VM does)"}`,
        );
    }
    if (raw.fabric !== undefined) problems.push(`${prefix}.fabric: a board's worker is no board (fabric is for a host whose fabricManager.mode is service-vm)`);
    const parsed = boardWorkerEntrySchema.safeParse({ name: raw.name, transport: raw.transport }, { reportInput: true });
    if (parsed.success) return { value: parsed.data, problems };
    return { problems: [...problems, ...issuesOf(parsed.error, prefix)] };
}

/** Any other host's name, transport and inventory (the inventory's fields sit on the host itself). */
function hostEntry(raw: Record<string, unknown>, prefix: string): Part<HostEntry> {
    const parsed = hostEntrySchema.safeParse(
        {
            name: raw.name,
            renamedFrom: raw.renamedFrom,
            transport: raw.transport,
            inventory: Object.fromEntries(INVENTORY_KEYS.filter((k) => raw[k] !== undefined).map((k) => [k, raw[k]])),
        },
        { reportInput: true },
    );
    if (parsed.success) {
        const { name, renamedFrom, transport, inventory } = parsed.data;
        return { value: { name, ...(renamedFrom ? { renamedFrom } : {}), transport, inventory }, problems: [] };
    }
    // Inventory fields sit directly on the host, so drop the internal "inventory" segment.
    return {
        problems: parsed.error.issues.map((issue) => {
            const path = issue.path[0] === "inventory" ? issue.path.slice(1) : issue.path;
            return `${formatPath(prefix, path)}: ${describe(issue)}`;
        }),
    };
}

function boardRef(raw: unknown, prefix: string): Part<BoardRef> {
    const parsed = boardRefSchema.safeParse(raw, { reportInput: true });
    return parsed.success ? { value: parsed.data, problems: [] } : { problems: issuesOf(parsed.error, `${prefix}.board`) };
}

/** A host's fabric: a shared board's whole one, or only the partition table of a host that runs fabricmanager itself. */
interface FabricGiven {
    fabric?: BoardFabric;
    table?: BoardFabric["partitionTable"];
}

/** The fabricManager.mode the host or the defaults give, as written (before the settings are checked). */
function givenMode(raw: Record<string, unknown>, defaults: Layer): unknown {
    const own = isPlainObject(raw.fabricManager) ? raw.fabricManager.mode : undefined;
    return own ?? (isPlainObject(defaults.settings.fabricManager) ? defaults.settings.fabricManager.mode : undefined);
}

function hostFabric(raw: Record<string, unknown>, prefix: string, defaults: Layer): Part<FabricGiven> {
    if (givenMode(raw, defaults) === "service-vm" || !isPlainObject(raw.fabric)) {
        const parsed = boardFabricSchema.safeParse(raw.fabric, { reportInput: true });
        return parsed.success ? { value: { fabric: parsed.data }, problems: [] } : { problems: issuesOf(parsed.error, `${prefix}.fabric`) };
    }
    // A host that runs fabricmanager itself has a board too: only its partition table.
    const problems: string[] = [];
    const others = Object.keys(raw.fabric).filter((k) => k !== "partitionTable");
    if (others.length > 0)
        problems.push(
            `${prefix}.fabric: ${others.join(", ")}: only for a shared board (fabricManager.mode: service-vm); a host that runs fabricmanager itself takes only partitionTable`,
        );
    const parsed = boardFabricSchema.shape.partitionTable.safeParse(raw.fabric.partitionTable, { reportInput: true });
    if (parsed.success) return { value: { table: parsed.data }, problems };
    return { problems: [...problems, ...issuesOf(parsed.error, `${prefix}.fabric.partitionTable`)] };
}

/** The host's settings: the built-in defaults, then the stack's, then its own; what is still missing or wrong. */
function hostSettings(prefix: string, defaults: Layer, own: Layer, reported: string[]): Part<Settings> {
    // The built-in defaults (BUILTIN_DEFAULTS, the components' own) are the first layer parseSettings lays these over.
    const settings = parseSettings([defaults.settings, own.settings], settingsSchema);
    if (settings.success) return { value: settings.data, problems: [] };
    return {
        problems: settings.error.issues.flatMap((issue) => {
            const path = formatPath("", issue.path);
            // A field dropped for being bad is already reported; don't also call it missing.
            if (covered(path, reported)) return [];
            return [`${prefix}.${path}: ${describe(issue)}${issue.input === undefined ? " — set it under defaults or on this host" : ""}`];
        }),
    };
}

/** A host as given, with what of it parsed: what the checks of its whole settings look at. */
interface GivenHost {
    raw: Record<string, unknown>;
    prefix: string;
    entry?: HostEntry;
    boardWorker: boolean;
    /** The partition table of a host that runs fabricmanager itself, when given and valid. */
    table?: BoardFabric["partitionTable"];
    reported: string[];
}

/** What the host's whole settings allow: its role, its work folder, the partitions it activates. */
function settingsProblems(host: GivenHost, settings: Settings): string[] {
    const { raw, prefix, entry, boardWorker, table, reported } = host;
    const problems = roleProblems(raw, prefix, entry, settings, boardWorker);
    const workDir =
        covered("concourse.workDir", reported) || covered("datasets.root", reported)
            ? undefined
            : workDirAndDatasetsProblem(settings.concourse.workDir, settings.datasets.root);
    if (workDir) problems.push(`${prefix}.concourse.workDir: ${workDir}`);
    const mapping = settings.metrics.dcgmJobMappingDir;
    const mappingProblem =
        mapping === undefined || ["metrics.dcgmJobMappingDir", "concourse.workDir", "datasets.root"].some((p) => covered(p, reported))
            ? undefined
            : jobMappingAndFoldersProblem(mapping, settings.datasets.root, settings.concourse.workDir);
    if (mappingProblem) problems.push(`${prefix}.metrics.dcgmJobMappingDir: ${mappingProblem}`);
    // Where fabricmanager runs on the host (elsewhere the GPU plan refuses partitions outright).
    if (
        runsFabricManager(entry, settings) &&
        !boardWorker &&
        !covered("fabricManager.partitions", reported) &&
        (table !== undefined || raw.fabric === undefined)
    )
        problems.push(...partitionProblems(prefix, entry, settings, table));
    return problems;
}

/** The partitions a host that runs fabricmanager itself activates, against its board's table (or the default one). */
function partitionProblems(prefix: string, entry: HostEntry | undefined, settings: Settings, table: BoardFabric["partitionTable"] | undefined): string[] {
    const known = partitionTable(table ?? DEFAULT_PARTITION_TABLE, entry?.name ?? prefix);
    return settings.fabricManager.partitions.flatMap((id, j) => {
        const problem = partitionIdProblem(known, id);
        if (!problem) return [];
        return [
            `${prefix}.fabricManager.partitions[${j}]: ${problem}${table === undefined ? " (the default table; another board declares its own as fabric.partitionTable)" : ""}`,
        ];
    });
}

/** Whether fabricmanager runs on the host itself (where its partitions are activated). */
function runsFabricManager(entry: HostEntry | undefined, settings: Settings): boolean {
    return (entry?.inventory?.nvswitches ?? 0) > 0 && ["host", "auto"].includes(normalizeFabricMode(settings.fabricManager.mode));
}

export function isBoard(settings: Settings | undefined): boolean {
    return settings !== undefined && normalizeFabricMode(settings.fabricManager.mode) === "service-vm";
}

/** The host as the validated stack holds it, when it parsed whole and is a worker of its own (no shared board, none of its workers). */
export function wholeHost({ entry, settings, boardWorker }: ParsedHost): HostConfig | undefined {
    return entry?.inventory && settings && !boardWorker && !isBoard(settings) ? { ...settings, ...entry, inventory: entry.inventory } : undefined;
}

/** What a shared board, a board's worker and any other host may and must have. */
function roleProblems(raw: Record<string, unknown>, prefix: string, entry: HostEntry | undefined, settings: Settings, boardWorker: boolean): string[] {
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
        // Intel has no toolkit (its plan refuses a version).
        if (!entry?.inventory || !s || entry.inventory.vendor === "none" || entry.inventory.vendor === "intel" || covered("toolkit.version", reported))
            return [];
        const version = toolkitVersion(entry.inventory.vendor, s.toolkit.version);
        if (version === "preinstalled") return [];
        return toolkitVersionProblems(entry.inventory.vendor, version).map((p) => `hosts[${i}].toolkit.version: ${p}`);
    });
}
