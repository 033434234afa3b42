import * as pulumi from "@pulumi/pulumi";
import type { VerifyField } from "../../lib/discovery/verify";
import { DEFAULT_PARTITION_TABLE, FabricPartition, partitionTable } from "../../lib/fabric/partition-table";
import { GpuInventory } from "../../lib/gpu/inventory";
import type { HostStepTransport } from "../../lib/host/step-transport";
import { SSH_USER_DEFAULT } from "../../lib/host/transport-defaults";
import { BoardPlan, BoardSpec, planBoard, ServiceVmSpec, serviceVmSpec } from "../../lib/plan/board-plan";
import { chainDriftCheck } from "../../lib/plan/chain";
import { driftCheckCommand, HostDriftGuard } from "../../providers/drift";
import { FabricServiceVm } from "../fabric-service-vm";
import { GpuHost, SshHostTransport } from "../gpu-host";
import { GpuWorker, GpuWorkerArgs, GpuWorkerLxdTransport, WorkerPlanning, workerSpec } from "../gpu-worker";

/** One worker of a shared board: an LXD VM on the board's LXD server with one fabric partition's GPUs. */
export interface SharedGpuBoardWorker extends Omit<
    GpuWorkerArgs,
    "transport" | "hostSteps" | "inventory" | "selection" | "fabricManager" | "fabricPartition" | "planned"
> {
    /** The worker's name: its resources and its Concourse worker are named from it. Example: "hgx-a-w1". */
    name: string;
    /** How many GPUs: the planner picks a partition of that size. Give this, or `partition`. Example: 4. */
    gpus?: number;
    /** A partition by id (the board's table). Example: 1. */
    partition?: number;
    /**
     * The worker's VM on the board's LXD server (type virtual-machine). `network` (a managed bridge
     * with DHCP) and `address` (the VM's static IPv4 address on it) are required: LXD forwards
     * sshd to a VM only through NAT to that address, from `sshAddress`:`sshPort` (not a wildcard).
     * The image needs cloud-init (the SSH keys come in its user-data) and the LXD agent.
     */
    lxd: Omit<GpuWorkerLxdTransport, "type">;
}

export interface SharedGpuBoardArgs {
    /** The board host, over SSH: its libvirt runs the service VM. */
    ssh: SshHostTransport;
    /** What runs the host steps of the board and of its workers: "command" or "builtin" (HostAccessArgs.hostSteps). Default: DEFAULT_HOST_STEPS. */
    hostSteps?: HostStepTransport;
    /** The whole board: every GPU with its moduleId and pciBusId, and the NVSwitch count. */
    inventory: GpuInventory;
    /** Inventory fields whose differences only warn on the board host. Default: []. */
    warnOnly?: VerifyField[];
    /** The partition table: a built-in name ("hgx-h100-8gpu") or a list of {id, modules}. Default: "hgx-h100-8gpu". */
    partitionTable?: string | FabricPartition[];
    /** PCI addresses of the board's NVSwitches. Example: ["0000:09:00.0", "0000:0a:00.0", "0000:0b:00.0", "0000:0c:00.0"]. */
    nvswitchPci: string[];
    /** PCI address of the NVSwitch memory controller (HGX: PMC-Sierra 11f8:4128). Example: ["0000:03:00.1"]. Default: []. */
    memoryControllerPci?: string[];
    /** The service VM: `image` is required; name defaults to <board>-fabric, the rest to SERVICE_VM_DEFAULTS. */
    serviceVm: Partial<ServiceVmSpec> & { image: string };
    /** The board's workers, each an LXD VM with the GPUs of its fabric partition. */
    workers: SharedGpuBoardWorker[];
    /**
     * The board's plan, made from these same arguments (`planBoard(boardSpec(name, args))`): a program
     * that validated and planned its whole stack first hands it over, and the board and its workers
     * build from it, parsing and planning nothing again. Default: planned here from the arguments.
     */
    planned?: BoardPlan;
}

