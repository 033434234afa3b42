import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { GpuDriverTerms, planGpuDriver } from "../../lib/plan/leaf-terms";
import { renderGpuDriver } from "../../lib/render/gpu-driver";

/** The host, the vendor and the driver version; a pinned version comes from the vendor's repository where the project ships its key. */
export interface GpuDriverArgs extends HostAccessArgs, GpuDriverTerms {}

/** The NVIDIA or AMD ROCm driver: checked when preinstalled, installed when pinned. */
export class GpuDriver extends HostStepsComponent {
    constructor(name: string, args: GpuDriverArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:driver:GpuDriver", name, opts);
        this.placeOnHost(renderGpuDriver(planGpuDriver(args)), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
