import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planGpuDriver, GpuDriverTerms } from "../../lib/links/gpu-driver/plan";
import { renderGpuDriver, GpuDriverSettings } from "../../lib/links/gpu-driver/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and the vendor and the driver version (a pinned version comes from the vendor's repository where the project ships its key), or GpuWorker's planned part. */
export type GpuDriverArgs = LeafArgs<GpuDriverTerms, GpuDriverSettings>;

/** The NVIDIA or AMD ROCm driver: checked when preinstalled, installed when pinned. */
export class GpuDriver extends HostStepsComponent {
    constructor(name: string, args: GpuDriverArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:driver:GpuDriver", name, opts);
        this.placeOnHost(partOf(args, planGpuDriver, renderGpuDriver).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
