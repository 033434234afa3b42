/**
 * LxdInstance: one LXD instance (container, or VM where the server supports it) managed
 * through LXD's REST API by a Pulumi dynamic provider. Config, devices and profiles change
 * in place; a new name, image or type replaces the instance.
 */
import * as pulumi from "@pulumi/pulumi";
import { lxdInstanceProvider } from "./instance-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { LxdDevices, LxdInstanceType, LxdServer } from "../../lib/lxd/types";

/** Dynamic resources get the token pulumi-nodejs:dynamic/<module>:<type>: here pulumi-nodejs:dynamic/lxd:Instance. */
export const LXD_INSTANCE_MODULE = "lxd";
export const LXD_INSTANCE_TYPE = "Instance";

export interface LxdServerArgs {
    /** Unix socket of the daemon (default /var/lib/lxd/unix.socket); needs root or the lxd group. */
    socket?: pulumi.Input<string>;
    /** HTTPS endpoint such as https://10.0.0.5:8443; needs clientCert and clientKey. */
    url?: pulumi.Input<string>;
    /** PEM client certificate the server trusts (`lxc config trust add`). */
    clientCert?: pulumi.Input<string>;
    /** PEM key of the client certificate: pass a secret (config.requireSecret). */
    clientKey?: pulumi.Input<string>;
    /** PEM server certificate to pin; without it the system CAs must vouch for the server. */
    serverCert?: pulumi.Input<string>;
    /** LXD project; default: the server's default project. */
    project?: pulumi.Input<string>;
}

export interface LxdFileArgs {
    /** Absolute path inside the instance; missing parent folders are created (0700 for .ssh, else 0755). */
    path: pulumi.Input<string>;
    /** The file's content. */
    content: pulumi.Input<string>;
    /** Octal mode such as "0600" (default "0644"). */
    mode?: pulumi.Input<string>;
    /** Owner inside the instance (default 0). */
    uid?: pulumi.Input<number>;
    /** Group inside the instance (default 0). */
    gid?: pulumi.Input<number>;
}

export interface LxdInstanceArgs {
    /** How to reach the LXD daemon. Stored as a secret (it may carry the client key). */
    server: pulumi.Input<LxdServerArgs>;
    /** Instance name on the server; changing it replaces the instance. */
    name: pulumi.Input<string>;
    /** Image alias or fingerprint on the server; changing it replaces the instance. */
    image: pulumi.Input<string>;
    /** container (default) or virtual-machine; changing it replaces the instance. */
    type?: pulumi.Input<LxdInstanceType>;
    /** Profiles applied in order (default ["default"]). */
    profiles?: pulumi.Input<pulumi.Input<string>[]>;
    /** Instance config keys (security.nesting, nvidia.runtime, ...). security.privileged only if you set it. */
    config?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** Devices by name: gpu, unix-char, disk, proxy, ... (see lxdDevicesForWorker). */
    devices?: pulumi.Input<Record<string, pulumi.Input<Record<string, pulumi.Input<string>>>>>;
    /** Files pushed before the first start (e.g. /root/.ssh/authorized_keys, mode 0600). Stored as a secret. */
    files?: pulumi.Input<pulumi.Input<LxdFileArgs>[]>;
    /**
     * cloud-init user-data for the first boot (LXD's cloud-init.user-data): how a virtual machine
     * gets its SSH keys, since it takes no files before it starts. Stored as a secret; a new one
     * replaces the instance (cloud-init reads it on the first boot only). Needs cloud-init in the image.
     */
    userData?: pulumi.Input<string>;
    /** A command run inside until it exits 0 after each start, e.g. waiting for sshd. */
    waitFor?: pulumi.Input<{
        /** The command and its arguments. */
        command: pulumi.Input<string>[];
        /** How long to keep trying, in seconds. */
        timeoutSeconds?: pulumi.Input<number>;
    }>;
    /** Keep the instance running (default true). */
    running?: pulumi.Input<boolean>;
}

export class LxdInstance extends LazyProviderResource {
    /** Instance name on the server. */
    declare public readonly name: pulumi.Output<string>;
    declare public readonly image: pulumi.Output<string>;
    declare public readonly type: pulumi.Output<LxdInstanceType>;
    declare public readonly profiles: pulumi.Output<string[]>;
    /** The instance's own config keys as LXD has them (LXD's volatile.* and image.* left out). */
    declare public readonly config: pulumi.Output<Record<string, string>>;
    /** The instance's own devices as LXD has them (profile devices not included). */
    declare public readonly devices: pulumi.Output<LxdDevices>;
    declare public readonly running: pulumi.Output<boolean>;
    /** LXD's status word: Running, Stopped, ... */
    declare public readonly status: pulumi.Output<string>;
    /** Fingerprint of the image the instance was made from. */
    declare public readonly imageFingerprint: pulumi.Output<string>;
    /** LXD's UUID of the instance: it changes when the instance is replaced. */
    declare public readonly uuid: pulumi.Output<string>;
    declare public readonly server: pulumi.Output<LxdServer>;

    constructor(name: string, args: LxdInstanceArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            lxdInstanceProvider,
            name,
            {
                ...args,
                // Every output key must be an input key (undefined when unknown) to exist as an Output.
                type: args.type ?? "container",
                profiles: args.profiles ?? ["default"],
                config: args.config ?? {},
                devices: args.devices ?? {},
                running: args.running ?? true,
                // The connection may carry the client key: keep all of it secret in state and outputs.
                server: pulumi.secret(args.server),
                // Files may hold keys (e.g. an sshd host key).
                files: args.files === undefined ? undefined : pulumi.secret(args.files),
                // User-data may hold keys too (a VM's sshd host key).
                userData: args.userData === undefined ? undefined : pulumi.secret(args.userData),
                status: undefined,
                imageFingerprint: undefined,
                uuid: undefined,
            },
            { ...opts, additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), "server", "files", "userData"] },
            LXD_INSTANCE_MODULE,
            LXD_INSTANCE_TYPE,
        );
    }
}
