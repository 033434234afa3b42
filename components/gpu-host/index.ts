import * as pulumi from "@pulumi/pulumi";
import type { VerifyField } from "../discovery/verify";
import { GpuInventory } from "../gpu/inventory";
import { readHostScript } from "../host-scripts";
import { SshKeyPair } from "../keys";
import { HostCommand } from "../remote/host-command";
import { HostConnection } from "../host-resources";
import { lxdSshProxyDevice } from "../lxd/devices";
import { LxdInstance } from "../lxd/instance";
import { LxdDevices, LxdServer } from "../lxd/types";
import { InventoryCheck } from "./inventory-check";
import { authorizedKeysPath, LXD_SSHD_DROP_IN, renderSshdDropIn } from "./lxd-access";

/** A machine reached directly over SSH. */
export interface SshHostTransport {
    host: pulumi.Input<string>;
    port?: pulumi.Input<number>;
    user?: string;
    /** OpenSSH private key; keep it a Pulumi secret. */
    privateKey: pulumi.Input<string>;
    /** Pinned host public key, "ssh-ed25519 AAAA...". */
    hostKey: pulumi.Input<string>;
}

/** An LXD instance this component creates, reached over SSH through a loopback proxy device. */
export interface LxdHostTransport {
    server: pulumi.Input<LxdServer>;
    instance: string;
    image: string;
    type?: "container" | "virtual-machine";
    profiles?: string[];
    config?: Record<string, string>;
    /** Devices besides the sshd proxy (GPUs, datasets), e.g. from lxdDevicesForWorker. */
    devices: LxdDevices;
    /** Loopback address and port on the LXD server that forward to the instance's sshd. */
    sshAddress: string;
    sshPort: number;
    user?: string;
}

export interface GpuHostArgs {
    /** Exactly one of ssh or lxd. */
    transport: { ssh: SshHostTransport } | { lxd: LxdHostTransport };
    /** The declared GPU inventory that discovery verifies. */
    inventory: GpuInventory;
    /** The driver pin, checked against the loaded driver ("preinstalled" skips that check). */
    driverVersion: string;
    /** Inventory fields whose differences warn instead of failing (e.g. ["memory"]). */
    warnOnly?: VerifyField[];
}

/**
 * One host: how to reach it (creating the LXD instance when that is the transport), and
 * a check that its hardware matches the declared inventory. Everything else waits for it.
 */
export class GpuHost extends pulumi.ComponentResource {
    public readonly connection: pulumi.Output<HostConnection>;
    /** Login user; commands run through sudo unless it is root. */
    public readonly user: string;
    /** Warnings from the inventory check (fields the stack chose to only warn about). */
    public readonly inventoryWarnings: pulumi.Output<string[]>;

    constructor(name: string, args: GpuHostArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:host:GpuHost", name, {}, opts);
        let reachable: pulumi.Resource[] = [];
        if ("ssh" in args.transport) {
            const ssh = args.transport.ssh;
            this.user = ssh.user ?? "root";
            this.connection = pulumi.secret(pulumi.output({ host: ssh.host, port: ssh.port ?? 22, user: this.user, privateKey: ssh.privateKey, hostKey: ssh.hostKey }) as pulumi.Output<HostConnection>);
        } else {
            const lxd = args.transport.lxd;
            this.user = lxd.user ?? "root";
            const userKey = new SshKeyPair(`${name}-ssh-key`, { comment: `gpu-workers@${name}` }, { parent: this });
            const hostKey = new SshKeyPair(`${name}-ssh-host-key`, { comment: `${lxd.instance}-host` }, { parent: this });
            const instance = new LxdInstance(`${name}-instance`, {
                server: lxd.server,
                name: lxd.instance,
                image: lxd.image,
                type: lxd.type ?? "container",
                profiles: lxd.profiles ?? ["default"],
                config: lxd.config ?? {},
                devices: {
                    ...lxd.devices,
                    sshd: lxdSshProxyDevice({ address: lxd.sshAddress, port: lxd.sshPort }),
                },
                files: [
                    { path: authorizedKeysPath(this.user), content: userKey.publicKeyOpenssh, mode: "0600" },
                    { path: "/etc/ssh/ssh_host_ed25519_key", content: hostKey.privateKeyOpenssh, mode: "0600" },
                    { path: "/etc/ssh/ssh_host_ed25519_key.pub", content: hostKey.publicKeyOpenssh, mode: "0644" },
                    { path: LXD_SSHD_DROP_IN, content: renderSshdDropIn(), mode: "0644" },
                ],
                waitFor: { command: ["sh", "-c", "systemctl is-active --quiet ssh || systemctl is-active --quiet sshd"], timeoutSeconds: 120 },
            }, { parent: this });
            reachable = [instance];
            this.connection = pulumi.secret(pulumi.output({
                host: lxd.sshAddress,
                port: lxd.sshPort,
                user: this.user,
                privateKey: userKey.privateKeyOpenssh,
                // The key type and body, as known_hosts takes it.
                hostKey: hostKey.publicKeyOpenssh.apply((k) => k.split(" ").slice(0, 2).join(" ")),
                // A replaced instance (new image or type) has the same address and keys: this tells the steps apart.
                machineId: instance.uuid,
            }));
        }
        const discovery = new HostCommand(`${name}-discover`, {
            connection: this.connection,
            create: this.user === "root" ? "bash -s" : "sudo -n bash -s",
            stdin: readHostScript("discover-gpus.sh"),
        }, { parent: this, dependsOn: reachable });
        const check = new InventoryCheck(`${name}-inventory`, {
            host: name,
            declared: args.inventory,
            discovery: discovery.stdout,
            driverPin: args.driverVersion,
            warnOnly: args.warnOnly ?? [],
        }, { parent: this, dependsOn: [discovery] });
        this.inventoryWarnings = check.warnings;
        this.registerOutputs({ connection: this.connection, inventoryWarnings: this.inventoryWarnings });
    }
}
