/**
 * The one contract of each transport (ssh, lxd): what a component's args take (`z.input`), what
 * its plan reads with the defaults applied (`z.output`), and what the stack schema extends with
 * the `*Secret` keys it names (taking some fields in narrower forms). Each field's doc and
 * default is written here, once. A worker's and the web's LXD instance extend the LXD schema
 * with the keys only they take. Pure.
 */
import { z } from "zod";
import type { Transport } from "../host/transport";
import { LXD_TRANSPORT_DEFAULTS, SSH_PORT_DEFAULT, SSH_USER_DEFAULT } from "../host/transport-defaults";
import { lxdConfigKeyProblem } from "../lxd/config-keys";
import { LXD_INSTANCE_NAME } from "../lxd/validate";
import { port } from "./settings";
import { sshPublicKeyProblem, sshPublicKeySchema } from "./ssh-public-key";
import { hostAddress, posixUser } from "./value-patterns";

/** Pinned host key: the host's public key line (ssh-public-key.ts), compared by its type and blob. */
const pinnedHostKey = sshPublicKeySchema("host");
const HOST_KEY_DOC =
    "pinned: its public key line as the `.pub` file holds it (`ssh-ed25519 AAAA... comment`: /etc/ssh/ssh_host_ed25519_key.pub, or `ssh-keyscan -t ed25519 HOST` without the host name); " +
    "an `ssh-rsa` key only with SHA-2 signatures; a known_hosts line, a fingerprint, a bare body, several keys or a private key are refused";

/** A jump host (bastion): the host is reached through it, and its address and port are as the jump host sees them. */
export const sshJumpHostSchema = z.strictObject({
    host: hostAddress.meta({ description: "the jump host's DNS name or IP address, as this machine reaches it" }),
    port: port.default(SSH_PORT_DEFAULT).meta({ description: "the jump host's sshd port" }),
    user: posixUser.default(SSH_USER_DEFAULT).meta({ description: "the login user on the jump host (it runs nothing there: it only forwards the connection)" }),
    hostKey: pinnedHostKey.meta({ description: `the jump host's own host key, ${HOST_KEY_DOC}` }),
});

/** A machine reached directly over SSH (the login key is the caller's: a secret of the program, or the stack's by name). */
export const sshTransportSchema = z.strictObject({
    host: hostAddress.meta({ description: "the host's DNS name or IP address" }),
    port: port.default(SSH_PORT_DEFAULT).meta({ description: "its sshd port" }),
    user: posixUser.default(SSH_USER_DEFAULT).meta({ description: "the login user; commands run through `sudo -n` unless it is root" }),
    hostKey: pinnedHostKey.meta({ description: `the host's own host key, ${HOST_KEY_DOC}` }),
    proxy: sshJumpHostSchema.optional().meta({ description: "a jump host to go through; `host` and `port` are then as the jump host sees them" }),
});

// The LXD fields take the forms the LXD provider checks before it creates an instance (and the
// worker's dataset disks, before it plans them), so a component takes every value it ever took;
// the stack's config narrows some of them further (stacks/config/schema.ts).
const INSTANCE_NAME_ERROR = "expected an LXD instance name: letters, digits and dashes, starting with a letter and not ending with a dash (at most 63)";
const IMAGE_ERROR = "expected an image alias or fingerprint on the LXD server (no spaces, no remote: prefix)";

/** An LXD instance the same `up` creates, reached over SSH through a proxy device on its server (the server itself is the caller's). */
export const lxdTransportSchema = z.strictObject({
    instance: z
        .string({ error: INSTANCE_NAME_ERROR })
        .regex(LXD_INSTANCE_NAME, { error: INSTANCE_NAME_ERROR })
        .meta({ description: "the instance's name on the LXD server (created and owned here; a new name replaces the instance)" }),
    image: z
        .string({ error: IMAGE_ERROR })
        .regex(/^[^\s:]+$/, { error: IMAGE_ERROR })
        .meta({ description: "the image's alias or fingerprint on the LXD server" }),
    type: z
        .enum(["container", "virtual-machine"], { error: "expected container or virtual-machine" })
        .default(LXD_TRANSPORT_DEFAULTS.type)
        .meta({ description: "container, or virtual-machine (its SSH keys go in through cloud-init)" }),
    profiles: z
        .array(z.string().regex(/^[^/\s]+$/, { error: "expected a profile name (no / or spaces)" }))
        .default(LXD_TRANSPORT_DEFAULTS.profiles)
        .meta({ description: "the instance's profiles, applied in order" }),
    config: z
        .record(z.string(), z.string())
        .superRefine((config, ctx) => {
            for (const key of Object.keys(config)) {
                const problem = lxdConfigKeyProblem(key);
                if (problem) ctx.addIssue({ code: "custom", message: problem, input: key });
            }
        })
        .default(LXD_TRANSPORT_DEFAULTS.config)
        .meta({ description: "extra instance config keys (security.nesting is always set for containers); only the keys LXD passes on harmlessly" }),
    sshPort: port.meta({ description: "the port on the LXD server that forwards to the instance's sshd" }),
    sshAddress: hostAddress.default(LXD_TRANSPORT_DEFAULTS.sshAddress).meta({ description: "the address on the LXD server that port listens on" }),
    user: posixUser.default(LXD_TRANSPORT_DEFAULTS.user).meta({ description: "the login user inside the instance, whose authorized_keys get the login key" }),
    network: z
        .string({ error: "expected an LXD network name (e.g. lxdbr0)" })
        .optional()
        .meta({ description: "virtual-machine only: the managed bridge network (with DHCP) on the LXD server for the VM's nic" }),
    address: z
        .string({ error: "expected an IPv4 address such as 10.10.0.11" })
        .optional()
        .meta({ description: "virtual-machine only: the VM's static IPv4 address on that network; sshd is reached through NAT to it" }),
});

