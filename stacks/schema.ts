/**
 * The stack config schema: `gpu-workers:defaults` (settings every host shares) and
 * `gpu-workers:hosts` (one entry per host, overriding any default). Unknown keys are errors.
 */
import { z } from "zod";
import { warnOnlyFieldsSchema } from "../components/discovery/verify";
import { inventorySchema } from "../components/gpu/inventory";

const nonNegativeInt = z.number({ error: "expected a non-negative integer" })
    .int({ error: "expected a non-negative integer" })
    .nonnegative({ error: "expected a non-negative integer" });
const port = z.number({ error: "expected a port number" }).int({ error: "expected a port number" })
    .min(1, { error: "expected a port number (1-65535)" }).max(65535, { error: "expected a port number (1-65535)" });
const absolutePath = z.string({ error: "expected an absolute path" }).regex(/^\/[^\0]*$/, { error: "expected an absolute path" });
/** Name of another config key that holds a secret (set with `pulumi config set --secret`). */
const secretRef = z.string({ error: "expected the name of a secret config key" })
    .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, { error: "expected the name of a secret config key, e.g. gpu-a-ssh-key" });
const version = z.string({ error: "expected a version such as 1.2.3" }).regex(/^[0-9]+(\.[0-9]+)+(-[0-9A-Za-z.-]+)?$/, { error: "expected a version such as 1.2.3" });
const hostName = z.string({ error: "expected a host name" })
    .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, { error: "expected lower-case letters, digits and dashes (a DNS label), e.g. gpu-a" });
/** A Concourse tag: CONCOURSE_TAG and --tag split on commas only in the env form; we pass flags, but keep tags plain. */
const tag = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:=+,-]*$/, { error: "expected a tag of letters, digits and _.:=+,-" });

export const sshTransportSchema = z.strictObject({
    host: z.string().min(1, { error: "expected a host name or address" }),
    port: port.default(22),
    user: z.string().min(1).default("root"),
    /** Config key whose secret value is the OpenSSH private key. */
    privateKeySecret: secretRef,
    /** Pinned host key, as in known_hosts without the host name: "ssh-ed25519 AAAA...". */
    hostKey: z.string().regex(/^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa) [A-Za-z0-9+/=]+$/, { error: "expected a public host key such as 'ssh-ed25519 AAAA...'" }),
});

export const lxdServerSchema = z.strictObject({
    /** Local unix socket of the LXD daemon (default /var/lib/lxd/unix.socket). */
    socket: absolutePath.optional(),
    /** HTTPS endpoint, e.g. https://10.0.0.5:8443; needs a trusted client certificate. */
    url: z.url({ error: "expected an https:// URL" }).optional(),
    clientCertSecret: secretRef.optional(),
    clientKeySecret: secretRef.optional(),
    /** PEM of the server certificate to pin (HTTPS only). */
    serverCert: z.string().optional(),
}).superRefine((s, ctx) => {
    if (s.url && s.socket) ctx.addIssue({ code: "custom", path: ["url"], message: "give either socket or url, not both" });
    if (s.url && (!s.clientCertSecret || !s.clientKeySecret)) ctx.addIssue({ code: "custom", path: ["clientCertSecret"], message: "an https url needs clientCertSecret and clientKeySecret" });
});

export const lxdTransportSchema = z.strictObject({
    server: lxdServerSchema.default({}),
    /** LXD instance name (created and owned by this stack). */
    instance: hostName,
    /** Image alias or fingerprint on the LXD server. */
    image: z.string().min(1, { error: "expected an image alias or fingerprint" }),
    // A worker's SSH keys go in before the first start, which a VM (no agent yet) cannot take.
    type: z.literal("container", { error: "expected container (a virtual machine cannot take the worker's SSH keys before its first start)" }).default("container"),
    profiles: z.array(z.string().min(1)).default(["default"]),
    /** Extra instance config keys (security.nesting is always set for containers). */
    config: z.record(z.string(), z.string()).default({}),
    /** Host folder whose subfolders become the worker's datasets (disk devices). */
    datasetSource: absolutePath.optional(),
    /** Loopback port on the LXD server that forwards to the instance's sshd. */
    sshPort: port,
    /** Address the loopback proxy listens on (default 127.0.0.1). */
    sshAddress: z.string().default("127.0.0.1"),
    // The key placed in the instance is root's: another user could not read it to log in.
    user: z.literal("root", { error: "expected root (the SSH key placed in the instance is root's)" }).default("root"),
    /** Pass GPUs to the instance by CDI id; needs an LXD that reads CDI ids (5.0 on Debian 12 does not). */
    gpuCdi: z.boolean().default(false),
    /** idmap-shift writable dataset disks; needs kernel idmapped mounts (else own the folders by the instance's mapped root). */
    shiftWritable: z.boolean().default(true),
});

