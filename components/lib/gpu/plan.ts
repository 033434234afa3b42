/**
 * The one place that turns a host's inventory and GPU selection into everything that
 * depends on it: worker tags, the environment and device nodes the runc wrapper injects,
 * the CDI device ids, and whether fabricmanager runs. Nothing downstream recomputes these.
 */
import { allocationTags, AllocationSettings, GpuAllocation, planAllocation } from "./allocation";
import { gpuFamily } from "./families";
import { Gpu, GpuInventory } from "./inventory";
import { DeviceLink, intelByPathLinks, intelNodes, renderNode } from "./nodes";
import { PlanError } from "./plan-error";

export { PlanError };

export type GpuSelection = "all" | number[];
/**
 * Where fabricmanager runs: `host` on the worker's own host (the whole board is one worker),
 * `service-vm` in a service VM of a board shared by several workers (the board is no worker
 * itself), `off`, or `auto` (host where NVSwitches are declared, else off). `on` is the older
 * name of `host` and means the same.
 */
export type FabricManagerMode = "auto" | "host" | "service-vm" | "off" | "on";
/**
 * What Concourse gives a `privileged: true` step (CONCOURSE_CONTAINERD_PRIVILEGED_MODE):
 * `ignore` the same as any other step, `fuse-only` CAP_SYS_ADMIN and /dev/fuse inside a user
 * namespace, `full` every capability with no user namespace (root on the worker).
 */
export const PRIVILEGED_MODES = ["ignore", "fuse-only", "full"] as const;
export type PrivilegedMode = (typeof PRIVILEGED_MODES)[number];

export interface PlanOptions {
    selection: GpuSelection;
    /** Inject GPUs by CDI id (nvidia.com/gpu=0) instead of plain indices. */
    cdi: boolean;
    fabricManager: { mode: FabricManagerMode; partitions: number[] };
    /** Extra Concourse tags from the stack, appended after the computed ones. */
    extraTags: string[];
    /**
     * The driver pin ("preinstalled" or a version). A pinned version is what the host runs
     * after `up`, so it, not the inventory's driverVersion, gives the gpu-driver-major tag.
     */
    driverPin?: string;
    /**
     * The fabric partition the worker's GPUs form, for a worker VM of a shared board (its GPUs
     * come from the partition planner, lib/fabric/partitions.ts): tagged gpu-fabric-partition=ID.
     */
    fabricPartition?: number;
    /** What a privileged step gets on the worker; any mode but ignore is tagged privileged=MODE. Default: ignore. */
    privilegedMode?: PrivilegedMode;
    /** GPUs handed out per task (the settings' `allocation`); absent or mode all: every container gets every selected GPU. */
    allocation?: AllocationSettings;
}

export interface WorkerGpuPlan {
    vendor: GpuInventory["vendor"];
    /** The GPUs the worker gets, in index order. */
    selected: Gpu[];
    /** Concourse worker tags, computed tags first. */
    tags: string[];
    /** Variables the wrapper sets in every container, replacing what the image has. */
    env: Record<string, string>;
    /** Variables the wrapper removes from every container unless it sets them itself. */
    unsetEnv: string[];
    /** Host device nodes the wrapper adds to every container (AMD: kfd and render nodes; Intel: card and render nodes). */
    deviceNodes: string[];
    /** Host nodes the wrapper adds at other paths too (Intel: the /dev/dri/by-path names). Absent: none. */
    deviceLinks?: DeviceLink[];
    /**
     * The device nodes of the selected GPUs (NVIDIA: /dev/nvidia<index>; AMD: their render nodes; Intel: card and render nodes):
     * a spec whose linux.devices names another GPU's node is refused by the wrapper.
     */
    gpuNodes: string[];
    /** Fully qualified CDI ids of the selected devices (nvidia.com/gpu=0, nvidia.com/gpu=0:1, intel.com/gpu=card0). */
    cdiDevices: string[];
    fabricManager: { enabled: boolean; partitions: number[] };
    /** The fabric partition of a worker VM on a shared board (fabricmanager runs in the board's service VM). */
    fabricPartition?: number;
    /**
     * GPUs handed out per task: the units and what a holder gets. Absent in mode all and on a
     * worker without GPUs; env, deviceNodes and gpuNodes above stay the whole selection's (what
     * the worker's host and its validator see).
     */
    allocation?: GpuAllocation;
}

