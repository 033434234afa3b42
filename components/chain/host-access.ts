/**
 * Reaching a host, as resources: for an SSH transport the connection as given; for an LXD
 * transport the instance (with its login key and pinned host key, generated here) and the
 * connection through its sshd proxy. GpuHost and ConcourseWeb create these as their children.
 */
import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { GeneratedContent, stepResourceName } from "../lib/host/steps";
import { onTransport, Transport } from "../lib/host/transport";
import { SSH_PORT_DEFAULT, SSH_USER_DEFAULT } from "../lib/host/transport-defaults";
import { LxdServer } from "../lib/lxd/types";
import { renderAccessUserData } from "../lib/render/lxd-access";
import { HostAccessPlan } from "../lib/plan/host-access";
import { sshPublicKey, sshPublicKeyProblem } from "../lib/settings/ssh-public-key";
import type { sshJumpHostSchema, sshTransportSchema } from "../lib/settings/transport-schema";
import { HostConnection } from "../providers/host/resources";
import { SshKeyPair } from "../providers/keys";
import { LxdInstance } from "../providers/lxd/instance";

/** The schema's input, where a program may pass outputs for the keys K. */
export type WithInputs<T, K extends keyof T> = Omit<T, K> & { [P in keyof Pick<T, K>]: pulumi.Input<T[P]> };

/** A jump host (sshJumpHostSchema: each field's doc and default are written there), and the key that logs in to it. */
export type SshJumpHost = WithInputs<z.input<typeof sshJumpHostSchema>, "host" | "port" | "user" | "hostKey"> & {
    /** OpenSSH private key of that user; keep it a Pulumi secret. */
    privateKey: pulumi.Input<string>;
};

/** A machine reached directly over SSH (sshTransportSchema: each field's doc and default are written there), and the key that logs in. */
export type SshHostTransport = WithInputs<Omit<z.input<typeof sshTransportSchema>, "proxy">, "host" | "port" | "hostKey"> & {
    /** OpenSSH private key of the login user; keep it a Pulumi secret (config.requireSecret). */
    privateKey: pulumi.Input<string>;
    /** A jump host (bastion) to reach the host through; `host` and `port` are then as the jump host sees them. Default: none. */
    proxy?: SshJumpHost;
};

/** The part of an LXD transport that only `up` needs: how to reach the LXD daemon. */
export interface LxdServerArg {
    /** How to reach the LXD daemon: `{ socket }`, or `{ url, clientCert, clientKey, serverCert }`. */
    server: pulumi.Input<LxdServer>;
}

export interface ReachedHost {
    connection: pulumi.Output<HostConnection>;
    /** What the first command on the host must wait for (the instance). */
    reachable: pulumi.Resource[];
}

/**
 * A host key given to a component, checked once its value is known (text is checked with the
 * component's args, an output here: at preview where the value is known then, else at up before
 * any dial). An absent one passes, for the connection to name.
 */
function checkedHostKey(name: string, field: string, key: pulumi.Input<string>): pulumi.Output<string> {
    return pulumi.output(key).apply((k) => {
        const problem = typeof k === "string" ? sshPublicKeyProblem(k, "host") : undefined;
        if (problem) throw new Error(`${name}: ${field}: ${problem}`);
        return k;
    });
}

/** Creates what reaching the host takes, as children of `parent` named from `name`, after `before` (e.g. a board's service VM). */
export function reachHost(
    parent: pulumi.ComponentResource,
    name: string,
    transport: Transport<SshHostTransport, LxdServerArg>,
    plan: HostAccessPlan,
    before: pulumi.Input<pulumi.Resource>[] = [],
): ReachedHost {
    return onTransport(transport, {
        ssh: (ssh): ReachedHost => ({
            connection: pulumi.secret(
                pulumi.output({
                    host: ssh.host,
                    port: ssh.port ?? SSH_PORT_DEFAULT,
                    user: plan.user,
                    privateKey: ssh.privateKey,
                    hostKey: checkedHostKey(name, "transport.ssh.hostKey", ssh.hostKey),
                    ...(ssh.proxy
                        ? {
                              proxy: {
                                  host: ssh.proxy.host,
                                  port: ssh.proxy.port ?? SSH_PORT_DEFAULT,
                                  user: ssh.proxy.user ?? SSH_USER_DEFAULT,
                                  privateKey: ssh.proxy.privateKey,
                                  hostKey: checkedHostKey(name, "transport.ssh.proxy.hostKey", ssh.proxy.hostKey),
                              },
                          }
                        : {}),
                }) as pulumi.Output<HostConnection>,
            ),
            reachable: [],
        }),
        lxd: (lxd): ReachedHost => {
            const planned = plan.lxd!;
            const loginKey = new SshKeyPair(`${name}-ssh-key`, { comment: `gpu-workers@${name}` }, { parent });
            const hostKey = new SshKeyPair(`${name}-ssh-host-key`, { comment: `${planned.instance.instance}-host` }, { parent });
            const generated: Partial<Record<GeneratedContent, pulumi.Output<string>>> = {
                "login-key.public": loginKey.publicKeyOpenssh,
                "host-key.private": hostKey.privateKeyOpenssh,
                "host-key.public": hostKey.publicKeyOpenssh,
            };
            const files = planned.files.map((f) => ({ path: f.path, content: f.generated ? generated[f.generated]! : pulumi.output(f.content), mode: f.mode }));
            const delivered =
                planned.delivery === "cloud-init"
                    ? {
                          userData: pulumi
                              .all(files.map((f) => f.content))
                              .apply((contents) => renderAccessUserData(files.map((f, i) => ({ ...f, content: contents[i] })))),
                      }
                    : { files };
            const instance = new LxdInstance(
                stepResourceName(name, "instance"),
                {
                    server: lxd.server,
                    name: planned.instance.instance,
                    image: planned.instance.image,
                    type: planned.instance.type,
                    profiles: planned.instance.profiles,
                    config: planned.instance.config,
                    devices: planned.instance.devices,
                    ...delivered,
                    waitFor: planned.waitFor,
                },
                { parent, dependsOn: before },
            );
            return {
                connection: pulumi.secret(
                    pulumi.output({
                        host: planned.instance.sshAddress,
                        port: planned.instance.sshPort,
                        user: plan.user,
                        privateKey: loginKey.privateKeyOpenssh,
                        // The key type and body, as known_hosts takes it.
                        hostKey: hostKey.publicKeyOpenssh.apply((k) => sshPublicKey(k, `${name}: the generated host key`).pinned),
                        // A replaced instance (new image or type) has the same address and keys: this tells the steps apart.
                        machineId: instance.uuid,
                    }),
                ),
                reachable: [instance],
            };
        },
    });
}
