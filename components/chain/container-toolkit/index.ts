import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { ContainerToolkitSettings, renderContainerToolkit } from "../../lib/render/container-toolkit";

export interface ContainerToolkitArgs extends HostAccessArgs, ContainerToolkitSettings {}

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, checked against the selected devices
 * on the host and against the project's CDI validator here).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        this.placeOnHost(renderContainerToolkit(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