/** Variables through which a container could ask a GPU runtime for more than its selection. */
export const GPU_CONTROL_VARIABLES = [
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
    "NVIDIA_GDRCOPY",
    "NVIDIA_GDS",
    "NVIDIA_MOFED",
    "NVIDIA_NVSWITCH",
    "AMD_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
];

/** gfx targets that ROCm runs only when told to treat them as a supported neighbour. */
export const HSA_OVERRIDES: Readonly<Record<string, string>> = {
    gfx1103: "11.0.0", // Phoenix iGPU (Radeon 780M)
    gfx1035: "10.3.0", // Rembrandt iGPU (Radeon 680M)
    gfx1036: "10.3.0", // Raphael iGPU
    gfx1031: "10.3.0", // Navi 22 (RX 6700 XT)
    gfx90c: "9.0.0", // Renoir/Cezanne iGPU
};

/** Lower-case tag-safe form of a model name: "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3", "Intel Arc A770" -> "arc-a770". */
export function modelSlug(model: string): string {
    return model
        .toLowerCase()
        .replace(/^(nvidia|amd|intel)\s+/, "")
        .replace(/[^a-z0-9.]+/g, "-")
        .replace(/^-+|-+$/g, "");
}

export function selectGpus(inventory: GpuInventory, selection: GpuSelection): Gpu[] {
    const byIndex = [...inventory.gpus].sort((a, b) => a.index - b.index);
    if (selection === "all") return byIndex;
    const missing = selection.filter((i) => !byIndex.some((g) => g.index === i));
    if (missing.length > 0) {
        const known = byIndex.map((g) => g.index).join(", ") || "none";
        throw new PlanError("selection", `GPU index ${missing.join(", ")} is not in the inventory (declared: ${known})`);
    }
    const wanted = new Set(selection);
    return byIndex.filter((g) => wanted.has(g.index));
}

/** `on` is the older name of `host`. */
export function normalizeFabricMode(mode: FabricManagerMode): Exclude<FabricManagerMode, "on"> {
    return mode === "on" ? "host" : mode;
}

/** Whether fabricmanager runs on the worker's own host. */
function fabricManagerEnabled(inventory: GpuInventory, mode: FabricManagerMode): boolean {
    const normalized = normalizeFabricMode(mode);
    if (normalized === "off") return false;
    if (normalized === "service-vm") {
        throw new PlanError(
            "fabricManager.mode",
            "service-vm makes the host a board shared by several workers (each an LXD VM with one fabric partition), not a worker itself; a worker runs fabricmanager on its host (host) or not at all (off)",
        );
    }
    if (normalized === "host" && inventory.nvswitches === 0) {
        throw new PlanError(
            "fabricManager.mode",
            `${mode} needs NVSwitches, but the inventory declares nvswitches: 0 (fabricmanager must not start without them)`,
        );
    }
    return inventory.nvswitches > 0;
}

function hsaOverride(selected: Gpu[]): string | undefined {
    const versions = new Set(selected.map((g) => (g.gfxTarget ? HSA_OVERRIDES[g.gfxTarget] : undefined)));
    if (versions.size > 1) {
        const targets = selected.map((g) => `${g.index}=${g.gfxTarget ?? "?"}`).join(", ");
        throw new PlanError(
            "selection",
            `the selected AMD GPUs need different HSA_OVERRIDE_GFX_VERSION values (${targets}); select GPUs of one family per worker`,
        );
    }
    return [...versions][0];
}

/** Device names as nvidia-ctk's CDI spec and NVIDIA_VISIBLE_DEVICES name them. */
function nvidiaDeviceNames(selected: Gpu[]): string[] {
    return selected.flatMap((g) => (g.mig.length > 0 ? [...g.mig].sort((a, b) => a.index - b.index).map((m) => `${g.index}:${m.index}`) : [`${g.index}`]));
}

