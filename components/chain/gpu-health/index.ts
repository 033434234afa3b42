import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { GpuHealthTerms, planGpuHealth } from "../../lib/links/gpu-health/plan";
import { GpuHealthSettings, renderGpuHealth } from "../../lib/links/gpu-health/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, its inventory, the GPUs to watch, the worker unit to land and the health settings, or GpuWorker's planned part. */
export type GpuHealthArgs = LeafArgs<GpuHealthTerms, GpuHealthSettings>;

/**
 * A watcher on the host (a systemd unit) that reads the kernel's GPU error lines as they come
 * and polls the vendor's tool; on a fatal event on a watched GPU it lands (or retires) the
 * Concourse worker, says why in the journal, and starts the worker again once the GPUs have
 * been healthy for the settle time. Its status is in /run/gpu-workers/health/.
 */
export class GpuHealth extends HostStepsComponent {
    constructor(name: string, args: GpuHealthArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:health:GpuHealth", name, opts);
        this.placeOnHost(
            partOf(
                args,
                (terms) => {
                    const settings = planGpuHealth(terms);
                    if (!settings) throw new Error(`GpuHealth ${name}: the inventory has no GPU to watch (vendor none, or none selected)`);
                    return settings;
                },
                renderGpuHealth,
            ).rendered,
            args,
        );
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
