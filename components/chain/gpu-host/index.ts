import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import type { VerifyField } from "../../lib/discovery/verify";
import { GpuInventory } from "../../lib/gpu/inventory";
import { DEFAULT_HOST_STEPS, HostStepTransport } from "../../lib/host/step-transport";
import { stepResourceName } from "../../lib/host/steps";
import { onTransport, Transport } from "../../lib/host/transport";
import { LxdDevices } from "../../lib/lxd/types";
import { planGpuHost } from "../../lib/plan/gpu-host";
import type { AccessShape } from "../../lib/plan/host-access";
import { lxdTransportSchema, planTransport, sshPlanSchema } from "../../lib/settings/transport-schema";
import { InventoryCheck } from "../../providers/checks/inventory-check";
import { machineOf } from "../../providers/host/command-connection";
import { HostConnection } from "../../providers/host/resources";
import { stepTransport } from "../../providers/host/step-transport";
import { LxdServerArg, reachHost, SshHostTransport } from "../host-access";

export { SshHostTransport, SshJumpHost } from "../host-access";

/**
 * An LXD instance this component creates, reached over SSH through a proxy device on its server
 * (lxdTransportSchema: each field's doc and default are written there), and how to reach its server.
 */
export interface LxdHostTransport extends z.input<typeof lxdTransportSchema>, LxdServerArg {
    /** Devices besides the sshd proxy (GPUs, datasets), e.g. from lxdDevicesForWorker. Default: {}. */
    devices?: LxdDevices;
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
        const planned = planTransport(args.transport, { ssh: sshPlanSchema, lxd: lxdTransportSchema });
        if ("problems" in planned) throw new Error(`GpuHost ${name}: ${planned.problems.join("; ")}`);
        const plan = planGpuHost(
            name,
            onTransport(planned.data, {
                ssh: (ssh): AccessShape => ({ ssh }),
                lxd: (lxd): AccessShape => ({ lxd: { ...lxd, devices: args.transport.lxd?.devices ?? {} } }),
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
