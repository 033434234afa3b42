import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-component";
import { CdiSpecCheck } from "./cdi-spec-check";
import { CDI_SPEC_PATHS, ContainerToolkitSettings, renderContainerToolkit } from "./render";

export interface ContainerToolkitArgs extends HostAccessArgs, ContainerToolkitSettings {}

/**
 * nvidia-container-toolkit or amd-container-toolkit at a pinned version, its runtime config,
 * and the CDI spec (regenerated when the driver changes, checked against the selected devices
 * on the host and against the project's CDI validator here).
 */
export class ContainerToolkit extends HostStepsComponent {
    constructor(name: string, args: ContainerToolkitArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:toolkit:ContainerToolkit", name, opts);
        const steps = this.placeOnHost(renderContainerToolkit(args), args);
        const generated = steps.get("cdi-spec");
        if (generated) {
            new CdiSpecCheck(`${name}-cdi-spec-check`, { host: name, path: CDI_SPEC_PATHS[args.vendor], ensureOutput: generated.stdout }, { parent: this, dependsOn: [generated] });
        }
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
export * from "./render";
