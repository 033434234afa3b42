import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planFabricManager } from "../../lib/links/fabric-manager/plan";
import { FabricManagerSettings, renderFabricManager } from "../../lib/links/fabric-manager/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and fabricmanager's settings (its partitions), or GpuWorker's planned part. */
export type FabricManagerArgs = LeafArgs<FabricManagerSettings, FabricManagerSettings>;

/** NVIDIA fabricmanager; create it only where the inventory declares NVSwitches. */
export class FabricManager extends HostStepsComponent {
    constructor(name: string, args: FabricManagerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:fabric:FabricManager", name, opts);
        this.placeOnHost(partOf(args, planFabricManager, renderFabricManager).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
