/** The GPU health link: its terms, its plan, and its row of the chain. Pure. */
import type { GpuInventory } from "../../gpu/inventory";
import type { GpuSelection, WorkerGpuPlan } from "../../gpu/plan";
import { ignoredXids } from "../../gpu/xids";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSettings } from "../../settings/settings";
import type { WorkerSpec } from "../../settings/worker-spec";
import { CONCOURSE_UNIT } from "../concourse-worker/render";
import type { LinkDef } from "../link";
import { builtin, containerGpus } from "../terms";
import { GpuHealthSettings, renderGpuHealth } from "./render";

/** The health watcher in a user's terms: the inventory, the GPUs it watches, and the health settings. */
export interface GpuHealthTerms {
    /** The declared GPU inventory (its GPUs' PCI bus ids match kernel lines to GPUs). */
    inventory: GpuInventory;
    /** The GPUs the watcher watches. Default: "all". */
    selection?: GpuSelection;
    /** The Concourse worker's systemd unit it lands and starts again; absent, it only reports. Default: none. */
    workerUnit?: string;
    /** The health settings (the schema's `health`), field by field. Default: WORKER_DEFAULTS.health. */
    health?: Partial<WorkerSettings["health"]>;
    /** GPUs are handed out per task (allocation in any mode but all): a sick GPU leaves the pool, not the worker. Default: false. */
    pool?: boolean;
}

/**
 * The watcher's settings; undefined for a worker without GPUs (vendor none), which gets no
 * watcher. Intel GPUs are watched by bus id (the inventory requires it) and driver (i915 or xe:
 * whose kernel lines count for the GPU).
 */
export function planGpuHealth(terms: GpuHealthTerms, plan?: WorkerGpuPlan): GpuHealthSettings | undefined {
    const inv = terms.inventory;
    if (inv.vendor === "none") return undefined;
    const given = terms.health ?? {};
    const d = WORKER_DEFAULTS.health;
    plan ??= containerGpus(inv, terms.selection, false);
    if (plan.selected.length === 0) return undefined;
    return {
        vendor: inv.vendor,
        gpus: plan.selected.map((g) => ({
            index: g.index,
            ...(g.pciBusId ? { busId: g.pciBusId } : {}),
            // Without a declared bus id an AMD GPU is found by its render node (plan.ts's default name).
            ...(!g.pciBusId && inv.vendor === "amd" ? { renderNode: g.renderNode ?? `renderD${128 + g.index}` } : {}),
            ...(inv.vendor === "intel" && g.driver ? { driver: g.driver } : {}),
        })),
        nvswitch: inv.nvswitches > 0,
        pool: terms.pool ?? false,
        ...(terms.workerUnit ? { workerUnit: terms.workerUnit } : {}),
        onFatal: given.onFatal ?? builtin(d?.onFatal, "health.onFatal"),
        ignoredXids: ignoredXids(given.ignoreXids ?? builtin(d?.ignoreXids, "health.ignoreXids"), given.fatalXids ?? builtin(d?.fatalXids, "health.fatalXids")),
        pollSeconds: given.pollSeconds ?? builtin(d?.pollSeconds, "health.pollSeconds"),
        settleSeconds: given.settleSeconds ?? builtin(d?.settleSeconds, "health.settleSeconds"),
        dirtyGraceSeconds: given.dirtyGraceSeconds ?? builtin(d?.dirtyGraceSeconds, "health.dirtyGraceSeconds"),
    };
}

/** The watcher in a user's terms, from the worker: it lands the worker's unit where the chain reaches the worker. */
export function gpuHealthTerms(host: WorkerSpec): GpuHealthTerms {
    return {
        inventory: host.inventory,
        selection: host.selection,
        ...(host.concourse.binary ? { workerUnit: CONCOURSE_UNIT } : {}),
        health: host.health,
        pool: host.allocation.mode !== "all",
    };
}

/** Every worker with GPUs gets a watcher, after its Concourse worker (whose unit it lands). */
export const gpuHealthLink: LinkDef<GpuHealthSettings> = {
    suffix: "health",
    plan: (host, gpus) => planGpuHealth(gpuHealthTerms(host), gpus),
    render: renderGpuHealth,
};