/** A port of the LXD server that a worker's instance reaches as its own 127.0.0.1:<port> (a proxy device). */
const serverPortSchema = z.strictObject({
    port: port.meta({ description: "the port inside the instance (on its 127.0.0.1)" }),
    server: z
        .strictObject({
            address: hostAddress.meta({ description: "the address on the LXD server" }),
            port: port.meta({ description: "the port on the LXD server" }),
        })
        .meta({ description: "where on the LXD server it leads" }),
});

const DATASET_FOLDER_ERROR = "expected one folder name (no /, not . or ..)";

/** A worker's LXD instance: the instance, with the worker's GPUs and datasets passed in. */
export const lxdWorkerTransportSchema = lxdTransportSchema.extend({
    datasetSource: z
        .string({ error: "expected a folder on the LXD server" })
        .optional()
        .meta({ description: "the folder on the LXD server whose subfolders become the worker's datasets (disk devices)" }),
    datasetFolders: z
        .array(z.string({ error: DATASET_FOLDER_ERROR }).regex(/^(?!\.\.?$)[^/\0]+$/, { error: DATASET_FOLDER_ERROR }))
        .optional()
        .meta({
            defaultText: "all of datasetSource, read-only",
            description: "the subfolders of datasetSource to attach, each as its own disk (read-write when its name ends with a writable suffix)",
        }),
    gpuCdi: z
        .boolean()
        .default(LXD_TRANSPORT_DEFAULTS.gpuCdi)
        .meta({ description: "pass GPUs to the instance by CDI id; needs an LXD that reads CDI ids (5.0 on Debian 12 does not)" }),
    shiftWritable: z
        .boolean()
        .default(LXD_TRANSPORT_DEFAULTS.shiftWritable)
        .meta({ description: "idmap-shift writable dataset disks; needs kernel idmapped mounts (else own the folders by the instance's mapped root)" }),
    serverPorts: z.record(z.string(), serverPortSchema).default({}).meta({
        description: "ports of the LXD server the instance reaches as its own 127.0.0.1:<port>, by device name (for an instance without a network of its own)",
    }),
});

/** The web's LXD instance, with its ports published on the LXD server. */
export const lxdWebTransportSchema = lxdTransportSchema.extend({
    publish: z
        .strictObject({
            web: port.optional().meta({ description: "the port that forwards to the web's API and UI (its HTTPS port when it has a certificate)" }),
            tsa: port.optional().meta({ description: "the port that forwards to the TSA" }),
        })
        .default({})
        .meta({ description: "ports on the LXD server's `sshAddress` that forward to the web (its API and UI) and the TSA inside the instance" }),
});

/** What planning reads of an SSH host: its login user (the address and keys are `up`'s alone). */
export const sshPlanSchema = sshTransportSchema.pick({ user: true });

/** The fields of `value` that `schema` declares (a caller's secrets and outputs are no part of the plan). */
function fieldsOf(schema: z.ZodObject, value: object): Record<string, unknown> {
    const own = Object.keys(schema.shape).filter((key) => key in value);
    return Object.fromEntries(own.map((key) => [key, (value as Record<string, unknown>)[key]]));
}

/** The instance's own fields of a worker's (or the web's) LXD transport: what GpuHost creates, without the keys of the instance's use. */
export function lxdInstanceFields(lxd: z.output<typeof lxdTransportSchema>): z.output<typeof lxdTransportSchema> {
    return fieldsOf(lxdTransportSchema, lxd) as z.output<typeof lxdTransportSchema>;
}

/** The key fields of a component's SSH transport: text, or an output known only later. */
interface SshKeys {
    hostKey?: unknown;
    proxy?: { hostKey?: unknown };
}

/**
 * The host keys of a component's SSH transport that are given as text and are no public key line,
 * as `transport.ssh.hostKey: problem` (and `transport.ssh.proxy.hostKey`): refused at preview and
 * render, before any host is dialled. An output is checked where it is known (the connection), and
 * an absent key is named where the connection is made (a component used alone may be given none).
 */
function sshKeyProblems(ssh: SshKeys): string[] {
    return [
        ["transport.ssh.hostKey", ssh.hostKey],
        ["transport.ssh.proxy.hostKey", ssh.proxy?.hostKey],
    ].flatMap(([field, key]) => {
        const problem = typeof key === "string" ? sshPublicKeyProblem(key, "host") : undefined;
        return problem ? [`${field as string}: ${problem}`] : [];
    });
}

/**
 * A component's transport as its plan reads it: the fields the transport's schema declares,
 * parsed (defaults applied), or the problems as `transport.<ssh|lxd>.<path>: message`, the form
 * a component's args error lists them in.
 */
export function planTransport<S extends z.ZodObject, L extends z.ZodObject>(
    transport: Transport<object, object>,
    schemas: { ssh: S; lxd: L },
): { data: Transport<z.output<S>, z.output<L>> } | { problems: string[] } {
    const kind = transport.ssh !== undefined ? "ssh" : "lxd";
    const parsed = schemas[kind].safeParse(fieldsOf(schemas[kind], transport[kind]!));
    const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${["transport", kind, ...i.path.map(String)].join(".")}: ${i.message}`);
    if (kind === "ssh") problems.push(...sshKeyProblems(transport.ssh as SshKeys));
    if (!parsed.success || problems.length > 0) return { problems };
    return { data: (kind === "ssh" ? { ssh: parsed.data } : { lxd: parsed.data }) as Transport<z.output<S>, z.output<L>> };
}
