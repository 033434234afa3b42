/**
 * Plain data shapes shared by the LXD client, the validator, the device planner and the
 * dynamic provider. No Pulumi import: the provider process loads these at run time.
 */

/** How to reach an LXD daemon: its unix socket (as root), or HTTPS with a trusted client certificate. */
export interface LxdServer {
    /** Unix socket of the daemon; the default when no url is given is /var/lib/lxd/unix.socket. */
    socket?: string;
    /** HTTPS endpoint, e.g. https://10.0.0.5:8443. */
    url?: string;
    /** PEM client certificate the server trusts (HTTPS only). */
    clientCert?: string;
    /** PEM private key of the client certificate (HTTPS only; a Pulumi secret). */
    clientKey?: string;
    /** PEM of the server certificate to pin (HTTPS only); without it the system CAs verify the server. */
    serverCert?: string;
    /** LXD project (default: the server's default project). */
    project?: string;
}

/** One LXD device: its `type` plus the type's keys, all values strings as LXD stores them. */
export type LxdDevice = Record<string, string>;
export type LxdDevices = Record<string, LxdDevice>;

/** A file pushed into the instance (through LXD's files API) before it first starts. */
export interface LxdFile {
    /** Absolute path inside the instance; missing parent folders are created (mode 0755, root). */
    path: string;
    content: string;
    /** Octal mode string, e.g. "0600" (default "0644"). */
    mode?: string;
    uid?: number;
    gid?: number;
}

/** A command run inside the instance (exec API) until it exits 0, e.g. to wait for sshd. */
export interface LxdWaitFor {
    command: string[];
    /** Give up after this many seconds (default 60). */
    timeoutSeconds?: number;
}

export type LxdInstanceType = "container" | "virtual-machine";

/** Everything the provider needs to create one instance: the dynamic resource's inputs. */
export interface LxdInstanceSpec {
    server: LxdServer;
    /** Instance name on the server (1-63 letters, digits, dashes; starts with a letter). */
    name: string;
    /** Image alias (gpu-workers/debian-12) or fingerprint (12 to 64 hex digits). */
    image: string;
    type?: LxdInstanceType;
    profiles?: string[];
    /** Instance config keys, e.g. security.nesting, nvidia.runtime. */
    config?: Record<string, string>;
    devices?: LxdDevices;
    files?: LxdFile[];
    /**
     * cloud-init user-data for the first boot, set as LXD's cloud-init.user-data key: how a
     * virtual machine (which takes no files before its agent runs) gets its SSH keys. A secret
     * input; a new one replaces the instance, since cloud-init reads it on the first boot only.
     */
    userData?: string;
    waitFor?: LxdWaitFor;
    /** Keep the instance running (default true). */
    running?: boolean;
}

/** A spec with every default applied and every config and device value a string, as LXD stores them. */
export interface NormalizedSpec extends LxdInstanceSpec {
    type: LxdInstanceType;
    profiles: string[];
    config: Record<string, string>;
    devices: LxdDevices;
    files: LxdFile[];
    running: boolean;
}

/** What the provider stores for an instance: the spec as LXD really has it, plus its state. */
export interface LxdInstanceState extends NormalizedSpec {
    /** LXD's status word: Running, Stopped, ... */
    status: string;
    /** Fingerprint of the image the instance was created from (volatile.base_image). */
    imageFingerprint: string;
    /** LXD's UUID of the instance (volatile.uuid): a new one means a new machine behind the same name. */
    uuid: string;
}
