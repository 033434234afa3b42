import * as pulumi from "@pulumi/pulumi";
import { HostConfig } from "../../stacks/schema";
import { ConcourseWorker } from "../concourse-worker";
import { ContainerdRuntime } from "../containerd";
import { ContainerToolkit } from "../container-toolkit";
import { FabricManager } from "../fabric-manager";
import { GpuDriver } from "../gpu-driver";
import { GpuHost, GpuHostArgs } from "../gpu-host";
import { HostAccessArgs } from "../host-component";
import { LxdServer } from "../lxd/types";
import { RuncWrapper } from "../runc-wrapper";
import { HostDriftGuard } from "../drift";
import { chainDriftCheck, ChainLink, lxdInstanceSettings, renderChain, workerSettings, WorkerSettings } from "./settings";

export interface GpuWorkerSecrets {
    /** SSH private key for an ssh transport. */
    sshPrivateKey?: pulumi.Input<string>;
    /** The Concourse worker's TSA key; generated when absent. */
    workerPrivateKey?: pulumi.Input<string>;
    /** Client certificate and key for an LXD server reached over HTTPS. */
    lxdClientCert?: pulumi.Input<string>;
    lxdClientKey?: pulumi.Input<string>;
}

export interface GpuWorkerArgs {
    /** One validated host from the stack config (see stacks/config.ts parseStackConfig). */
    host: HostConfig;
    secrets: GpuWorkerSecrets;
}

/**
 * A whole GPU worker on one host: GpuHost, then GpuDriver -> ContainerToolkit ->
 * ContainerdRuntime -> RuncWrapper -> ConcourseWorker (and FabricManager on NVSwitch
 * boards), each waiting for the one before it.
 */
export class GpuWorker extends pulumi.ComponentResource {
    /** The host's name in the stack. */
    public readonly hostName: string;
    public readonly tags: pulumi.Output<string[]>;
    public readonly connection: GpuHost["connection"];
    /** The worker's public TSA key, when the worker is part of this stack. */
    public readonly workerPublicKey?: pulumi.Output<string>;
    /** Set when the chain stops before the Concourse worker, saying why. */
    public readonly stoppedBeforeWorker?: string;

    constructor(name: string, args: GpuWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:worker:GpuWorker", name, {}, opts);
        const host = args.host;
        this.hostName = host.name;
        const settings = workerSettings(host);
        const gpuHost = new GpuHost(`${name}-host`, {
            transport: transportArgs(host, args.secrets, settings.plan),
            inventory: host.inventory,
            driverVersion: host.driver.version,
            // A pinned driver that differs is the driver step's to fix, so it only warns here.
            warnOnly: host.driver.version === "preinstalled" ? host.verify.warnOnly : [...new Set([...host.verify.warnOnly, "driver" as const])],
        }, { parent: this });
        const links = renderChain(name, settings);
        const guard = new HostDriftGuard(`${name}-drift`, {
            connection: gpuHost.connection,
            check: chainDriftCheck(links),
        }, { parent: this, dependsOn: [gpuHost] });
        const access: HostAccessArgs = { connection: gpuHost.connection, user: gpuHost.user, epoch: guard.epoch };

        const created = new Map<string, pulumi.Resource>();
        for (const link of links) {
            const dependsOn = [gpuHost, guard, ...link.dependsOn.map((d) => created.get(d)!)];
            created.set(link.name, createLink(link, settings, access, args.secrets, { parent: this, dependsOn }));
        }
        const concourse = [...created.values()].find((r): r is ConcourseWorker => r instanceof ConcourseWorker);
        this.tags = pulumi.output(settings.plan.tags);
        this.connection = gpuHost.connection;
        this.workerPublicKey = concourse?.workerPublicKey;
        this.stoppedBeforeWorker = settings.stoppedBeforeWorker;
        if (settings.stoppedBeforeWorker) pulumi.log.warn(settings.stoppedBeforeWorker, this);
        this.registerOutputs({ tags: this.tags, workerPublicKey: this.workerPublicKey });
    }
}

function createLink(link: ChainLink, s: WorkerSettings, access: HostAccessArgs, secrets: GpuWorkerSecrets, o: pulumi.ComponentResourceOptions): pulumi.Resource {
    switch (link.component) {
        case "GpuDriver": return new GpuDriver(link.name, { ...access, ...s.driver! }, o);
        case "FabricManager": return new FabricManager(link.name, { ...access, ...s.fabricManager! }, o);
        case "ContainerToolkit": return new ContainerToolkit(link.name, { ...access, ...s.toolkit! }, o);
        case "ContainerdRuntime": return new ContainerdRuntime(link.name, { ...access, ...s.containerd }, o);
        case "RuncWrapper": return new RuncWrapper(link.name, { ...access, ...s.wrapper }, o);
        case "ConcourseWorker": return new ConcourseWorker(link.name, { ...access, ...s.concourse!, workerPrivateKey: secrets.workerPrivateKey }, o);
    }
}

function transportArgs(host: HostConfig, secrets: GpuWorkerSecrets, plan: WorkerSettings["plan"]): GpuHostArgs["transport"] {
    const t = host.transport;
    if ("ssh" in t) {
        if (secrets.sshPrivateKey === undefined) throw new Error(`host ${host.name}: the ssh transport needs its private key (config key ${t.ssh.privateKeySecret})`);
        return { ssh: { host: t.ssh.host, port: t.ssh.port, user: t.ssh.user, privateKey: secrets.sshPrivateKey, hostKey: t.ssh.hostKey } };
    }
    const lxd = t.lxd;
    const server: pulumi.Input<LxdServer> = lxd.server.url
        ? pulumi.output({ url: lxd.server.url, clientCert: secrets.lxdClientCert, clientKey: secrets.lxdClientKey, serverCert: lxd.server.serverCert })
        : { socket: lxd.server.socket };
    return {
        lxd: {
            server,
            instance: lxd.instance,
            image: lxd.image,
            type: lxd.type,
            profiles: lxd.profiles,
            ...lxdInstanceSettings(host, lxd, plan),
            sshAddress: lxd.sshAddress,
            sshPort: lxd.sshPort,
            user: lxd.user,
        },
    };
}
