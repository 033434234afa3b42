import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-component";
import { ContainerToolkitSettings, renderContainerToolkit } from "./render";

export interface ContainerToolkitArgs extends HostAccessArgs, ContainerToolkitSettings {}

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, checked against the selected devices).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        this.placeOnHost(renderContainerToolkit(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
export * from "./render";
