import * as pulumi from "@pulumi/pulumi";
import type { VerifyField } from "../../lib/discovery/verify";
import { GpuInventory } from "../../lib/gpu/inventory";
import { DEFAULT_HOST_STEPS, HostStepTransport } from "../../lib/host/step-transport";
import { stepResourceName } from "../../lib/host/steps";
import { onTransport, Transport } from "../../lib/host/transport";
import { lxdTransportShape, SSH_USER_DEFAULT } from "../../lib/host/transport-defaults";
import { LxdDevices } from "../../lib/lxd/types";
import { LxdInstancePlanInput, planGpuHost } from "../../lib/plan/gpu-host";
import type { SshHostShape } from "../../lib/settings/worker-spec";
import { InventoryCheck } from "../../providers/checks/inventory-check";
import { machineOf } from "../../providers/host/command-connection";
import { HostConnection } from "../../providers/host/resources";
import { stepTransport } from "../../providers/host/step-transport";
import { LxdServerArg, reachHost, SshHostTransport } from "../host-access";

export { SshHostTransport, SshJumpHost } from "../host-access";

/** An LXD instance this component creates, reached over SSH through a loopback proxy device. */
export interface LxdHostTransport extends LxdServerArg {
    /** Instance name on the server. Example: "gpu-a". Changing it replaces the instance. */
    instance: string;
    /** Image alias or fingerprint on the server. Example: "gpu-workers/debian-12". */
    image: string;
    /** "container" or "virtual-machine". Default: LXD_TRANSPORT_DEFAULTS.type. */
    type?: "container" | "virtual-machine";
    /** Profiles, applied in order. Default: LXD_TRANSPORT_DEFAULTS.profiles. */
    profiles?: string[];
    /** Instance config keys. Example: { "security.nesting": "true" }. Default: LXD_TRANSPORT_DEFAULTS.config. */
    config?: Record<string, string>;
    /** Devices besides the sshd proxy (GPUs, datasets), e.g. from lxdDevicesForWorker. Default: {}. */
    devices?: LxdDevices;
    /** Address on the LXD server the sshd proxy listens on. Default: LXD_TRANSPORT_DEFAULTS.sshAddress. */
    sshAddress?: string;
    /** Port on the LXD server the sshd proxy listens on. Example: 2201. */
    sshPort: number;
    /** Login user inside the instance (the key placed there is this user's). Default: LXD_TRANSPORT_DEFAULTS.user. */
    user?: string;
    /** virtual-machine only: the managed bridge network on the server for the VM's nic. Example: "lxdbr0". */
    network?: string;
    /** virtual-machine only: the VM's static IPv4 address on `network`; sshd is reached through NAT to it. Example: "10.10.0.11". */
    address?: string;
}

export interface GpuHostArgs {
    /** Exactly one of ssh or lxd. */
    transport: Transport<SshHostTransport, LxdHostTransport>;
    /** The declared GPU inventory that discovery verifies (inventorySchema.parse(...)). */
    inventory: GpuInventory;
    /**
     * The driver pin, checked against the loaded driver. "none": the host runs no NVIDIA driver
     * for its GPUs (a shared board, whose GPUs go to VMs), so none is checked. Default: "preinstalled" (any loaded driver).
     */
    driverVersion?: string;
    /** Inventory fields whose differences only warn. Example: ["memory"]. Default: []. */
    warnOnly?: VerifyField[];
    /** What runs discovery, and what the components on this host run their steps with (`hostSteps`): "command" or "builtin" (HostAccessArgs.hostSteps). Default: DEFAULT_HOST_STEPS. */
    hostSteps?: HostStepTransport;
}

/**
 * One host: how to reach it (creating the LXD instance when that is the transport), and
 * a check that its hardware matches the declared inventory. Everything else waits for it.
 */
export class GpuHost extends pulumi.ComponentResource {
    public readonly connection: pulumi.Output<HostConnection>;
    /** Login user; commands run through sudo unless it is root. */
    public readonly user: string;
    /** The transport of host steps this host was given, for the components on it (HostAccessArgs.hostSteps). */
    public readonly hostSteps: HostStepTransport;
    /** Warnings from the inventory check (fields the stack chose to only warn about). */
    public readonly inventoryWarnings: pulumi.Output<string[]>;

    constructor(name: string, args: GpuHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:host:GpuHost", name, {}, opts);
        const plan = planGpuHost(
            name,
            onTransport<SshHostTransport, LxdHostTransport, Transport<SshHostShape, LxdInstancePlanInput>>(args.transport, {
                ssh: (ssh) => ({ ssh: { user: ssh.user ?? SSH_USER_DEFAULT } }),
                lxd: (lxd) => ({ lxd: { ...lxdTransportShape(lxd), devices: lxd.devices ?? {} } }),
            }),
        );
        this.user = plan.user;
        this.hostSteps = args.hostSteps ?? DEFAULT_HOST_STEPS;
        // Children do not inherit a component's dependsOn: what this host waits for, its first resources wait for.
        const d = opts?.dependsOn;
        const before = (d === undefined ? [] : Array.isArray(d) ? d : [d]) as pulumi.Input<pulumi.Resource>[];
        const { connection, reachable } = reachHost(this, name, args.transport, plan, before);
        this.connection = connection;
        const discovery = stepTransport(this.hostSteps).command(
            stepResourceName(name, "discover"),
            {
                connection: this.connection,
                create: plan.discover.command,
                stdin: plan.discover.script,
                // A new machine behind the address is discovered again.
                triggers: [machineOf(this.connection)],
                quiet: true,
            },
            { parent: this, dependsOn: [...reachable, ...before] },
        );
        const check = new InventoryCheck(
            stepResourceName(name, "inventory"),
            {
                host: name,
                declared: args.inventory,
                discovery: discovery.stdout,
                driverPin: args.driverVersion ?? "preinstalled",
                warnOnly: args.warnOnly ?? [],
            },
            { parent: this, dependsOn: [discovery] },
        );
        this.inventoryWarnings = check.warnings;
        this.registerOutputs({ connection: this.connection, inventoryWarnings: this.inventoryWarnings });
    }
}
