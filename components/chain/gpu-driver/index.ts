import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { GpuDriverSettings, renderGpuDriver } from "../../lib/render/gpu-driver";

export interface GpuDriverArgs extends HostAccessArgs, GpuDriverSettings {}

/** The NVIDIA or AMD ROCm driver: checked when preinstalled, installed when pinned. */
export class GpuDriver extends HostStepsComponent {
    constructor(name: string, args: GpuDriverArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:driver:GpuDriver", name, opts);
        this.placeOnHost(renderGpuDriver(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
