/**
 * A GPU node's labels, from the one GPU plan (planWorkerGpus), in the keys NVIDIA's GPU Feature
 * Discovery writes (nvidia.com/gpu.product, gpu.count, ...; cuda.driver.major is the driver's
 * major, cuda.runtime.major/minor the CUDA version), so that pods and tools written for GFD's
 * labels select our nodes alike; and the label of our own that says the node is one of ours. Pure.
 */
import { gpuFamily } from "../gpu/families";
import type { GpuInventory } from "../gpu/inventory";
import { migStrategy, WorkerGpuPlan } from "../gpu/plan";

/** The label that marks the GPU nodes this project manages: the device plugin and the RuntimeClasses schedule on it. */
export const GPU_NODE_LABEL = "gpu-workers.dev/gpu-node";

/** A label value Kubernetes takes: at most 63 of letters, digits, `-_.`, beginning and ending with a letter or digit. */
export function labelValue(text: string): string {
    return text
        .replace(/[^A-Za-z0-9_.-]+/g, "-")
        .slice(0, 63)
        .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
}

/**
 * GFD's labels for the node's GPUs. Each is left out where the plan does not know it (a
 * capability not declared, GPUs of two models), so a pod selecting on it never lands on a node
 * that might not match. The driver is the pinned one where the host pins it, as the worker's tags.
 */
export function gpuNodeLabels(inventory: GpuInventory, plan: WorkerGpuPlan, driverPin?: string): Record<string, string> {
    const labels: Record<string, string> = { [GPU_NODE_LABEL]: "true" };
    const selected = plan.selected;
    if (inventory.vendor !== "nvidia" || selected.length === 0) return labels;
    const one = <T>(values: T[]): T | undefined => (new Set(values).size === 1 ? values[0] : undefined);
    labels["nvidia.com/gpu.present"] = "true";
    labels["nvidia.com/gpu.count"] = String(selected.length);
    const model = one(selected.map((g) => g.model));
    if (model) labels["nvidia.com/gpu.product"] = labelValue(model);
    // GFD's memory is one GPU's, in MiB; of GPUs that differ, the least is what each has at least.
    labels["nvidia.com/gpu.memory"] = String(Math.min(...selected.map((g) => g.memoryMiB)));
    const family = one(selected.map((g) => gpuFamily(inventory.vendor, g)));
    if (family) labels["nvidia.com/gpu.family"] = family;
    const capability = one(selected.map((g) => g.computeCapability));
    if (capability) {
        const [major, minor] = capability.split(".");
        labels["nvidia.com/gpu.compute.major"] = major;
        labels["nvidia.com/gpu.compute.minor"] = minor ?? "0";
    }
    const pinned = driverPin !== undefined && driverPin !== "preinstalled" ? driverPin : undefined;
    const driver = pinned ?? inventory.driverVersion;
    if (driver) labels["nvidia.com/cuda.driver.major"] = driver.split(".")[0];
    // The declared CUDA version belongs to the declared driver: after a pin to another branch it would be stale.
    const sameBranch = !pinned || !inventory.driverVersion || pinned.split(".")[0] === inventory.driverVersion.split(".")[0];
    if (inventory.cudaVersion && sameBranch) {
        const [major, minor] = inventory.cudaVersion.split(".");
        labels["nvidia.com/cuda.runtime.major"] = major;
        if (minor !== undefined) labels["nvidia.com/cuda.runtime.minor"] = minor;
    }
    labels["nvidia.com/mig.strategy"] = migStrategy(selected);
    return labels;
}
