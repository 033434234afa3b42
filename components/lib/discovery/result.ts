/** What discovery makes of a host: the inventory to compare or paste, and facts beside it. */
import { Gpu, GpuInventory } from "../gpu/inventory";

export type GpuVendor = "nvidia" | "amd" | "intel";

/** Where a GPU's model name came from: only the vendor tools name it as the stack declares it. */
export type ModelSource = "nvidia-smi" | "amd-smi" | "rocm-smi" | "lspci" | "pci-id" | "kfd" | "tegra";

export interface FoundGpu extends Gpu {
    modelSource: ModelSource;
    /** false when the size could not be read (no driver loaded: memoryMiB is 0). */
    memoryKnown: boolean;
}

export interface FoundVendor {
    vendor: GpuVendor;
    gpus: FoundGpu[];
    nvswitches: number;
    tegra: boolean;
}

export interface DiscoveryResult {
    /** Vendors with GPUs on this host, the primary one first (NVIDIA, then AMD, then Intel). */
    vendors: GpuVendor[];
    found: Partial<Record<GpuVendor, FoundVendor>>;
    /** The primary vendor's GPUs in the inventory's shape: the block to paste into the stack. */
    inventory: GpuInventory;
    /** Loaded NVIDIA driver version. */
    driverVersion?: string;
    /** The ROCm release (/opt/rocm/.info/version). */
    rocmVersion?: string;
    /** Highest CUDA version the loaded NVIDIA driver supports. */
    cudaVersion?: string;
    /** Jetson: the L4T release, e.g. 35.4.1. */
    l4t?: string;
    /** Document sources that were present. */
    sources: string[];
    /** Tools that exist on the host but failed, with their exit status. */
    failedTools: string[];
    /** Faults of the hardware or driver (a lost GPU, a driver that sees no device): always errors. */
    problems: string[];
    /** What discovery could not establish or had to infer. */
    warnings: string[];
}

export function toInventoryGpu(gpu: FoundGpu): Gpu {
    const { modelSource: _source, memoryKnown: _known, ...plain } = gpu;
    return plain;
}

/** The block to paste: the primary vendor's GPUs, and the driver (and CUDA) versions that go with it. */
export function inventoryOf(found: FoundVendor | undefined, versions: { driverVersion?: string; cudaVersion?: string } = {}): GpuInventory {
    if (!found || found.gpus.length === 0) return { vendor: "none", gpus: [], nvswitches: 0, tegra: false };
    return {
        vendor: found.vendor,
        gpus: found.gpus.map(toInventoryGpu),
        nvswitches: found.nvswitches,
        tegra: found.tegra,
        ...(versions.driverVersion ? { driverVersion: versions.driverVersion } : {}),
        ...(found.vendor === "nvidia" && versions.cudaVersion ? { cudaVersion: versions.cudaVersion } : {}),
    };
}
