import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planContainerdRuntime, ContainerdRuntimeTerms } from "../../lib/links/containerd/plan";
import { renderContainerdRuntimeComponent, ContainerdRuntimeSettings } from "../../lib/links/containerd/render";
import { LOCAL_ARTIFACTS } from "../artifacts";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and the handler in a user's terms (the inventory, its name, whether it is the default; it runs the wrapper RuncWrapper places), or GpuWorker's planned part. */
export type ContainerdRuntimeArgs = LeafArgs<ContainerdRuntimeTerms, ContainerdRuntimeSettings>;

/**
 * The GPU runtime handler in the host's containerd (CRI clients): a drop-in imported by
 * the main config, applied without losing any of the host's settings, containerd
 * restarted only when the result changed. Deleting it removes the drop-in.
 */
export class ContainerdRuntime extends HostStepsComponent {
    constructor(name: string, args: ContainerdRuntimeArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:containerd:ContainerdRuntime", name, opts);
        this.placeOnHost(
            partOf(
                args,
                (terms) => planContainerdRuntime({ ...terms, helperBinary: terms.helperBinary ?? LOCAL_ARTIFACTS.built().containerdToml }),
                renderContainerdRuntimeComponent,
            ).rendered,
            args,
        );
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
