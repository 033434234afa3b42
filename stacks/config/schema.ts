/**
 * The stack config schema: `gpu-workers:defaults` (settings every host shares) and
 * `gpu-workers:hosts` (one entry per host, overriding any default). Unknown keys are errors.
 */
import { z } from "zod";
import {
    absolutePath,
    BUILTIN_PARTITION_TABLES,
    datasetRoot,
    DEFAULT_PARTITION_TABLE,
    hostStepsSchema,
    httpUrl,
    inventorySchema,
    ipAddress,
    libvirtUri,
    LXD_TRANSPORT_DEFAULTS,
    lxdTransportSchema as lxdInstanceSchema,
    lxdWorkerTransportSchema,
    partitionListSchema,
    plainName,
    REGISTRATION_TIMEOUT_SECONDS,
    SERVICE_VM_DEFAULTS,
    settingsSchema as workerSettingsSchema,
    sshJumpHostSchema,
    sshTransportSchema as sshHostSchema,
    WORKER_DEFAULTS,
} from "../../components/program";
import type { Transport as TransportOf } from "../../components/program";
import { fleetOptionsSchema } from "./fleet-schema";
import { dnsLabel } from "./names";

/**
 * The stack's own options, each a key of its own (`gpu-workers:hostSteps`): what they take, their
 * defaults and their docs (the README's table of them).
 */
export const stackOptionsSchema = z.strictObject({
    hostSteps: hostStepsSchema,
    allowNoHosts: z.boolean({ error: "expected true or false" }).default(false).meta({
        description: "let an empty `gpu-workers:hosts` through: `up` then removes every worker the stack made (without it, an empty list is refused)",
    }),
    fleet: fleetOptionsSchema.default({ skipCheckpoints: false }),
});

/** Name of another config key that holds a secret (set with `pulumi config set --secret`). */
export const secretRef = z
    .string({ error: "expected the name of a secret config key" })
    .regex(/^[A-Za-z][A-Za-z0-9_.-]*$/, { error: "expected the name of a secret config key, e.g. gpu-a-ssh-key" });
export const hostName = dnsLabel("a host name", "gpu-a");

// The secret's key goes before the host key, as the stack has always listed (and reported) them.
const { hostKey: jumpHostKey, ...jumpHost } = sshJumpHostSchema.shape;
const { hostKey, proxy, ...sshHost } = sshHostSchema.shape;

/** A jump host (bastion), its login key named by a secret config key. */
export const sshProxySchema = z.strictObject({
    ...jumpHost,
    privateKeySecret: secretRef.meta({ description: "name of a secret config key holding the OpenSSH private key of that user" }),
    hostKey: jumpHostKey,
});

/** The components' SSH transport, its login keys named by secret config keys. */
export const sshTransportSchema = z.strictObject({
    ...sshHost,
    privateKeySecret: secretRef.meta({ description: "name of a secret config key holding the OpenSSH private key of the login user" }),
    hostKey,
    proxy: sshProxySchema.optional().meta(proxy.meta()!),
});

export const lxdServerSchema = z
    .strictObject({
        /** Local unix socket of the LXD daemon (default /var/lib/lxd/unix.socket). */
        socket: absolutePath.optional(),
        /** HTTPS endpoint, e.g. https://10.0.0.5:8443; needs a trusted client certificate. */
        url: z.url({ error: "expected an https:// URL" }).optional(),
        clientCertSecret: secretRef.optional(),
        clientKeySecret: secretRef.optional(),
        /** PEM of the server certificate to pin (HTTPS only). */
        serverCert: z.string().optional(),
    })
    .superRefine((s, ctx) => {
        if (s.url && s.socket) ctx.addIssue({ code: "custom", path: ["url"], message: "give either socket or url, not both" });
        if (s.url && (!s.clientCertSecret || !s.clientKeySecret))
            ctx.addIssue({ code: "custom", path: ["clientCertSecret"], message: "an https url needs clientCertSecret and clientKeySecret" });
    });

const pciAddress = z.string().regex(/^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/, { error: "expected a PCI address such as 0000:09:00.0" });
const positiveInt = z
    .number({ error: "expected a positive integer" })
    .int({ error: "expected a positive integer" })
    .min(1, { error: "expected a positive integer" });

const ipv4 = z
    .string()
    .regex(/^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$/, { error: "expected an IPv4 address such as 10.10.0.11" });

const instanceField = lxdInstanceSchema.shape;
/**
 * The stack takes narrower forms of some of the components' LXD fields (each keeps the
 * component's doc): the instance is named as a host is, the image and profiles by plain names,
 * the proxy's address is an IP address, and the login user is root, as the instance's key is
 * root's (another user could not read it to log in).
 */
