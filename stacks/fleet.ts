/**
 * Turns the validated stack config into components: one GpuWorker per host. Secrets are
 * read here, from the config keys the hosts name, and never leave Pulumi's secret outputs.
 */
import * as pulumi from "@pulumi/pulumi";
import { GpuWorker, GpuWorkerArgs } from "../components/chain/gpu-worker";
import { onTransport } from "../components/lib/host/transport";
import { HostConfig, LxdTransport, SshTransport } from "./schema";

/** Looks up the value of a secret config key. */
export type SecretLookup = (key: string) => pulumi.Input<string>;

/** One host of the stack as GpuWorker's arguments, its secrets taken from the keys it names. */
export function workerArgs(host: HostConfig, secret: SecretLookup): GpuWorkerArgs {
    const { name: _name, transport, inventory, concourse, ...settings } = host;
    const { workerKeySecret, ...concourseSettings } = concourse;
    return {
        ...settings,
        inventory,
        transport: onTransport<SshTransport, LxdTransport, GpuWorkerArgs["transport"]>(transport, {
            ssh: ({ privateKeySecret, ...ssh }) => ({ ssh: { ...ssh, privateKey: secret(privateKeySecret) } }),
            lxd: ({ server, ...lxd }) => ({
                lxd: {
                    ...lxd,
                    server: server.url
                        ? pulumi.output({ url: server.url, clientCert: secret(server.clientCertSecret!), clientKey: secret(server.clientKeySecret!), serverCert: server.serverCert })
                        : { socket: server.socket },
                },
            }),
        }),
        concourse: { ...concourseSettings, ...(workerKeySecret ? { workerPrivateKey: secret(workerKeySecret) } : {}) },
    };
}

export function buildFleet(hosts: HostConfig[], config: pulumi.Config): GpuWorker[] {
    return hosts.map((host) => new GpuWorker(host.name, workerArgs(host, (key) => config.requireSecret(key))));
}
