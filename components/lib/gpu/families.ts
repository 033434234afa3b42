/**
 * A GPU's architecture family, the value of the gpu-family tag: for NVIDIA the architecture
 * its compute capability belongs to (CUDA C++ Programming Guide, "Compute Capabilities"),
 * for AMD the gfx target the KFD reports (ROCm builds code per gfx target, so that is
 * what a task needs to match), for Intel the product line its PCI device id belongs to (flex,
 * max, arc-a, arc-b, integrated). Pure.
 */
import { intelModel } from "./intel-models";
import type { Gpu, GpuInventory } from "./inventory";

/** Compute capability major (and, where one major spans two architectures, minor) -> family. */
const NVIDIA_FAMILIES: readonly { major: number; minors?: readonly number[]; family: string }[] = [
    { major: 3, family: "kepler" },
    { major: 5, family: "maxwell" },
    { major: 6, family: "pascal" },
    { major: 7, minors: [0, 2], family: "volta" },
    { major: 7, minors: [5], family: "turing" },
    { major: 8, minors: [0, 6, 7], family: "ampere" },
    { major: 8, minors: [9], family: "ada" },
    { major: 9, family: "hopper" },
    { major: 10, family: "blackwell" },
    { major: 11, family: "blackwell" },
    { major: 12, family: "blackwell" },
];

/** "9.0" -> "hopper"; undefined for a capability this table does not know. */
export function nvidiaFamily(computeCapability: string): string | undefined {
    const [major, minor] = computeCapability.split(".").map(Number);
    return NVIDIA_FAMILIES.find((f) => f.major === major && (!f.minors || f.minors.includes(minor)))?.family;
}

/** The family of one GPU, or undefined when the inventory does not say enough to know it. */
export function gpuFamily(vendor: GpuInventory["vendor"], gpu: Gpu): string | undefined {
    if (vendor === "amd") return gpu.gfxTarget;
    if (vendor === "intel" && gpu.pciDeviceId) return intelModel(gpu.pciDeviceId)?.family;
    if (vendor === "nvidia" && gpu.computeCapability) return nvidiaFamily(gpu.computeCapability);
    return undefined;
}