/** The board as planning sees it: its settings with defaults applied, each worker's spec without an inventory yet. */
export function boardSpec(name: string, args: SharedGpuBoardArgs, planning: WorkerPlanning = {}): BoardSpec {
    return {
        name,
        user: args.ssh.user ?? SSH_USER_DEFAULT,
        inventory: args.inventory,
        warnOnly: args.warnOnly ?? [],
        table: partitionTable(args.partitionTable ?? DEFAULT_PARTITION_TABLE, name),
        nvswitchPci: args.nvswitchPci,
        memoryControllerPci: args.memoryControllerPci ?? [],
        serviceVm: serviceVmSpec(name, args.serviceVm),
        workers: args.workers.map(({ name: worker, gpus, partition, lxd, ...settings }) => {
            const {
                inventory: _board,
                fabricPartition: _none,
                ...spec
            } = workerSpec(worker, { ...settings, transport: { lxd: { ...lxd, type: "virtual-machine" } }, inventory: args.inventory }, planning);
            return { spec, ask: { ...(gpus !== undefined ? { gpus } : {}), ...(partition !== undefined ? { partition } : {}) } };
        }),
    };
}

/** The one plan of a shared board from its arguments: its spec (each worker's settings parsed once), then planBoard. */
export function planSharedBoard(name: string, args: SharedGpuBoardArgs, planning: WorkerPlanning = {}): BoardPlan {
    return planBoard(boardSpec(name, args, planning));
}

/**
 * A GPU board shared by several workers through NVIDIA's shared NVSwitch model: GpuHost checks
 * the board, FabricServiceVm runs fabricmanager in a service VM with the partitions the planner
 * picked active, and each worker is a GpuWorker in an LXD VM with its partition's GPUs (by PCI
 * address), created once the service VM reports the partitions active.
 */
export class SharedGpuBoard extends pulumi.ComponentResource {
    /** The board's name (this component's name). */
    public readonly boardName: string;
    /** The workers, in the order given. */
    public readonly workers: GpuWorker[];
    public readonly serviceVm: FabricServiceVm;
    /** Per worker: its partition, the partition's module ids and the GPUs' PCI addresses on the board. */
    public readonly partitions: { worker: string; partition: number; modules: number[]; pci: string[] }[];

    constructor(name: string, args: SharedGpuBoardArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:board:SharedGpuBoard", name, {}, opts);
        this.boardName = name;
        const plan = args.planned ?? planSharedBoard(name, args);
        const host = new GpuHost(
            plan.hostComponent,
            {
                transport: { ssh: args.ssh },
                hostSteps: args.hostSteps,
                inventory: args.inventory,
                driverVersion: plan.verify.driverPin,
                warnOnly: plan.verify.warnOnly,
            },
            { parent: this },
        );
        const guard = new HostDriftGuard(
            `${name}-drift`,
            { connection: host.connection, command: driftCheckCommand(host.user), check: chainDriftCheck([plan.serviceVm]) },
            { parent: this, dependsOn: [host] },
        );
        this.serviceVm = new FabricServiceVm(
            plan.serviceVm.name,
            {
                connection: host.connection,
                user: host.user,
                hostSteps: host.hostSteps,
                epoch: guard.epoch,
                ...plan.serviceVm.settings,
            },
            { parent: this, dependsOn: [host, guard] },
        );
        // Each worker builds from its part of the board's plan (its partition's GPUs, its own host plan).
        this.workers = args.workers.map(({ name: worker, gpus: _gpus, partition: _partition, lxd, ...settings }, i) => {
            const spec = plan.workerSpecs[i];
            return new GpuWorker(
                worker,
                {
                    ...settings,
                    transport: { lxd: { ...lxd, type: "virtual-machine" } },
                    hostSteps: args.hostSteps,
                    inventory: spec.inventory,
                    selection: spec.selection,
                    fabricManager: spec.fabricManager,
                    fabricPartition: spec.fabricPartition,
                    planned: plan.workers[i],
                },
                { parent: this, dependsOn: [this.serviceVm] },
            );
        });
        this.partitions = plan.partitions.map((p) => ({
            worker: p.worker,
            partition: p.partition.id,
            modules: p.partition.modules,
            pci: p.gpus.map((g) => g.pciBusId ?? ""),
        }));
        this.registerOutputs({ partitions: this.partitions });
    }
}
