/**
 * Turns the validated stack config into components: one GpuWorker per host. Secrets are
 * read here, from the config keys the hosts name, and never leave Pulumi's secret outputs.
 */
import * as pulumi from "@pulumi/pulumi";
import { GpuWorker, GpuWorkerSecrets } from "../components/worker";
import { HostConfig } from "./schema";

/** Reads the secret config keys a host names. */
export function hostSecrets(host: HostConfig, config: pulumi.Config): GpuWorkerSecrets {
    const secrets: GpuWorkerSecrets = {};
    if ("ssh" in host.transport) secrets.sshPrivateKey = config.requireSecret(host.transport.ssh.privateKeySecret);
    if ("lxd" in host.transport && host.transport.lxd.server.url) {
        secrets.lxdClientCert = config.requireSecret(host.transport.lxd.server.clientCertSecret!);
        secrets.lxdClientKey = config.requireSecret(host.transport.lxd.server.clientKeySecret!);
    }
    if (host.concourse.workerKeySecret) secrets.workerPrivateKey = config.requireSecret(host.concourse.workerKeySecret);
    return secrets;
}

export function buildFleet(hosts: HostConfig[], config: pulumi.Config): GpuWorker[] {
    return hosts.map((host) => new GpuWorker(host.name, { host, secrets: hostSecrets(host, config) }));
}