function computedTags(
    inventory: GpuInventory,
    selected: Gpu[],
    partitions: number[],
    fabric: boolean,
    options: Pick<PlanOptions, "driverPin" | "fabricPartition">,
): string[] {
    if (selected.length === 0) return [];
    const tags = ["gpu", `gpu-type=${inventory.vendor}`, `gpu-count=${selected.length}`, `gpu-devices=${selected.map((g) => g.index).join(",")}`];
    for (const slug of new Set(selected.map((g) => modelSlug(g.model)))) tags.push(`gpu-model=${slug}`);
    // Intel's memory is not in sysfs: 0 is unknown, and a tag would promise what nobody checked.
    if (selected.every((g) => g.memoryMiB > 0) || inventory.vendor !== "intel")
        tags.push(`gpu-memory-gib=${Math.min(...selected.map((g) => Math.round(g.memoryMiB / 1024)))}`);
    const profiles = new Set(selected.flatMap((g) => g.mig.map((m) => m.profile)));
    if (profiles.size > 0) tags.push("gpu-mig");
    for (const profile of [...profiles].sort()) tags.push(`gpu-mig-profile=${profile}`);
    for (const target of new Set(selected.flatMap((g) => (g.gfxTarget ? [g.gfxTarget] : [])))) tags.push(`gpu-gfx=${target}`);
    for (const driver of new Set(selected.flatMap((g) => (g.driver ? [g.driver] : [])))) tags.push(`gpu-driver=${driver}`);
    if (fabric) for (const id of partitions) tags.push(`gpu-fabric-partition=${id}`);
    if (options.fabricPartition !== undefined) tags.push(`gpu-fabric-partition=${options.fabricPartition}`);
    return [...tags, ...featureTags(inventory, selected, options.driverPin)];
}

/** MIG strategy as GPU Feature Discovery names it: none, single (one profile everywhere), mixed. */
export function migStrategy(selected: Gpu[]): "none" | "single" | "mixed" {
    if (selected.every((g) => g.mig.length === 0)) return "none";
    const profiles = new Set(selected.flatMap((g) => g.mig.map((m) => m.profile)));
    return selected.every((g) => g.mig.length > 0) && profiles.size === 1 ? "single" : "mixed";
}

/** 1, 2, 4, ... up to n: the gpu-count-min values of a worker with n GPUs. */
function powersOfTwoUpTo(n: number): number[] {
    const out: number[] = [];
    for (let p = 1; p <= n; p *= 2) out.push(p);
    return out;
}

/**
 * The tags at GPU Feature Discovery's level: family, compute capability, driver major, CUDA
 * version, MIG strategy, and gpu-count-min (powers of two) so that a task can ask for "a
 * hopper with at least 4 GPUs" with two exact tags. Each is left out where the inventory
 * does not know it, so a task asking for it never lands on a worker that might not match.
 */
function featureTags(inventory: GpuInventory, selected: Gpu[], driverPin: string | undefined): string[] {
    const tags: string[] = [];
    const families = new Set(selected.map((g) => gpuFamily(inventory.vendor, g)));
    for (const family of families) if (family) tags.push(`gpu-family=${family}`);
    for (const cc of new Set(selected.flatMap((g) => (g.computeCapability ? [g.computeCapability] : [])))) tags.push(`gpu-compute=${cc}`);
    const pinned = driverPin !== undefined && driverPin !== "preinstalled" ? driverPin : undefined;
    const driver = pinned ?? inventory.driverVersion;
    if (driver) tags.push(`gpu-driver-major=${driver.split(".")[0]}`);
    // The declared CUDA version belongs to the declared driver: after a pin to another branch it would be stale.
    const sameBranch = !pinned || !inventory.driverVersion || pinned.split(".")[0] === inventory.driverVersion.split(".")[0];
    if (inventory.cudaVersion && sameBranch) tags.push(`gpu-cuda=${inventory.cudaVersion}`);
    if (inventory.vendor === "nvidia") tags.push(`gpu-mig-strategy=${migStrategy(selected)}`);
    // "At least N of this family" holds only where every GPU is of one family.
    if (families.size === 1) for (const n of powersOfTwoUpTo(selected.length)) tags.push(`gpu-count-min=${n}`);
    return tags;
}

