import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planContainerToolkit, ContainerToolkitTerms } from "../../lib/links/container-toolkit/plan";
import { renderContainerToolkit, ContainerToolkitSettings } from "../../lib/links/container-toolkit/render";
import { LOCAL_ARTIFACTS } from "../artifacts";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and the toolkit in a user's terms (the inventory, the GPU selection, versions: it plans the rest), or GpuWorker's planned part. */
export type ContainerToolkitArgs = LeafArgs<ContainerToolkitTerms, ContainerToolkitSettings>;

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, judged by the CDI project's own
 * library on the host before it is installed, and checked against the selected devices).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        this.placeOnHost(
            partOf(
                args,
                (terms) => planContainerToolkit({ ...terms, checkerBinary: terms.checkerBinary ?? LOCAL_ARTIFACTS.built().cdiCheck }),
                renderContainerToolkit,
            ).rendered,
            args,
        );
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
