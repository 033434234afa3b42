/**
 * The stack config schema: `gpu-workers:defaults` (settings every host shares) and
 * `gpu-workers:hosts` (one entry per host, overriding any default). Unknown keys are errors.
 */
import { z } from "zod";
import { inventorySchema } from "../components/lib/gpu/inventory";
import type { Transport as TransportOf } from "../components/lib/host/transport";
import { absolutePath, port, settingsSchema as workerSettingsSchema, WORKER_DEFAULTS } from "../components/lib/plan/settings";

/** Name of another config key that holds a secret (set with `pulumi config set --secret`). */
export const secretRef = z.string({ error: "expected the name of a secret config key" })
    .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, { error: "expected the name of a secret config key, e.g. gpu-a-ssh-key" });
export const hostName = z.string({ error: "expected a host name" })
    .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, { error: "expected lower-case letters, digits and dashes (a DNS label), e.g. gpu-a" });

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
    /**
     * The subfolders of datasetSource to attach, each as its own disk (read-write when its name
     * ends with a writable suffix). Absent: all of datasetSource, read-only.
     */
    datasetFolders: z.array(z.string().regex(/^(?!\.\.?$)[^/\0]+$/, { error: "expected a folder name (no /)" })).optional(),
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
    .transform((t): TransportOf<SshTransport, LxdTransport> => (t.ssh ? { ssh: t.ssh } : { lxd: t.lxd! }));

/** A worker's settings as the stack gives them: the components' own, and the secret key holding the worker's TSA key. */
export const settingsSchema = workerSettingsSchema.extend({
    concourse: workerSettingsSchema.shape.concourse.extend({
        /** Config key whose secret value is the worker's private key; generated when absent. */
        workerKeySecret: secretRef.optional(),
        /** Check the registration at a web outside this stack: its URL, a user, and the secret config key of its password. */
        registration: z.strictObject({
            url: z.url({ error: "expected the web's URL, e.g. https://ci.example.com" }),
            username: z.string().min(1),
            passwordSecret: secretRef,
            timeoutSeconds: z.number().int().positive().default(120),
        }).optional(),
    }),
});

/** Built-in defaults; the stack's `defaults` and each host override them, field by field. */
export const BUILTIN_DEFAULTS = WORKER_DEFAULTS;

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
