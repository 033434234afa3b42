import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { ContainerToolkitTerms, planContainerToolkit } from "../../lib/plan/leaf-terms";
import { renderContainerToolkit } from "../../lib/render/container-toolkit";

/** The host, and the toolkit in a user's terms: the inventory, the GPU selection, versions. It plans the rest. */
export interface ContainerToolkitArgs extends HostAccessArgs, ContainerToolkitTerms {}

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, checked against the selected devices
 * on the host and against the project's CDI validator here).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        this.placeOnHost(renderContainerToolkit(planContainerToolkit(args)), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
