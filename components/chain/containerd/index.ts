import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { ContainerdRuntimeTerms, planContainerdRuntime } from "../../lib/plan/leaf-terms";
import { renderContainerdRuntimeComponent } from "../../lib/render/containerd";
import { LOCAL_ARTIFACTS } from "../artifacts";

/** The host, and the handler in a user's terms: the inventory, its name, whether it is the default. It runs the wrapper RuncWrapper places. */
export interface ContainerdRuntimeArgs extends HostAccessArgs, ContainerdRuntimeTerms {}

/**
 * The GPU runtime handler in the host's containerd (CRI clients): a drop-in imported by
 * the main config, applied without losing any of the host's settings, containerd
 * restarted only when the result changed. Deleting it removes the drop-in.
 */
export class ContainerdRuntime extends HostStepsComponent {
    constructor(name: string, args: ContainerdRuntimeArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:containerd:ContainerdRuntime", name, opts);
        this.placeOnHost(
            renderContainerdRuntimeComponent(planContainerdRuntime({ ...args, helperBinary: args.helperBinary ?? LOCAL_ARTIFACTS.built().containerdToml })),
            args,
        );
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
