/** The container toolkit link: its terms, its plan, and its row of the chain. Pure. */
import { GpuInventory } from "../../gpu/inventory";
import { GpuSelection, PlanError } from "../../gpu/plan";
import type { Artifact } from "../../host/steps";
import { VendorRepository, vendorRepository } from "../../repos/vendor-repos";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSpec } from "../../settings/worker-spec";
import { toolkitVersion, toolkitVersionProblems } from "../../toolkit/versions";
import type { LinkDef } from "../link";
import { RUNC_REAL_PATH } from "../runc-wrapper/render";
import { builtin, containerGpus } from "../terms";
import { ContainerToolkitSettings, renderContainerToolkit } from "./render";

/** The container toolkit in a user's terms. */
export interface ContainerToolkitTerms {
    /** The declared GPU inventory (inventorySchema.parse(...)): its vendor picks the toolkit; NVIDIA Tegra gets CDI in csv mode. */
    inventory: GpuInventory;
    /** The GPUs containers get, whose CDI ids the spec must hold: "all" or indices. Example: [0, 1]. Default: "all". */
    selection?: GpuSelection;
    /** Generate a CDI spec and inject GPUs by CDI id. Default: true. */
    cdi?: boolean;
    /** The toolkit version, or "preinstalled" (installs nothing). Example: "1.17.8". Default: per vendor (components/lib/toolkit/versions.ts); versions with known container escapes are refused. */
    version?: string;
    /** The driver pin ("preinstalled" or a version): a change regenerates the CDI spec. Default: "preinstalled". */
    driverVersion?: string;
    /** The built cdi-check to upload, with its sha256. Default: dist/cdi-check/cdi-check of this package, hashed by the component. */
    checkerBinary?: Artifact;
}

/** The toolkit's settings; `plan` is the worker's GPU plan where the chain has one already. */
export function planContainerToolkit(
    terms: ContainerToolkitTerms & { checkerBinary: Artifact },
    plan = containerGpus(terms.inventory, terms.selection, terms.cdi),
): ContainerToolkitSettings {
    const vendor = terms.inventory.vendor;
    if (vendor === "none") throw new PlanError("inventory.vendor", "a container toolkit needs GPUs, but the inventory declares vendor none");
    const cdi = terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi");
    const driverVersion = terms.driverVersion ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version");
    if (vendor === "intel") {
        if (terms.version !== undefined && terms.version !== "preinstalled")
            throw new PlanError(
                "toolkit.version",
                `${terms.version}: Intel has no container toolkit to install (its CDI spec is rendered here): leave it out, or set preinstalled on this host`,
            );
        const base = { vendor, version: "preinstalled", cdi, tegra: false, cdiDevices: plan.cdiDevices, realRuntime: RUNC_REAL_PATH, driverVersion };
        return { ...base, checkerBinary: terms.checkerBinary, intelGpus: terms.inventory.gpus };
    }
    const version = toolkitVersion(vendor, terms.version);
    if (version !== "preinstalled") {
        const problems = toolkitVersionProblems(vendor, version);
        if (problems.length > 0) throw new PlanError("toolkit.version", problems.join("; "));
    }
    const repository: VendorRepository | undefined = version === "preinstalled" ? undefined : vendorRepository("toolkit", vendor);
    return {
        vendor,
        version,
        ...(repository ? { repository } : {}),
        cdi,
        tegra: terms.inventory.tegra,
        cdiDevices: plan.cdiDevices,
        // nvidia-container-runtime hands containers to the runc the wrapper set aside, never back to the wrapper.
        realRuntime: RUNC_REAL_PATH,
        driverVersion,
        checkerBinary: terms.checkerBinary,
    };
}

/** The worker's container toolkit in a user's terms. */
export function toolkitTerms(host: WorkerSpec): ContainerToolkitTerms & { checkerBinary: Artifact } {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        ...(host.toolkit.version !== undefined ? { version: host.toolkit.version } : {}),
        driverVersion: host.driver.version,
        checkerBinary: host.artifacts.cdiCheck,
    };
}

/** A worker with GPUs gets its vendor's toolkit (Intel: its CDI spec); one without gets none. */
export const containerToolkitLink: LinkDef<ContainerToolkitSettings> = {
    suffix: "toolkit",
    // Intel without CDI has nothing here: no toolkit to install, and no spec.
    plan: (host, gpus) =>
        gpus.vendor === "none" || (gpus.vendor === "intel" && !host.toolkit.cdi) ? undefined : planContainerToolkit(toolkitTerms(host), gpus),
    render: renderContainerToolkit,
};
