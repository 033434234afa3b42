/**
 * GPUs handed out per task (issue 41): the worker's GPU units, the variables and nodes a holder
 * of units gets, and the capacity tags. Part of the one GPU plan (plan.ts calls it); the runc
 * wrapper's settings and the worker's tags both come from what it returns. Pure.
 */
import type { Gpu, GpuInventory } from "./inventory";
import { MAX_MPS_REPLICAS, MPS_PIPE_ENV, mpsPipeDir, mpsShmDir } from "./mps";
import { DeviceLink, intelByPathLinks, intelNodes, renderNode } from "./nodes";
import { PlanError } from "./plan-error";

/** `all`: every container gets every selected GPU (no allocation); the others hand units out per task. */
export const ALLOCATION_MODES = ["all", "exclusive", "timeSlice", "mps"] as const;
export type AllocationMode = (typeof ALLOCATION_MODES)[number];

/** Holders of one unit at once in timeSlice and mps when the settings name none. */
export const DEFAULT_REPLICAS = 2;
/**
 * The longest a create may wait for free units. Concourse's create runs `runc create` inside one
 * containerd request, bounded by the worker's --containerd-request-timeout (default 5m), and the
 * web's garden client times out at 5m too: 240 s leaves a minute for the rest of the create.
 */
export const MAX_WAIT_SECONDS = 240;
/** The param a task asks with (in the container's env at create). */
export const ASK_VARIABLE = "GPU_WORKERS_GPUS";
/** Where an MPS client finds its GPU's daemon's shared memory (the wrapper binds the GPU's own tmpfs here). */
export const MPS_CLIENT_SHM = "/dev/shm";

/** The allocation settings, as the settings schema gives them. */
export interface AllocationSettings {
    /** all, exclusive, timeSlice or mps. */
    mode: AllocationMode;
    /** Units a task's container gets when it asks none. */
    perTask: number;
    /** Holders of one unit at once; absent: DEFAULT_REPLICAS in timeSlice and mps; exclusive is always 1. */
    replicas?: number;
    /** How long a create waits for free units, in seconds (at most MAX_WAIT_SECONDS). */
    waitSeconds: number;
}

/** One unit: a selected GPU, or on a MIG GPU one of its MIG instances. */
export interface GpuUnit {
    /** `<gpu>` or, for a MIG instance, `<gpu>:<instance>`. */
    id: string;
    /** The GPU's index (what the GPU job records and dcgm-exporter name). */
    gpu: string;
    /** Its value in the visible variable (CDI id where the worker names GPUs so). */
    visible: string;
    /** Nodes its holder gets (AMD: its render node). */
    deviceNodes: string[];
    /** Nodes its holder gets at other paths too (Intel: its /dev/dri/by-path names). */
    deviceLinks?: DeviceLink[];
    /** The GPU's nodes: a spec naming one of a unit it does not hold is refused. */
    gpuNodes: string[];
    /** Variables its holder gets besides the holders' own (mps: its GPU's daemon's pipe folder). */
    env?: Record<string, string>;
    /** Host folders bound read-write into its holder (mps: the daemon's pipe folder and shm); a unit whose folder is missing is handed to no one. */
    mounts?: UnitMount[];
}

/** A host folder a unit's holder gets, bound at destination. */
export interface UnitMount {
    source: string;
    destination: string;
}

/** Per vendor, the variable that names a holder's units to the GPU runtime. */
const VISIBLE_ENV: Record<Exclude<GpuInventory["vendor"], "none">, GpuAllocation["visibleEnv"]> = {
    nvidia: "NVIDIA_VISIBLE_DEVICES",
    amd: "AMD_VISIBLE_DEVICES",
    intel: "",
};

/** The worker's allocation, mode `all` excepted. */
export interface GpuAllocation {
    /** exclusive, timeSlice or mps. */
    mode: Exclude<AllocationMode, "all">;
    /** Units a task's container gets when it asks none. */
    perTask: number;
    /** Holders of one unit at once (exclusive: 1). */
    replicas: number;
    /** How long a create waits for free units, in seconds. */
    waitSeconds: number;
    /** The variable that names a holder's units ("": none, Intel's: a holder has its units' nodes and no others). */
    visibleEnv: "NVIDIA_VISIBLE_DEVICES" | "AMD_VISIBLE_DEVICES" | "";
    /** Set only in a container holding at least one unit. */
    holderEnv: Record<string, string>;
    /** Nodes every holder gets. */
    holderDeviceNodes: string[];
    /** The units, in index order (a MIG GPU's by instance index). */
    units: GpuUnit[];
    /** units × replicas: how many asks of one unit the worker holds at once. */
    slots: number;
}

/** What the GPU plan hands over: its selection and what it computed for a container given every GPU. */
export interface AllocationInput {
    inventory: GpuInventory;
    selected: Gpu[];
    /** Every selected GPU's env as mode `all` sets it. */
    env: Record<string, string>;
    /** Device names (0, 1:0) and their CDI ids, in the same order. */
    names: string[];
    cdiDevices: string[];
    cdi: boolean;
}

