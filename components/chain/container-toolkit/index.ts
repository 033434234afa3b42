import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planContainerToolkit, ContainerToolkitTerms } from "../../lib/links/container-toolkit/plan";
import { renderContainerToolkit, ContainerToolkitSettings } from "../../lib/links/container-toolkit/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and the toolkit in a user's terms (the inventory, the GPU selection, versions: it plans the rest), or GpuWorker's planned part. */
export type ContainerToolkitArgs = LeafArgs<ContainerToolkitTerms, ContainerToolkitSettings>;

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, checked against the selected devices
 * on the host and against the project's CDI validator here).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        this.placeOnHost(partOf(args, (terms) => planContainerToolkit(terms), renderContainerToolkit).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
