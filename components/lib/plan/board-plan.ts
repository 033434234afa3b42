/**
 * The one plan of a board shared through fabricmanager's service VM (NVIDIA's shared NVSwitch
 * model): the partition each worker gets, the board host's own steps (discovery and the
 * inventory check, the NVSwitches to vfio-pci, the service VM) and files, and each worker's
 * host plan (an LXD VM with its partition's GPUs, planned by planHost like any worker).
 * SharedGpuBoard builds its resources from it and the offline render writes it out. Pure.
 */
import type { VerifyField } from "../discovery/verify";
import { PlannedPartition, planPartitions } from "../fabric/partitions";
import type { PartitionTable } from "../fabric/partition-table";
import type { GpuInventory } from "../gpu/inventory";
import { PlanError } from "../gpu/plan";
import { fileResourceName, stepResourceName } from "../host/steps";
import { FabricServiceVmSettings, renderFabricServiceVm } from "../fabric/service-vm";
import { GpuHostPlan, planGpuHost, PlannedStep } from "./gpu-host";
import { chainSteps, HostPlan, PlannedFile, planHost, StepsLink } from "./host-plan";
import { placeOnce } from "./place-files";
import { libvirtUri } from "../settings/value-patterns";
import type { WorkerSpec } from "../settings/worker-spec";

/** The service VM as a board declares it (the functions and partitions come from the board). */
export type ServiceVmSpec = Omit<FabricServiceVmSettings, "nvswitchPci" | "memoryControllerPci" | "partitions">;

/** Defaults of the service VM's settings; its name defaults to `<board>-fabric`. */
export const SERVICE_VM_DEFAULTS = { vcpus: 2, memoryMiB: 4096, libvirtUri: "qemu:///system", readyTimeoutSeconds: 900 } as const;

/** The service VM's settings with defaults applied. */
export function serviceVmSpec(board: string, given: Partial<ServiceVmSpec> & { image: string }): ServiceVmSpec {
    const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<ServiceVmSpec> & { image: string };
    const spec = { name: `${board}-fabric`, ...SERVICE_VM_DEFAULTS, ...defined };
    const uri = libvirtUri.safeParse(spec.libvirtUri);
    if (!uri.success) throw new PlanError("serviceVm.libvirtUri", `${JSON.stringify(spec.libvirtUri)}: ${uri.error.issues[0].message}`);
    return spec;
}

/** What a worker of the board asks for: a number of GPUs, or a partition by id. */
export interface PartitionAsk {
    gpus?: number;
    partition?: number;
}

/** A worker of the board, before its partition is known: every setting, its LXD VM, no inventory. */
export interface BoardWorkerSpec {
    spec: Omit<WorkerSpec, "inventory" | "fabricPartition">;
    ask: PartitionAsk;
}

export interface BoardSpec {
    /** The board host's name: its resources are named from it. */
    name: string;
    /** Login user on the board host (SSH). */
    user: string;
    /** The whole board: every GPU with its module id and PCI address, and the NVSwitch count. */
    inventory: GpuInventory;
    /** Inventory fields whose differences only warn. */
    warnOnly: VerifyField[];
    table: PartitionTable;
    nvswitchPci: string[];
    memoryControllerPci: string[];
    serviceVm: ServiceVmSpec;
    workers: BoardWorkerSpec[];
}

export interface BoardPlan {
    name: string;
    hostComponent: string;
    host: GpuHostPlan;
    /** The board runs no NVIDIA driver of its own for the GPUs (they go to the worker VMs): no driver check. */
    verify: { driverPin: "none"; warnOnly: VerifyField[] };
    partitions: PlannedPartition[];
    /** The FabricServiceVm component: its name, settings and what it places and runs. */
    serviceVm: StepsLink & { settings: FabricServiceVmSettings };
    steps: PlannedStep[];
    files: PlannedFile[];
    /** Each worker VM's spec (its partition's GPUs as its inventory), and its host plan, in the board's order. */
    workerSpecs: WorkerSpec[];
    workers: HostPlan[];
}

/**
 * A worker VM's own spec from its partition: the VM sees the partition's GPUs as 0..N-1 (so
 * its inventory is that view, without the board's PCI addresses and UUIDs, which discovery in
 * the VM cannot match), the host PCI address of each for its LXD gpu devices, and no
 * fabricmanager (the board's service VM runs it).
 */
export function partitionWorkerSpec(worker: BoardWorkerSpec, planned: PlannedPartition): WorkerSpec {
    const missing = planned.gpus.filter((g) => !g.pciBusId);
    if (missing.length > 0)
        throw new Error(
            `${worker.spec.name}: GPU ${missing.map((g) => g.index).join(", ")} of its partition ${planned.partition.id} has no pciBusId: a worker VM gets its GPUs by PCI address`,
        );
    return {
        ...worker.spec,
        selection: "all",
        fabricManager: { mode: "off", partitions: [] },
        inventory: {
            vendor: "nvidia",
            nvswitches: 0,
            tegra: false,
            gpus: planned.gpus.map((g, index) => ({ index, model: g.model, memoryMiB: g.memoryMiB, integrated: false, mig: [] })),
        },
        fabricPartition: { id: planned.partition.id, hostPciBusIds: planned.gpus.map((g) => g.pciBusId!) },
    };
}

export function planBoard(spec: BoardSpec): BoardPlan {
    const partitions = planPartitions(
        spec.table,
        spec.inventory,
        spec.workers.map((w) => ({ worker: w.spec.name, ...w.ask })),
    );
    const hostComponent = `${spec.name}-host`;
    const host = planGpuHost(hostComponent, { ssh: { user: spec.user } });
    const settings: FabricServiceVmSettings = {
        ...spec.serviceVm,
        nvswitchPci: spec.nvswitchPci,
        memoryControllerPci: spec.memoryControllerPci,
        partitions: partitions.map((p) => p.partition.id),
    };
    const serviceVm = { component: "FabricServiceVm", name: `${spec.name}-fabric-vm`, rendered: renderFabricServiceVm(settings), dependsOn: [], settings };
    const placement = placeOnce(spec.name, [{ owner: "FabricServiceVm", files: serviceVm.rendered.files }]);
    const inventoryStep = host.steps[host.steps.length - 1].name;
    const workerSpecs = spec.workers.map((w, i) => partitionWorkerSpec(w, partitions[i]));
    const ready = stepResourceName(serviceVm.name, "service-vm");
    // A worker VM may start only once its partition is active: its instance waits for the service VM.
    const workers = workerSpecs.map((w) => {
        const plan = planHost(w);
        return {
            ...plan,
            steps: plan.steps.map((step) =>
                step.name === stepResourceName(plan.hostComponent, "instance") ? { ...step, dependsOn: [...step.dependsOn, ready] } : step,
            ),
        };
    });
    return {
        name: spec.name,
        hostComponent,
        host,
        verify: { driverPin: "none", warnOnly: spec.warnOnly },
        partitions,
        serviceVm,
        steps: [...host.steps, ...chainSteps([serviceVm], inventoryStep)],
        files: placement.placed.map(({ owner, ...file }) => ({ ...file, component: owner, resource: fileResourceName(serviceVm.name, file) })),
        workerSpecs,
        workers,
    };
}
