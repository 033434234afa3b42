import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import type { Artifact } from "../../lib/host/steps";
import { ContainerdRuntimeSettings, renderContainerdRuntimeComponent } from "../../lib/render/containerd";
import { LOCAL_ARTIFACTS } from "../artifacts";

export interface ContainerdRuntimeArgs extends HostAccessArgs, Omit<ContainerdRuntimeSettings, "helperBinary"> {
    /** containerd-toml to upload, with its sha256. Default: this package's build (dist/containerd-toml/containerd-toml). */
    helperBinary?: Artifact;
}

/**
 * The GPU runtime handler in the host's containerd (CRI clients): a drop-in imported by
 * the main config, applied without losing any of the host's settings, containerd
 * restarted only when the result changed. Deleting it removes the drop-in.
 */
export class ContainerdRuntime extends HostStepsComponent {
    constructor(name: string, args: ContainerdRuntimeArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:containerd:ContainerdRuntime", name, opts);
        this.placeOnHost(renderContainerdRuntimeComponent({ ...args, helperBinary: args.helperBinary ?? LOCAL_ARTIFACTS.built().containerdToml }), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}

