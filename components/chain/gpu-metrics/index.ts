import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { GpuMetricsTerms, planGpuMetrics } from "../../lib/links/gpu-metrics/plan";
import { GpuMetricsSettings, renderGpuMetrics } from "../../lib/links/gpu-metrics/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and its inventory, selection and textfile folder, or GpuWorker's planned part. */
export type GpuMetricsArgs = LeafArgs<GpuMetricsTerms, GpuMetricsSettings>;

/**
 * GPU metrics for Prometheus: Debian's node exporter, and a timer writing each selected GPU's
 * utilisation, memory, temperature, power and health, labelled with the container that holds it,
 * for its textfile collector (docs/gpu-metrics.md). Delete stops the timer, removes the file
 * and purges the exporter where this installed it.
 */
export class GpuMetrics extends HostStepsComponent {
    constructor(name: string, args: GpuMetricsArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:metrics:GpuMetrics", name, opts);
        this.placeOnHost(partOf(args, (terms) => planGpuMetrics(terms), renderGpuMetrics).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