const TRANSPORT_CHOICE = "expected exactly one of ssh: {...} or lxd: {...}";

// Both keys are parsed as optional fields rather than as a union, so that a mistake inside
// one of them is reported at its own path (transport.lxd.sshPort), not as "neither matched".
export const transportSchema = z.strictObject({ ssh: sshTransportSchema.optional(), lxd: lxdTransportSchema.optional() }, { error: TRANSPORT_CHOICE })
    .refine((t) => (t.ssh === undefined) !== (t.lxd === undefined), { error: TRANSPORT_CHOICE })
    .transform((t): { ssh: SshTransport } | { lxd: LxdTransport } => (t.ssh ? { ssh: t.ssh } : { lxd: t.lxd! }));

export const settingsSchema = z.strictObject({
    /** Which GPUs the worker gets: all, or a list of indices. */
    selection: z.union([z.literal("all"), z.array(nonNegativeInt).min(1, { error: "select at least one GPU, or all" })], { error: "expected all or a list of GPU indices" }),
    /** How the hardware found on `up` is compared with the declared inventory. */
    verify: z.strictObject({
        /** Inventory fields whose differences only warn (e.g. [memory, uuid]). */
        warnOnly: warnOnlyFieldsSchema,
    }),
    driver: z.strictObject({
        /** Pinned driver version (e.g. 550.54.15), or preinstalled to only check what is there. */
        version: z.union([z.literal("preinstalled"), version], { error: "expected preinstalled or a version such as 550.54.15" }),
    }),
    toolkit: z.strictObject({
        version: version,
        /** Generate a CDI spec and inject GPUs by CDI id. */
        cdi: z.boolean(),
    }),
    datasets: z.strictObject({
        root: absolutePath,
        writableSuffixes: z.array(z.string().regex(/^[^/\0]+$/, { error: "expected a folder-name suffix without /" })),
    }),
    containerd: z.strictObject({
        runtimeName: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, { error: "expected a runtime name such as gpu" }),
        default: z.boolean(),
    }),
    fabricManager: z.strictObject({
        mode: z.enum(["auto", "on", "off"], { error: "expected auto, on or off" }),
        partitions: z.array(nonNegativeInt),
    }),
    concourse: z.strictObject({
        version: version,
        tsaHost: z.string().min(1, { error: "expected the TSA host name" }),
        tsaPort: port,
        /** The TSA's host public key ("ssh-rsa AAAA..."). */
        tsaPublicKey: z.string().regex(/^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa) [A-Za-z0-9+/=]+/, { error: "expected a public key such as 'ssh-rsa AAAA...'" }),
        team: z.string().min(1).optional(),
        tags: z.array(tag),
        /** Config key whose secret value is the worker's private key; generated when absent. */
        workerKeySecret: secretRef.optional(),
        /** Where the worker binary comes from: a URL the host downloads, or a local file uploaded. */
        binary: z.union([
            z.strictObject({ url: z.url({ error: "expected a URL" }), sha256: z.string().regex(/^[0-9a-f]{64}$/, { error: "expected a hex sha256" }) }),
            z.strictObject({ path: z.string().min(1) }),
        ], { error: "expected {url, sha256} or {path}" }).optional(),
        workDir: absolutePath,
    }),
});

/** Built-in defaults; the stack's `defaults` and each host override them, field by field. */
export const BUILTIN_DEFAULTS = {
    selection: "all",
    verify: { warnOnly: [] },
    driver: { version: "preinstalled" },
    toolkit: { version: "1.17.8", cdi: true },
    datasets: { root: "/srv", writableSuffixes: ["_writable", "_rw"] },
    containerd: { runtimeName: "gpu", default: false },
    fabricManager: { mode: "auto", partitions: [] },
    concourse: { version: "7.14.2", tsaPort: 2222, tags: [], workDir: "/opt/concourse/worker" },
} as const;

export const hostEntrySchema = z.object({
    name: hostName,
    transport: transportSchema,
    inventory: inventorySchema,
}).catchall(z.unknown());

export type Settings = z.infer<typeof settingsSchema>;
export type SshTransport = z.infer<typeof sshTransportSchema>;
export type LxdTransport = z.infer<typeof lxdTransportSchema>;
export type Transport = z.infer<typeof transportSchema>;

/** One host after defaults are applied and everything is validated. */
export interface HostConfig extends Settings {
    name: string;
    transport: Transport;
    inventory: z.infer<typeof inventorySchema>;
}
