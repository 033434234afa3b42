import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { FabricManagerSettings, renderFabricManager } from "../../lib/render/fabric-manager";

export interface FabricManagerArgs extends HostAccessArgs, FabricManagerSettings {}

/** NVIDIA fabricmanager; create it only where the inventory declares NVSwitches. */
export class FabricManager extends HostStepsComponent {
    constructor(name: string, args: FabricManagerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:fabric:FabricManager", name, opts);
        this.placeOnHost(renderFabricManager(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