export const stackLxdFields = {
    instance: hostName.meta(instanceField.instance.meta()!),
    image: z
        .string({ error: "expected an image alias or fingerprint" })
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/+-]*$/, {
            error: "expected an image alias or fingerprint: letters, digits and _ . : / + -, starting with a letter or digit",
        })
        .meta(instanceField.image.meta()!),
    profiles: z.array(plainName("a profile name")).default(LXD_TRANSPORT_DEFAULTS.profiles).meta(instanceField.profiles.meta()!),
    sshAddress: ipAddress.default(LXD_TRANSPORT_DEFAULTS.sshAddress).meta(instanceField.sshAddress.meta()!),
    user: z
        .literal("root", { error: "expected root (the SSH key placed in the instance is root's)" })
        .default("root")
        .meta({ description: "the login user inside the instance: root, whose key is placed there" }),
    server: lxdServerSchema.default({}),
};

const workerField = lxdWorkerTransportSchema.shape;
const DATASET_FOLDER_ERROR = "expected a folder name of letters, digits and _ . + @ , = ~ - (no /, not starting with -)";

/** A worker's LXD transport as the stack takes it: the components' (its proxy ports are the stack's to derive), in the stack's forms, its server with the secrets named. */
export const lxdTransportSchema = lxdWorkerTransportSchema
    .omit({ serverPorts: true })
    .extend({
        ...stackLxdFields,
        network: plainName("an LXD network name (e.g. lxdbr0)").optional().meta(workerField.network.meta()!),
        address: ipv4.optional().meta(workerField.address.meta()!),
        datasetSource: datasetRoot.optional().meta(workerField.datasetSource.meta()!),
        datasetFolders: z
            .array(z.string().regex(/^(?!\.\.?$)[A-Za-z0-9_.+@,=~][A-Za-z0-9_.+@,=~-]*$/, { error: DATASET_FOLDER_ERROR }))
            .optional()
            .meta(workerField.datasetFolders.meta()!),
    })
    .superRefine(
        (l, ctx) => {
            if (l.type === "container") {
                for (const key of ["network", "address"] as const)
                    if (l[key] !== undefined)
                        ctx.addIssue({ code: "custom", path: [key], message: "only for a virtual-machine (a container is reached through a plain proxy)" });
            }
            if (l.type !== "virtual-machine") return;
            // LXD forwards to a VM only in NAT mode: to a static address, from a host address that is not a wildcard.
            for (const key of ["network", "address"] as const)
                if (l[key] === undefined)
                    ctx.addIssue({
                        code: "custom",
                        path: [key],
                        message: "required for a virtual-machine: LXD forwards sshd to a VM only through NAT to a static address on a managed network",
                    });
            if (["0.0.0.0", "::"].includes(l.sshAddress))
                ctx.addIssue({
                    code: "custom",
                    path: ["sshAddress"],
                    message: "a virtual machine's sshd is forwarded through NAT, which cannot listen on a wildcard address: give the LXD server's own address",
                });
            // Also when other fields are wrong, so that every problem is reported at once.
        },
        { when: () => true },
    );

const TRANSPORT_CHOICE = "expected exactly one of ssh: {...} or lxd: {...}";

// Both keys are parsed as optional fields rather than as a union, so that a mistake inside
// one of them is reported at its own path (transport.lxd.sshPort), not as "neither matched".
export const transportSchema = z
    .strictObject({ ssh: sshTransportSchema.optional(), lxd: lxdTransportSchema.optional() }, { error: TRANSPORT_CHOICE })
    .refine((t) => (t.ssh === undefined) !== (t.lxd === undefined), { error: TRANSPORT_CHOICE })
    .transform((t): TransportOf<SshTransport, LxdTransport> => (t.ssh ? { ssh: t.ssh } : { lxd: t.lxd! }));

/** A worker's settings as the stack gives them: the components' own, and the secret key holding the worker's TSA key. */
export const settingsSchema = workerSettingsSchema.extend({
    concourse: workerSettingsSchema.shape.concourse.extend({
        workerKeySecret: secretRef.optional().meta({
            description:
                "secret config key with the worker's key: an RSA key in PEM (`concourse generate-key -t ssh`), the only kind Concourse reads; generated when absent",
        }),
        registration: z
            .strictObject({
                url: httpUrl,
                username: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.@-]*$/, { error: "expected a Concourse user name of letters, digits and _ . @ -" }),
                passwordSecret: secretRef,
                timeoutSeconds: z.number().int().positive().default(REGISTRATION_TIMEOUT_SECONDS),
                caSecret: secretRef.optional(),
            })
            .optional()
            .meta({
                defaultText: "the web's",
                description:
                    `\`{url, username, passwordSecret, timeoutSeconds (${REGISTRATION_TIMEOUT_SECONDS}), caSecret}\`: check the registration at a web outside this stack; ` +
                    "for an https web, `caSecret` names the secret config key of its certificate or CA, the only one trusted (default: the system's CAs)",
            }),
    }),
});

/** Built-in defaults; the stack's `defaults` and each host override them, field by field. */
export const BUILTIN_DEFAULTS = WORKER_DEFAULTS;

