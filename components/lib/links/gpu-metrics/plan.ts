/** The GPU metrics link: its terms, its plan, and its row of the chain. Pure. */
import { GpuInventory } from "../../gpu/inventory";
import { GpuSelection, WorkerGpuPlan } from "../../gpu/plan";
import type { LinkDef } from "../link";
import { containerGpus } from "../terms";
import { DEBIAN_TEXTFILE_DIR, GpuMetricsSettings, METRICS_INTERVAL_SECONDS, renderGpuMetrics } from "./render";

/** GPU metrics in a user's terms. */
export interface GpuMetricsTerms {
    /** The declared GPU inventory (a GPU vendor: a worker without GPUs has no GPU metrics). */
    inventory: GpuInventory;
    /** The GPUs reported: those the worker's containers get. Default: "all". */
    selection?: GpuSelection;
    /** The node exporter's textfile folder. Default: /var/lib/prometheus/node-exporter (Debian's). */
    textfileDir?: string;
    /** Seconds between two writes of the metrics file (a usual scrape interval). Default: 15. */
    intervalSeconds?: number;
}

export function planGpuMetrics(terms: GpuMetricsTerms, plan: WorkerGpuPlan = containerGpus(terms.inventory, terms.selection, undefined)): GpuMetricsSettings {
    const vendor = terms.inventory.vendor;
    if (vendor === "none") throw new Error("GPU metrics: the inventory's vendor is none; a worker without GPUs has no GPU metrics");
    const gpus = [...new Map(plan.selected.map((g) => [g.index, g])).values()];
    return {
        vendor,
        gpus: gpus.map((g) => g.index),
        // xpu-smi numbers GPUs its own way: the collector finds each by its PCI address (the schema requires it on Intel GPUs).
        ...(vendor === "intel" ? { busIds: gpus.map((g) => (g.pciBusId ?? "").toLowerCase()) } : {}),
        textfileDir: terms.textfileDir ?? DEBIAN_TEXTFILE_DIR,
        intervalSeconds: terms.intervalSeconds ?? METRICS_INTERVAL_SECONDS,
    };
}

/** Only where the stack asks for the node exporter, and never on a worker without GPUs. */
export const gpuMetricsLink: LinkDef<GpuMetricsSettings> = {
    suffix: "gpu-metrics",
    plan: (host, gpus) =>
        host.metrics.nodeExporter && host.inventory.vendor !== "none" && gpus.selected.length > 0
            ? planGpuMetrics({ inventory: host.inventory }, gpus)
            : undefined,
    render: renderGpuMetrics,
};
