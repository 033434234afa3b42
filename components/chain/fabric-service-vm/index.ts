import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { FabricServiceVmSettings, renderFabricServiceVm } from "../../lib/render/fabric-service-vm";

/** Its host (a shared board, reached over SSH) and the service VM's settings (see FabricServiceVmSettings). */
export interface FabricServiceVmArgs extends HostAccessArgs, FabricServiceVmSettings {}

/**
 * fabricmanager in a service VM on a board shared by several workers: binds the NVSwitches
 * and their memory controller to vfio-pci (again at every boot), defines, starts and marks
 * autostart the libvirt domain that gets them, and waits until the VM reports fabricmanager
 * running and the partitions active. Delete undefines the VM, removes its files and gives the
 * functions back to their drivers.
 */
export class FabricServiceVm extends HostStepsComponent {
    constructor(name: string, args: FabricServiceVmArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:fabric:FabricServiceVm", name, opts);
        this.placeOnHost(renderFabricServiceVm(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
