import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { SERVICE_VM_DEFAULTS, serviceVmSpec } from "../../lib/plan/board-plan";
import { FabricServiceVmSettings, renderFabricServiceVm } from "../../lib/fabric/service-vm";

/**
 * Its host (a shared board, reached over SSH) and the service VM in a user's terms: the image,
 * the board's NVSwitches and the partitions to activate (ids of the board's partition table);
 * the VM's size, libvirt URI and wait default to SERVICE_VM_DEFAULTS, its name to <component>.
 */
export interface FabricServiceVmArgs
    extends
        HostAccessArgs,
        Omit<FabricServiceVmSettings, keyof typeof SERVICE_VM_DEFAULTS | "name" | "memoryControllerPci">,
        Partial<Pick<FabricServiceVmSettings, keyof typeof SERVICE_VM_DEFAULTS | "name" | "memoryControllerPci">> {}

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
        const { nvswitchPci, memoryControllerPci, partitions, image, diskGiB, network, vcpus, memoryMiB, libvirtUri, readyTimeoutSeconds } = args;
        const vm = { name: args.name ?? name, image, diskGiB, network, vcpus, memoryMiB, libvirtUri, readyTimeoutSeconds };
        const settings: FabricServiceVmSettings = {
            ...serviceVmSpec(name, vm),
            nvswitchPci,
            memoryControllerPci: memoryControllerPci ?? [],
            partitions,
        };
        this.placeOnHost(renderFabricServiceVm(settings), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
