/**
 * The validated stack config as the components' arguments: each host's GpuWorkerArgs and the
 * web's ConcourseWebArgs. Secrets are read here, from the config keys the stack names, and
 * never leave Pulumi's secret outputs. `pulumi up` (stacks/resources/fleet.ts, board-args.ts) and the
 * offline render go through this same mapping.
 */
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import {
    ConcourseWebArgs,
    GpuWorkerArgs,
    GpuWorkerLxdTransport,
    HostStepTransport,
    KubernetesGpuNodesArgs,
    onTransport,
    SshHostTransport,
    WebForWorkers,
} from "../../components/program";
import type { ConcourseRelease } from "../../components/program";
import type { ClusterConfig } from "../config/kubernetes-schema";
import { HostConfig, LxdTransport, SshTransport } from "../config/schema";
import { WebConfig } from "../config/web-schema";

/** Looks up the value of a secret config key. */
export type SecretLookup = (key: string) => pulumi.Input<string>;

/** A release uploaded from here, its path taken relative to the project folder. */
function releaseFrom(binary: ConcourseRelease, baseDir: string): ConcourseRelease {
    return "path" in binary ? { path: path.resolve(baseDir, binary.path) } : binary;
}

function lxdServer(server: LxdTransport["server"], secret: SecretLookup) {
    return server.url
        ? pulumi.output({
              url: server.url,
              clientCert: secret(server.clientCertSecret!),
              clientKey: secret(server.clientKeySecret!),
              serverCert: server.serverCert,
          })
        : { socket: server.socket };
}

/** An SSH transport as the components take it: each private key (the host's, its jump host's) read from the secret it names. */
export function sshTransportArgs({ privateKeySecret, proxy, ...ssh }: SshTransport, secret: SecretLookup): SshHostTransport {
    return {
        ...ssh,
        privateKey: secret(privateKeySecret),
        ...(proxy ? { proxy: (({ privateKeySecret: jumpKey, ...jump }) => ({ ...jump, privateKey: secret(jumpKey) }))(proxy) } : {}),
    };
}

function serverKey(server: LxdTransport["server"]): string {
    return server.url ?? server.socket ?? "local";
}

/** The stack's web as its workers see it: what it gives them, and where it runs. */
export interface StackWeb {
    config: WebConfig;
    forWorkers: WebForWorkers;
}

/**
 * How a worker reaches the web's TSA when it names none: over the web's published port; an LXD
 * worker on the web's own LXD server (which may have no network) through a proxy device to it.
 */
function tsaRoute(host: HostConfig, web: StackWeb): TsaRoute {
    const webLxd = web.config.transport.lxd;
    const published = webLxd?.publish.tsa;
    const lxd = host.transport.lxd;
    // A VM reaches no port of its server's loopback (LXD proxies to a VM only through NAT): it names its TSA.
    if (
        host.concourse.tsaHost ||
        !webLxd ||
        published === undefined ||
        !lxd ||
        lxd.type === "virtual-machine" ||
        serverKey(lxd.server) !== serverKey(webLxd.server)
    )
        return {};
    return { tsaHost: "127.0.0.1", tsaPort: published, serverPorts: { tsa: { port: published, server: { address: webLxd.sshAddress, port: published } } } };
}

interface TsaRoute {
    tsaHost?: string;
    tsaPort?: number;
    serverPorts?: GpuWorkerLxdTransport["serverPorts"];
}

/** One host of the stack as GpuWorker's arguments; `hostSteps` is the stack's (the component's default where absent). */
export function workerArgs(host: HostConfig, secret: SecretLookup, baseDir: string, web?: StackWeb, hostSteps?: HostStepTransport): GpuWorkerArgs {
    const { name: _name, renamedFrom: _renamed, transport, inventory, concourse, ...settings } = host;
    const { workerKeySecret, registration, binary, ...concourseSettings } = concourse;
    const route = web ? tsaRoute(host, web) : {};
    return {
        ...settings,
        inventory,
        ...(hostSteps ? { hostSteps } : {}),
        transport: onTransport<SshTransport, LxdTransport, GpuWorkerArgs["transport"]>(transport, {
            ssh: (ssh) => ({ ssh: sshTransportArgs(ssh, secret) }),
            lxd: ({ server, ...lxd }) => ({
                lxd: { ...lxd, server: lxdServer(server, secret), ...(route.serverPorts ? { serverPorts: route.serverPorts } : {}) },
            }),
        }),
        concourse: {
            ...concourseSettings,
            ...(binary ? { binary: releaseFrom(binary, baseDir) } : {}),
            ...(route.tsaHost ? { tsaHost: route.tsaHost, tsaPort: route.tsaPort } : {}),
            ...(workerKeySecret ? { workerPrivateKey: secret(workerKeySecret) } : {}),
            ...(registration
                ? {
                      registration: {
                          url: registration.url,
                          username: registration.username,
                          password: secret(registration.passwordSecret),
                          timeoutSeconds: registration.timeoutSeconds,
                          ...(registration.caSecret ? { ca: secret(registration.caSecret) } : {}),
                      },
                  }
                : {}),
            ...(web ? { web: web.forWorkers } : {}),
        },
    };
}

/** The stack's web as ConcourseWeb's arguments (the stack's workers admit themselves). */
export function webArgs(web: WebConfig, secret: SecretLookup, baseDir: string, hostSteps?: HostStepTransport): ConcourseWebArgs {
    const { name: _name, renamedFrom: _renamed, transport, binary, version, postgres, tls, ...settings } = web;
    return {
        ...settings,
        ...(tls
            ? { tls: { certificate: secret(tls.certificateSecret), key: secret(tls.keySecret), ...(tls.caSecret ? { ca: secret(tls.caSecret) } : {}) } }
            : {}),
        ...(hostSteps ? { hostSteps } : {}),
        version: version!,
        binary: releaseFrom(binary!, baseDir),
        postgres:
            "external" in postgres ? { external: (({ passwordSecret, ...e }) => ({ ...e, password: secret(passwordSecret) }))(postgres.external) } : postgres,
        transport: onTransport<SshTransport, NonNullable<WebConfig["transport"]["lxd"]>, ConcourseWebArgs["transport"]>(transport, {
            ssh: (ssh) => ({ ssh: sshTransportArgs(ssh, secret) }),
            lxd: ({ server, ...lxd }) => ({ lxd: { ...lxd, server: lxdServer(server, secret) } }),
        }),
    };
}

/**
 * A cluster of the stack as KubernetesGpuNodes' arguments: each node with its host's inventory,
 * GPU selection and driver pin (the one GPU plan its worker has too), and the wrapper's handler
 * the nodes' containerd names (they agree: stacks/config/kubernetes-config.ts).
 */
export function kubernetesArgs(cluster: ClusterConfig, hosts: HostConfig[], secret: SecretLookup): KubernetesGpuNodesArgs {
    const { name: _name, kubeconfigSecret, nodes, ...settings } = cluster;
    const hostOf = (name: string): HostConfig => {
        const host = hosts.find((h) => h.name === name);
        if (!host) throw new Error(`cluster ${cluster.name}: ${name} is no host of the stack`);
        return host;
    };
    return {
        ...settings,
        kubeconfig: secret(kubeconfigSecret),
        wrapperHandler: hostOf(nodes[0].host).containerd.runtimeName,
        nodes: nodes.map((n) => {
            const host = hostOf(n.host);
            return { nodeName: n.nodeName ?? n.host, inventory: host.inventory, selection: host.selection, driverVersion: host.driver.version };
        }),
    };
}