/** A worker whose privileged steps get more than the others carries it in its tags, for all to see. */
function privilegedTags(mode: PrivilegedMode | undefined): string[] {
    return mode === undefined || mode === "ignore" ? [] : [`privileged=${mode}`];
}

export function planWorkerGpus(inventory: GpuInventory, options: PlanOptions): WorkerGpuPlan {
    const selected = selectGpus(inventory, options.selection);
    const fabric = fabricManagerEnabled(inventory, options.fabricManager.mode);
    if (options.fabricPartition !== undefined && fabric) {
        throw new PlanError(
            "fabricManager.mode",
            `a worker on fabric partition ${options.fabricPartition} runs no fabricmanager of its own (the board's service VM does): set it off`,
        );
    }
    if (!fabric && options.fabricManager.partitions.length > 0 && options.fabricManager.mode !== "off") {
        throw new PlanError("fabricManager.partitions", "partitions need fabricmanager, which runs only on hosts with NVSwitches");
    }
    const env: Record<string, string> = {};
    const deviceNodes: string[] = [];
    const deviceLinks: DeviceLink[] = [];
    let gpuNodes: string[] = [];
    let cdiDevices: string[] = [];
    let names: string[] = [];
    if (inventory.vendor === "nvidia" && selected.length > 0) {
        names = nvidiaDeviceNames(selected);
        const kind = inventory.tegra ? "nvidia.com/igpu" : "nvidia.com/gpu";
        cdiDevices = names.map((n) => `${kind}=${n}`);
        env.NVIDIA_VISIBLE_DEVICES = (options.cdi ? cdiDevices : names).join(",");
        env.NVIDIA_DRIVER_CAPABILITIES = "compute,utility";
        gpuNodes = [...new Set(selected.map((g) => `/dev/nvidia${g.index}`))];
    } else if (inventory.vendor === "amd" && selected.length > 0) {
        cdiDevices = selected.map((g) => `amd.com/gpu=${g.index}`);
        env.AMD_VISIBLE_DEVICES = selected.map((g) => g.index).join(",");
        const override = hsaOverride(selected);
        if (override) env.HSA_OVERRIDE_GFX_VERSION = override;
        deviceNodes.push("/dev/kfd", ...selected.map(renderNode));
        gpuNodes = selected.map(renderNode);
    } else if (inventory.vendor === "intel" && selected.length > 0) {
        // A container sees the GPUs whose nodes it has; Intel's runtimes read no selection variable of ours.
        cdiDevices = selected.map((g) => `intel.com/gpu=${g.cardNode}`);
        deviceNodes.push(...selected.flatMap(intelNodes));
        deviceLinks.push(...selected.flatMap(intelByPathLinks));
        gpuNodes = selected.flatMap(intelNodes);
    }
    const allocation = planAllocation(options.allocation, { inventory, selected, env, names, cdiDevices, cdi: options.cdi });
    // No GPU for this worker: env stays empty and every GPU variable is unset, so no task sees
    // one and none can ask a runtime (or a hook left on the host) for a GPU.
    return {
        vendor: inventory.vendor,
        selected,
        tags: [
            ...computedTags(inventory, selected, options.fabricManager.partitions, fabric, options),
            ...allocationTags(allocation),
            ...privilegedTags(options.privilegedMode),
            ...options.extraTags,
        ],
        env,
        unsetEnv: GPU_CONTROL_VARIABLES.filter((name) => !(name in env)),
        deviceNodes,
        ...(deviceLinks.length > 0 ? { deviceLinks } : {}),
        gpuNodes,
        cdiDevices,
        fabricManager: { enabled: fabric, partitions: fabric ? options.fabricManager.partitions : [] },
        ...(options.fabricPartition !== undefined ? { fabricPartition: options.fabricPartition } : {}),
        ...(allocation ? { allocation } : {}),
    };
}
