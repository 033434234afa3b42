/** The GPU driver link: its terms, its plan, and its row of the chain. Pure. */
import { VendorRepository, vendorRepository } from "../../repos/vendor-repos";
import { PlanError } from "../../gpu/plan-error";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { LinkDef } from "../link";
import { builtin } from "../terms";
import { GpuDriverSettings, renderGpuDriver } from "./render";

/** The GPU driver in a user's terms. */
export interface GpuDriverTerms {
    /** Whose driver: NVIDIA's (its packages, or the host's own), AMD's (amdgpu, in the kernel) or Intel's (i915 or xe, in the kernel: preinstalled only). */
    vendor: "nvidia" | "amd" | "intel";
    /** "preinstalled" (check the loaded driver, install nothing) or a version to install and hold. Example: "550.54.15". Default: "preinstalled". */
    version?: string;
}

/** The driver's settings: a pinned version comes from the vendor's repository where the project ships its key. */
export function planGpuDriver(terms: GpuDriverTerms): GpuDriverSettings {
    const version = terms.version ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version");
    if (terms.vendor === "intel" && version !== "preinstalled")
        throw new PlanError("driver.version", `${version}: Intel's GPU drivers (i915, xe) come with the kernel; only preinstalled is checked`);
    const repository: VendorRepository | undefined =
        version === "preinstalled" || terms.vendor === "intel" ? undefined : vendorRepository("driver", terms.vendor);
    return { vendor: terms.vendor, version, ...(repository ? { repository } : {}) };
}

/** A worker with GPUs gets its vendor's driver; one without gets none. */
export const gpuDriverLink: LinkDef<GpuDriverSettings> = {
    suffix: "driver",
    plan: (host, gpus) => (gpus.vendor === "none" ? undefined : planGpuDriver({ vendor: gpus.vendor, version: host.driver.version })),
    render: renderGpuDriver,
};
