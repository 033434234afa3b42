import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { ContainerdRuntimeSettings, renderContainerdRuntimeComponent } from "../../lib/render/containerd";

export interface ContainerdRuntimeArgs extends HostAccessArgs, ContainerdRuntimeSettings {}

/**
 * The GPU runtime handler in the host's containerd (CRI clients): a drop-in imported by
 * the main config, applied without losing any of the host's settings, containerd
 * restarted only when the result changed. Deleting it removes the drop-in.
 */
export class ContainerdRuntime extends HostStepsComponent {
    constructor(name: string, args: ContainerdRuntimeArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:containerd:ContainerdRuntime", name, opts);
        this.placeOnHost(renderContainerdRuntimeComponent(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}

