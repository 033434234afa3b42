/** The worker validator link: its terms, its plan, and its row of the chain. Pure. */
import { GpuInventory } from "../../gpu/inventory";
import { GpuSelection } from "../../gpu/plan";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSpec } from "../../settings/worker-spec";
import { TOOLKITS, toolkitVersion } from "../../toolkit/versions";
import { CDI_SPEC_PATHS } from "../container-toolkit/render";
import type { LinkDef } from "../link";
import { allocationOf, holdingNone, RuncWrapperTerms } from "../runc-wrapper/plan";
import { WRAPPER_PATH } from "../runc-wrapper/render";
import { builtin, containerGpus, DatasetTerms, datasetsOf } from "../terms";
import { renderWorkerValidator, WorkerValidatorSettings } from "./render";

/** The worker's validator in a user's terms: what the rest of the chain was given. */
export interface WorkerValidatorTerms {
    /** The declared GPU inventory: the driver must list exactly its GPUs, at its driver and CUDA versions. */
    inventory: GpuInventory;
    /** The GPUs a container must see, exactly. Default: "all". */
    selection?: GpuSelection;
    /** GPUs by CDI id (the CDI spec's changes run the validator again). Default: true. */
    cdi?: boolean;
    /** The dataset root the validator checks the wrapper mounts as it should. Default: the worker's (/srv). */
    datasets?: DatasetTerms;
    /** The driver pin, or "preinstalled" (then the inventory's driverVersion, where declared). Default: "preinstalled". */
    driverVersion?: string;
    /** The toolkit version ContainerToolkit was given ("preinstalled": any). Default: per vendor, as ContainerToolkit's. */
    toolkitVersion?: string;
    /** containerd's socket. Default: /run/containerd/containerd.sock. */
    socket?: string;
    /** GPUs handed out per task, as the wrapper was given them: its container, no task's, must then hold none. Default: none (every container gets every GPU). */
    allocation?: RuncWrapperTerms["allocation"];
}

/**
 * What the validator expects: the whole inventory from the driver, the plan's selection, env and
 * devices in a container. Where GPUs are handed out per task, its container is no task's (it has
 * no build folder), so it must hold none: no GPU, every GPU variable unset, also when it asks for all.
 */
export function planWorkerValidator(
    terms: WorkerValidatorTerms,
    plan = containerGpus(terms.inventory, terms.selection, terms.cdi, allocationOf(terms.allocation)),
): WorkerValidatorSettings {
    const inv = terms.inventory;
    const pin = terms.driverVersion ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version");
    const pinned = pin === "preinstalled" ? undefined : pin;
    const driverVersion = pinned ?? inv.driverVersion;
    // The declared CUDA version belongs to the declared driver, not to a pin of another branch.
    const sameBranch = !pinned || !inv.driverVersion || pinned.split(".")[0] === inv.driverVersion.split(".")[0];
    const cdi = terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi");
    const container = plan.allocation ? holdingNone(plan) : plan;
    return {
        vendor: inv.vendor,
        gpus: inv.gpus.map((g) => ({ index: g.index, ...(g.uuid ? { uuid: g.uuid } : {}) })),
        selected: plan.allocation ? [] : plan.selected.map((g) => g.index),
        ...(driverVersion ? { driverVersion } : {}),
        ...(inv.cudaVersion && sameBranch ? { cudaVersion: inv.cudaVersion } : {}),
        // Intel has no toolkit package to check.
        ...(inv.vendor !== "none" && inv.vendor !== "intel"
            ? { toolkit: { package: TOOLKITS[inv.vendor].package, version: toolkitVersion(inv.vendor, terms.toolkitVersion) } }
            : {}),
        ...(inv.vendor !== "none" && cdi ? { cdiSpec: CDI_SPEC_PATHS[inv.vendor] } : {}),
        wrapper: WRAPPER_PATH,
        ...(terms.socket !== undefined ? { socket: terms.socket } : {}),
        env: container.env,
        unsetEnv: container.unsetEnv,
        deviceNodes: container.deviceNodes,
        datasets: datasetsOf(terms.datasets),
    };
}

/** The worker's validator in a user's terms. */
export function validatorTerms(host: WorkerSpec): WorkerValidatorTerms {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        datasets: host.datasets,
        driverVersion: host.driver.version,
        ...(host.toolkit.version !== undefined ? { toolkitVersion: host.toolkit.version } : {}),
        ...(host.allocation.mode !== "all" ? { allocation: host.allocation } : {}),
    };
}

/** Every worker is validated, after fabricmanager where it runs (a container needs it to use an NVSwitch board's GPUs). */
export const workerValidatorLink: LinkDef<WorkerValidatorSettings> = {
    suffix: "validate",
    plan: (host, gpus) => planWorkerValidator(validatorTerms(host), gpus),
    render: renderWorkerValidator,
    afterBeside: true,
};