/**
 * A shared board's fabric (a host whose fabricManager.mode is service-vm): its partition table,
 * the PCI functions its service VM gets, and the service VM.
 */
export const boardFabricSchema = z.strictObject({
    partitionTable: z
        .union(
            [
                z.enum(Object.keys(BUILTIN_PARTITION_TABLES) as [string, ...string[]], {
                    error: `expected a built-in table (${Object.keys(BUILTIN_PARTITION_TABLES).join(", ")}) or a list of {id, modules}`,
                }),
                partitionListSchema,
            ],
            { error: `expected a built-in table (${Object.keys(BUILTIN_PARTITION_TABLES).join(", ")}) or a list of {id, modules}` },
        )
        .default(DEFAULT_PARTITION_TABLE)
        .meta({ description: "the board's partition table: a built-in one by name, or the board's own as a list of `{id, modules}`" }),
    nvswitchPci: z.array(pciAddress).min(1, { error: "name the board's NVSwitches" }).meta({ description: "PCI addresses of the NVSwitches (`lspci -Dnn`)" }),
    memoryControllerPci: z
        .array(pciAddress)
        .default([])
        .meta({ description: "the NVSwitch memory controller (HGX: `Memory controller: PMC-Sierra Inc. Device 4128`)" }),
    serviceVm: z
        .strictObject({
            image: absolutePath.meta({ description: "base disk image on the board with cloud-init, the NVIDIA driver and fabricmanager of the same version" }),
            name: plainName("a domain name").optional().meta({ defaultText: "`<board>-fabric`", description: "the service VM's libvirt domain" }),
            vcpus: positiveInt.optional().meta({ defaultText: `\`${SERVICE_VM_DEFAULTS.vcpus}\``, description: "its virtual CPUs" }),
            memoryMiB: positiveInt.optional().meta({ defaultText: `\`${SERVICE_VM_DEFAULTS.memoryMiB}\``, description: "its memory in MiB" }),
            diskGiB: positiveInt
                .optional()
                .meta({ defaultText: "the image's size", description: "the size of its disk layer in GiB (the image itself is never written)" }),
            network: plainName("a libvirt network name")
                .optional()
                .meta({ description: "a libvirt network for a NIC (apt access for fabricmanager); none by default" }),
            libvirtUri: libvirtUri
                .optional()
                .meta({ defaultText: `\`${SERVICE_VM_DEFAULTS.libvirtUri}\``, description: "the libvirt connection on the board" }),
            readyTimeoutSeconds: positiveInt.optional().meta({
                defaultText: `\`${SERVICE_VM_DEFAULTS.readyTimeoutSeconds}\``,
                description: "how long the step waits for the VM to report its partitions active, in seconds",
            }),
        })
        .meta({ description: "the service VM that runs fabricmanager for the board" }),
});

/** A worker of a shared board: which board, and how many GPUs (or which partition). */
export const boardRefSchema = z
    .strictObject({
        /** The board's host name. */
        name: hostName,
        gpus: positiveInt.optional(),
        partition: z
            .number({ error: "expected a partition id" })
            .int({ error: "expected a partition id" })
            .min(0, { error: "expected a partition id" })
            .optional(),
    })
    .refine((b) => b.gpus !== undefined || b.partition !== undefined, { error: "give gpus (how many) or partition (an id of the board's table)" });

/**
 * The name a host (or the web) had before a rename in the stack: its resources keep their state
 * under the new name (Pulumi aliases), so nothing is made again or deleted on the machine.
 */
export const renamedFrom = hostName.optional();

export const hostEntrySchema = z
    .object({
        name: hostName,
        renamedFrom,
        transport: transportSchema,
        inventory: inventorySchema,
    })
    .catchall(z.unknown());

export type Settings = z.infer<typeof settingsSchema>;
export type SshTransport = z.infer<typeof sshTransportSchema>;
export type LxdTransport = z.infer<typeof lxdTransportSchema>;
export type Transport = z.infer<typeof transportSchema>;

/** One host after defaults are applied and everything is validated. */
export interface HostConfig extends Settings {
    name: string;
    /** The host's name before a rename (its resources are aliased to the new name). */
    renamedFrom?: string;
    transport: Transport;
    inventory: z.infer<typeof inventorySchema>;
}

export type BoardFabric = z.infer<typeof boardFabricSchema>;
export type BoardRef = z.infer<typeof boardRefSchema>;

/** A worker of a shared board: its settings and LXD VM; its GPUs come from its partition. */
export interface BoardWorkerConfig extends Omit<HostConfig, "inventory"> {
    board: BoardRef;
}

/** A board shared through fabricmanager's service VM (fabricManager.mode service-vm), with its workers. */
export interface BoardConfig {
    name: string;
    transport: { ssh: SshTransport };
    inventory: z.infer<typeof inventorySchema>;
    verify: Settings["verify"];
    fabric: BoardFabric;
    workers: BoardWorkerConfig[];
}