/** The worker's units and what a holder gets; undefined in mode `all`, or for a worker without GPUs (nothing to hand out). */
export function planAllocation(settings: AllocationSettings | undefined, input: AllocationInput): GpuAllocation | undefined {
    if (!settings || settings.mode === "all") return undefined;
    const mode = settings.mode;
    if (mode === "exclusive" && settings.replicas !== undefined && settings.replicas !== 1) {
        throw new PlanError(
            "allocation.replicas",
            `${settings.replicas} holders of one unit is time-slicing; exclusive holds each unit once: leave replicas out, set 1, or use timeSlice`,
        );
    }
    if (input.selected.length === 0) return undefined;
    if (mode === "mps") mpsRefusals(settings, input);
    const vendor = input.inventory.vendor;
    const units =
        vendor === "amd" ? amdUnits(input) : vendor === "intel" ? intelUnits(input) : nvidiaUnits(input).map((u) => (mode === "mps" ? withMpsDaemon(u) : u));
    if (settings.perTask > units.length) {
        throw new PlanError(
            "allocation.perTask",
            `${settings.perTask} units for every task that asks none is more than this worker has (${units.length}): every such task would fail`,
        );
    }
    const replicas = mode === "exclusive" ? 1 : (settings.replicas ?? DEFAULT_REPLICAS);
    const visibleEnv = VISIBLE_ENV[vendor as Exclude<typeof vendor, "none">];
    // What mode all sets in every container, but for the list of GPUs, goes to holders only.
    const holderEnv = Object.fromEntries(Object.entries(input.env).filter(([name]) => name !== visibleEnv));
    return {
        mode,
        perTask: settings.perTask,
        replicas,
        waitSeconds: settings.waitSeconds,
        visibleEnv,
        holderEnv,
        holderDeviceNodes: input.inventory.vendor === "amd" ? ["/dev/kfd"] : [],
        units,
        slots: units.length * replicas,
    };
}

/**
 * mps runs one control daemon per GPU (gpu/mps.ts), and a client talks to the one daemon its
 * pipe folder names: so a container holds one unit at most, a whole NVIDIA GPU (NVIDIA's
 * device plugin refuses MPS on MIG devices too).
 */
function mpsRefusals(settings: AllocationSettings, input: AllocationInput): void {
    if (input.inventory.vendor !== "nvidia") {
        throw new PlanError("allocation.mode", `mps: MPS is NVIDIA's; an ${input.inventory.vendor.toUpperCase()} worker shares its GPUs with timeSlice`);
    }
    const mig = input.selected.filter((g) => g.mig.length > 0).map((g) => g.index);
    if (mig.length > 0) {
        throw new PlanError(
            "allocation.mode",
            `mps: GPU ${mig.join(", ")} is in MIG mode, and MPS does not share MIG instances here; use exclusive or timeSlice`,
        );
    }
    if ((settings.replicas ?? DEFAULT_REPLICAS) > MAX_MPS_REPLICAS) {
        throw new PlanError(
            "allocation.replicas",
            `${settings.replicas} clients of one GPU's daemon would each get less than 1 % of its threads; at most ${MAX_MPS_REPLICAS} in mode mps`,
        );
    }
    if (settings.perTask > 1) {
        throw new PlanError(
            "allocation.perTask",
            `${settings.perTask}: in mode mps a container holds one GPU at most (its MPS client talks to one GPU's daemon); set 0 or 1`,
        );
    }
}

/** A GPU shared through its own MPS daemon: its holder gets the daemon's pipe folder and shm, and the variable naming the pipe. */
function withMpsDaemon(unit: GpuUnit): GpuUnit {
    const pipe = mpsPipeDir(unit.gpu);
    return {
        ...unit,
        env: { [MPS_PIPE_ENV]: pipe },
        mounts: [
            { source: pipe, destination: pipe },
            { source: mpsShmDir(unit.gpu), destination: MPS_CLIENT_SHM },
        ],
    };
}

/** NVIDIA: a GPU, or each MIG instance of a MIG GPU, named as the env and the CDI spec name them (input.names). */
function nvidiaUnits(input: AllocationInput): GpuUnit[] {
    return input.names.map((name, i) => {
        const gpu = name.split(":")[0];
        return { id: name, gpu, visible: input.cdi ? input.cdiDevices[i] : name, deviceNodes: [], gpuNodes: [`/dev/nvidia${gpu}`] };
    });
}

/** AMD: a GPU, named by index in AMD_VISIBLE_DEVICES, with its render node. */
function amdUnits(input: AllocationInput): GpuUnit[] {
    return input.selected.map((g) => {
        const node = renderNode(g);
        return { id: `${g.index}`, gpu: `${g.index}`, visible: `${g.index}`, deviceNodes: [node], gpuNodes: [node] };
    });
}

/** Intel: a GPU, its card and render nodes; a container sees the GPUs whose nodes it has, so no variable names them. */
function intelUnits(input: AllocationInput): GpuUnit[] {
    return input.selected.map((g) => {
        const nodes = intelNodes(g);
        return { id: `${g.index}`, gpu: `${g.index}`, visible: "", deviceNodes: nodes, deviceLinks: intelByPathLinks(g), gpuNodes: nodes };
    });
}

/** The capacity tags (item 7): how the worker shares its units, and how many asks of one it holds at once. */
export function allocationTags(allocation: GpuAllocation | undefined): string[] {
    if (!allocation) return [];
    return [`gpu-share=${allocation.mode.toLowerCase()}`, `gpu-slots=${allocation.slots}`];
}
