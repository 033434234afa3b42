/** The GPU MPS link: its terms, its plan, and its row of the chain. Pure. */
import { DEFAULT_REPLICAS } from "../../gpu/allocation";
import type { GpuInventory } from "../../gpu/inventory";
import { MAX_MPS_REPLICAS, mpsThreadPercentage } from "../../gpu/mps";
import type { GpuSelection, WorkerGpuPlan } from "../../gpu/plan";
import type { WorkerSpec } from "../../settings/worker-spec";
import { CONCOURSE_UNIT } from "../concourse-worker/render";
import type { LinkDef } from "../link";
import { containerGpus } from "../terms";
import { GpuMpsSettings, renderGpuMps } from "./render";

/** The MPS control daemons in a user's terms: the inventory, the GPUs that get one, and how many clients share each. */
export interface GpuMpsTerms {
    /** The declared GPU inventory: NVIDIA's (MPS is CUDA's), no MIG GPU among the selected. */
    inventory: GpuInventory;
    /** The GPUs that get a daemon of their own. Default: "all". */
    selection?: GpuSelection;
    /** Clients of one GPU at once (the settings' allocation.replicas): each pins total/replicas of its memory and gets floor(100/replicas) % of its threads. Default: DEFAULT_REPLICAS. */
    replicas?: number;
    /** The Concourse worker's systemd unit, which the daemons start before. Default: none. */
    workerUnit?: string;
}

/** The daemons' settings; throws, naming what, for an inventory or replicas they cannot serve. */
export function planGpuMps(terms: GpuMpsTerms, plan?: WorkerGpuPlan): GpuMpsSettings {
    const inv = terms.inventory;
    if (inv.vendor !== "nvidia")
        throw new Error(`gpu mps: the inventory's vendor is ${inv.vendor}; MPS is NVIDIA's (CUDA's), a worker with ${inv.vendor} GPUs has none`);
    const replicas = terms.replicas ?? DEFAULT_REPLICAS;
    if (!Number.isInteger(replicas) || replicas < 1 || replicas > MAX_MPS_REPLICAS) {
        throw new Error(
            `gpu mps: replicas ${replicas}: expected a whole number from 1 to ${MAX_MPS_REPLICAS} (each client gets floor(100/replicas) % of a GPU's threads)`,
        );
    }
    plan ??= containerGpus(inv, terms.selection, false);
    if (plan.selected.length === 0) throw new Error("gpu mps: no GPU is selected, so no GPU gets a daemon");
    const mig = plan.selected.filter((g) => g.mig.length > 0).map((g) => g.index);
    if (mig.length > 0) {
        throw new Error(`gpu mps: GPU ${mig.join(", ")} has MIG instances; an MPS daemon of ours serves a whole GPU (use exclusive or timeSlice on MIG GPUs)`);
    }
    return {
        gpus: [...new Set(plan.selected.map((g) => g.index))].sort((a, b) => a - b),
        replicas,
        activeThreadPercentage: mpsThreadPercentage(replicas),
        ...(terms.workerUnit ? { workerUnit: terms.workerUnit } : {}),
    };
}

/** The daemons in a user's terms, from the worker: they start before the worker's unit where the chain reaches the worker. */
export function gpuMpsTerms(host: WorkerSpec, gpus?: WorkerGpuPlan): GpuMpsTerms {
    return {
        inventory: host.inventory,
        selection: host.selection,
        replicas: gpus?.allocation?.replicas ?? host.allocation.replicas ?? DEFAULT_REPLICAS,
        ...(host.concourse.binary ? { workerUnit: CONCOURSE_UNIT } : {}),
    };
}

/** Only in allocation mode mps, on an NVIDIA worker with GPUs selected: after the wrapper, before the validator and the worker. */
export const gpuMpsLink: LinkDef<GpuMpsSettings> = {
    suffix: "mps",
    plan: (host, gpus) =>
        host.allocation.mode === "mps" && host.inventory.vendor === "nvidia" && gpus.selected.length > 0
            ? planGpuMps(gpuMpsTerms(host, gpus), gpus)
            : undefined,
    render: renderGpuMps,
};
