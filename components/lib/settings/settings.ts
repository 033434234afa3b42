/**
 * A worker's settings: what a GpuWorker (or one host of a stack) can set besides its
 * transport and inventory, their zod schema (the components' own contract, which the stack
 * config reuses) and the built-in defaults. Pure.
 */
import { z } from "zod";
import { VERIFY_FIELDS, warnOnlyFieldsSchema } from "../discovery/verify";
import { ALLOCATION_MODES, ASK_VARIABLE, DEFAULT_REPLICAS, MAX_WAIT_SECONDS } from "../gpu/allocation";
import { PRIVILEGED_MODES } from "../gpu/plan";
import { RUNC_CVE_POLICIES, SPEC_FEATURE_NAMES, SPEC_FEATURES } from "../gpu/spec-features";
import { DEFAULT_IGNORED_XIDS, XID_RANGE } from "../gpu/xids";
import { TOOLKITS } from "../toolkit/versions";
import { defaultsOf } from "./schema-docs";
import { sshPublicKeySchema } from "./ssh-public-key";
import { CONCOURSE_TAG, datasetRoot, hostAddress, hostPath, httpUrl, jobMappingDir, plainName, wholeNumber, workDir, writableSuffix } from "./value-patterns";

export const nonNegativeInt = z
    .number({ error: "expected a non-negative integer" })
    .int({ error: "expected a non-negative integer" })
    .nonnegative({ error: "expected a non-negative integer" });
export const port = z
    .number({ error: "expected a port number" })
    .int({ error: "expected a port number" })
    .min(1, { error: "expected a port number (1-65535)" })
    .max(65535, { error: "expected a port number (1-65535)" });
/** Absolute, in normal form, of plain characters (value-patterns.ts). */
export const absolutePath = hostPath;
export const version = z
    .string({ error: "expected a version such as 1.2.3" })
    .regex(/^[0-9]+(\.[0-9]+)+(-[0-9A-Za-z.-]+)?$/, { error: "expected a version such as 1.2.3" });
/** Any vendor's toolkit version form (1.17.8, 1.18.0~rc.1); the vendor's own form is checked with the host. */
const toolkitVersionForm = z.string().regex(/^[0-9]+(\.[0-9]+)+(~rc\.[0-9]+)?$/, { error: "expected preinstalled or a version such as 1.17.8" });
// One schema, not a union of two, so a bad value's error names both forms.
const DRIVER_VERSION_ERROR = "expected preinstalled or a pinned version such as 550.54.15";
const driverVersion = z.string({ error: DRIVER_VERSION_ERROR }).regex(/^(preinstalled|[0-9]+(\.[0-9]+)+(-[0-9A-Za-z.-]+)?)$/, { error: DRIVER_VERSION_ERROR });
/** The TSA's public key: one key line (ssh-public-key.ts), its comment taken. */
export const publicKey = sshPublicKeySchema("tsa");
/** A Concourse tag: kept plain, since CONCOURSE_TAG (which we never use) splits on commas. */
const tag = z.string().regex(CONCOURSE_TAG, { error: "expected a tag of letters, digits and _.:=+,-" });

/** An Xid code, as the settings name one. */
const xidCode = z
    .number({ error: `expected an Xid: an integer from ${XID_RANGE.min} to ${XID_RANGE.max}` })
    .int({ error: `expected an Xid: an integer from ${XID_RANGE.min} to ${XID_RANGE.max}` })
    .min(XID_RANGE.min, { error: `expected an Xid: an integer from ${XID_RANGE.min} to ${XID_RANGE.max}` })
    .max(XID_RANGE.max, { error: `expected an Xid: an integer from ${XID_RANGE.min} to ${XID_RANGE.max}` });
/** A time in whole seconds, from 1 up to a day. */
const seconds = z
    .number({ error: "expected whole seconds from 1 to 86400" })
    .int({ error: "expected whole seconds from 1 to 86400" })
    .min(1, { error: "expected whole seconds from 1 to 86400" })
    .max(86400, { error: "expected whole seconds from 1 to 86400" });
export const ON_FATAL_POLICIES = ["land", "retire", "none"] as const;

/** How long a registration check waits for the web to list the worker as planned, in seconds. */
export const REGISTRATION_TIMEOUT_SECONDS = 120;

/*
 * Each field's doc (`.meta({ description })`, markdown: it is the README's "meaning" column) and
 * default (`.default(value)`, or `defaultText` where another place computes it) are written here
 * and nowhere else: GpuWorkerArgs, the stack schema, WORKER_DEFAULTS and the README's settings
 * table (`npm run docs:settings`) are derived from this schema.
 */
export const settingsSchema = z.strictObject({
    selection: z
        .union([z.literal("all"), z.array(nonNegativeInt).min(1, { error: "select at least one GPU, or all" })], {
            error: "expected all or a list of GPU indices",
        })
        .default("all")
        .meta({ description: "the GPUs the worker gets: `all` or a list of indices" }),
    verify: z
        .strictObject({
            warnOnly: warnOnlyFieldsSchema.default([]).meta({
                description: `inventory fields whose differences only warn: ${VERIFY_FIELDS.join(", ")} ([docs/discovery.md](docs/discovery.md))`,
            }),
        })
        .meta({ description: "how the hardware found on `up` is compared with the declared inventory" }),
    driver: z
        .strictObject({
            version: driverVersion
                .default("preinstalled")
                .meta({ description: "a pinned version (e.g. `550.54.15`) or `preinstalled`; anything else (`latest`) is refused naming both forms" }),
        })
        .meta({ description: "the GPU driver the host runs" }),
    toolkit: z
        .strictObject({
            // The vendor's own version form and the CVE floor are checked where the vendor is known (the host's plan).
            version: z
                .union([z.literal("preinstalled"), toolkitVersionForm], { error: "expected preinstalled or a version such as 1.17.8" })
                .optional()
                .meta({
                    defaultText: `the vendor's: \`${TOOLKITS.nvidia.defaultVersion}\` (NVIDIA), \`${TOOLKITS.amd.defaultVersion}\` (AMD)`,
                    description:
                        "container toolkit version in the vendor's own form, or `preinstalled`; versions with a known container escape are refused, naming the CVE and the first fixed version " +
                        `(${[...TOOLKITS.nvidia.cves, ...TOOLKITS.amd.cves].map((c) => `${c.id}: ${c.fixedIn}`).join(", ")})`,
                }),
            cdi: z.boolean().default(true).meta({ description: "generate a CDI spec and inject GPUs by CDI id" }),
        })
        .meta({ description: "the vendor's container toolkit and its CDI spec" }),
    datasets: z
        .strictObject({
            root: datasetRoot.default("/srv").meta({
                description:
                    "mounted once into every container, at its own path, read-only (all the way down, `rro`, where runc and the kernel have it). Refused: `/`, system folders and everything in them (`/bin`, `/boot`, `/dev`, `/etc`, `/lib*`, `/proc`, `/root`, `/run`, `/sbin`, `/sys`, `/usr`), `/var` and its standard folders (`/var/lib`, `/var/cache`, ...; a folder of its own below them is fine), where the system and its services keep their state, with everything in it (`/var/lib/containerd`, `/var/lib/lxd`, `/var/lib/postgresql`, `/var/lib/gpu-workers`, `/var/log`, `/var/spool`, ...), `/home` (users' folders) and `/tmp`, `/var/tmp` (writable by every user). On the host it must be owned by root and not writable by group or others: the validator fails the `up` otherwise (also for a folder above it that others may write to without the sticky bit), and the wrapper refuses to create containers",
            }),
            writableSuffixes: z.array(writableSuffix).default(["_writable", "_rw"]).meta({
                description:
                    "direct subfolders (real folders, never links) whose name ends so are mounted read-write on top; a link under the root resolves inside the container and has the mode of what it leads to ([details](docs/runc-wrapper.md#how-it-works))",
            }),
        })
        .meta({ description: "the host folders every container of the worker gets" }),
    wrapper: z
        .strictObject({
            allow: z
                .array(z.enum(SPEC_FEATURE_NAMES, { error: `expected one of ${SPEC_FEATURE_NAMES.join(", ")}` }))
                .default([])
                .meta({
                    description:
                        "what the runc wrapper lets a container's spec carry that it refuses otherwise, naming it: " +
                        SPEC_FEATURE_NAMES.map((f) => `\`${f}\` (${SPEC_FEATURES[f]})`).join("; ") +
                        ". Concourse's containers carry none of them; another caller of the runtime on the host (a Kubernetes tenant) can",
                }),
            runcCves: z.enum(RUNC_CVE_POLICIES, { error: "expected warn or refuse" }).default("warn").meta({
                description:
                    "when the runc behind the wrapper (the host's, and the one in the Concourse release) is open to a known container breakout (CVE-2019-5736, CVE-2021-30465, CVE-2024-21626, CVE-2025-31133, CVE-2025-52565, CVE-2025-52881; a distribution's backport counts as fixed where its package's changelog names the CVE): `warn` names each CVE and the runc versions that fix it during `up`, `refuse` also fails the `up`",
            }),
        })
        .meta({ description: "the runc wrapper's refusals" }),
    metrics: z
        .strictObject({
            nodeExporter: z.boolean({ error: "expected true or false" }).default(false).meta({
                description:
                    "install and start Debian's `prometheus-node-exporter`, and a timer that writes each selected GPU's utilisation, memory, temperature, power and health, labelled with the container holding it (and its build, where the container says), every 15 s for its textfile collector (Debian's `/var/lib/prometheus/node-exporter`; [docs/gpu-metrics.md](docs/gpu-metrics.md)); never on a worker without GPUs",
            }),
            dcgmJobMappingDir: jobMappingDir.optional().meta({
                description:
                    "dcgm-exporter's `--hpc-job-mapping-dir`: the runc wrapper writes there, per GPU, the ids of the containers holding it, at create, and clears them at delete; `down` removes those files and the folders the wrapper made (off when not set). Root writes there, so refused: the dataset root or a folder inside it, the work dir or a folder inside it, what `datasets.root` refuses (`/`, system folders, `/var/lib/...` state, `/home`, `/tmp`, `/var/tmp`), and `/srv`, `/opt`, `/mnt`, `/media` themselves; a folder of its own in `/run` is fine (such as `/run/dcgm-jobs`, gone at reboot), but not `/run` itself, `/run/lock`, `/run/shm`, `/run/user` or `/run/gpu-workers`. On the host the wrapper reaches it from `/` without following a link, and writes nothing unless every folder on the way is owned by root and writable by nobody else (one above it may be with the sticky bit, as `/tmp`); what it makes there gets mode 0755 ([details](docs/gpu-metrics.md#dcgm-exporters-job-mapping))",
            }),
        })
        .meta({ description: "GPU metrics per build, for Prometheus" }),
    containerd: z
        .strictObject({
            runtimeName: z
                .string()
                .regex(/^[a-z0-9][a-z0-9_.-]*$/, { error: "expected a runtime name such as gpu" })
                .default("gpu")
                .meta({ description: "the containerd runtime entry that calls the wrapper (the CRI handler name)" }),
            default: z.boolean().default(false).meta({ description: "make it containerd's default runtime" }),
            kata: z.boolean({ error: "expected true or false" }).default(false).meta({
                description:
                    "also add Kata Containers' GPU runtime entry `kata-qemu-nvidia-gpu` (its shim and config under `/opt/kata`, which the host must have), beside the wrapper's; a Kubernetes node whose cluster offers it needs it ([Kubernetes](#kubernetes-gpu-nodes-gpu-workerskubernetes))",
            }),
        })
        .meta({ description: "the containerd runtime entry through the runc wrapper" }),
    fabricManager: z
        .strictObject({
            mode: z
                .enum(["auto", "host", "service-vm", "off", "on"], { error: "expected auto, host, service-vm or off (on is the older name of host)" })
                .default("auto")
                .meta({
                    description:
                        "`host` (fabricmanager on the host: the whole board is one worker), `service-vm` (the host is a board shared by several workers, above), `off`, or `auto` (`host` where NVSwitches are declared, else `off`); `on`, from earlier stacks, means `host`",
                }),
            partitions: z.array(nonNegativeInt).default([]).meta({
                description:
                    "fabric partition ids to activate on the host (mode `host`); an id the board's table lacks is refused, naming the table's ids (the table: `fabric.partitionTable` on the host, default `hgx-h100-8gpu`)",
            }),
        })
        .meta({ description: "NVIDIA fabricmanager, on boards with NVSwitches" }),
    health: z
        .strictObject({
            onFatal: z.enum(ON_FATAL_POLICIES, { error: "expected land, retire or none" }).default("land").meta({
                description:
                    "what a fatal GPU event does to the worker: `land` (no new builds, running ones finish; SIGUSR1), `retire` (SIGUSR2), or `none` (only the journal and the status file say so); the worker is started again once its GPUs are healthy for `settleSeconds` ([docs/gpu-health.md](docs/gpu-health.md))",
            }),
            ignoreXids: z
                .array(xidCode)
                .default([])
                .meta({
                    description: `Xids that do not land the worker, besides the default list (${DEFAULT_IGNORED_XIDS.join(", ")}, as NVIDIA's device plugin)`,
                }),
            fatalXids: z.array(xidCode).default([]).meta({ description: "Xids taken from that default list: they land the worker after all" }),
            pollSeconds: seconds.default(30).meta({
                description: "how often the vendor's tool is asked for a lost GPU, uncorrectable ECC errors, a row-remap failure and leftover processes",
            }),
            settleSeconds: seconds
                .default(300)
                .meta({ description: "how long every GPU must poll healthy, after the last fatal event, before the worker is started again" }),
            dirtyGraceSeconds: seconds
                .default(600)
                .meta({ description: "how long a GPU may hold compute processes of no running container before that lands the worker" }),
        })
        .superRefine((h, ctx) => {
            for (const code of h.ignoreXids.filter((c) => h.fatalXids.includes(c)))
                ctx.addIssue({ code: "custom", path: ["fatalXids"], message: `Xid ${code} is in both ignoreXids and fatalXids` });
        })
        .meta({ description: "the GPU health watcher: what it does on a fatal GPU event" }),
    allocation: z
        .strictObject({
            mode: z
                .enum(ALLOCATION_MODES, { error: `expected one of ${ALLOCATION_MODES.join(", ")}` })
                .default("all")
                .meta({
                    description:
                        "how the runc wrapper hands the worker's GPUs to containers: `all`, every container gets every selected GPU (nothing changes); " +
                        "`exclusive`, each unit (a selected GPU, or on a MIG GPU one MIG instance) is held by one task's container at a time; " +
                        "`timeSlice`, by up to `replicas` at once, with no memory isolation; `mps`, as timeSlice through an MPS control daemon " +
                        "per GPU with per-client thread and memory limits (NVIDIA, no MIG; a container holds one GPU at most; [docs/gpu-mps.md](docs/gpu-mps.md)). " +
                        "Check, get and put containers hold no GPU in every mode but `all`. " +
                        `A task asks with the param \`${ASK_VARIABLE}: N\`; the worker is tagged \`gpu-share=MODE\` and \`gpu-slots=N\` ` +
                        "(units × replicas). No effect on a worker without GPUs ([docs/gpu-allocation.md](docs/gpu-allocation.md))",
                }),
            perTask: wholeNumber(0)
                .default(1)
                .meta({ description: `units a task's container gets when it sets no \`${ASK_VARIABLE}\`; more than the worker's units is refused` }),
            replicas: wholeNumber(1)
                .optional()
                .meta({
                    defaultText: `\`${DEFAULT_REPLICAS}\` (timeSlice, mps); \`1\` (exclusive)`,
                    description: "containers holding one unit at once in `timeSlice` and `mps`; with `exclusive` anything but 1 is refused (leave it out)",
                }),
            waitSeconds: wholeNumber(
                0,
                MAX_WAIT_SECONDS,
                `expected whole seconds from 0 to ${MAX_WAIT_SECONDS} (a create must end within Concourse's containerd request timeout, 5 minutes by default)`,
            )
                .default(60)
                .meta({
                    description:
                        `how long a task's create waits for free units before it fails naming their holders; at most ${MAX_WAIT_SECONDS}, since ` +
                        "Concourse's create call must end within the worker's containerd request timeout (`CONCOURSE_CONTAINERD_REQUEST_TIMEOUT`, default 5m)",
                }),
        })
        .meta({ description: "GPUs handed out per task: exclusive units, time-slicing, MPS" }),
    concourse: z
        .strictObject({
            version: version.default("7.14.2").meta({ description: "the Concourse release the worker runs (and, by default, the stack's web)" }),
            tsaHost: hostAddress.optional().meta({
                defaultText: "the web's",
                description:
                    "the TSA as the worker reaches it (a DNS name or an IP address); from `gpu-workers:web` when the stack has one (an LXD worker on the web's LXD server reaches its published TSA port through a proxy device of its own)",
            }),
            tsaPort: port.default(2222).meta({ description: "the TSA's port as the worker reaches it; the web's when the stack has one" }),
            tsaPublicKey: publicKey.optional().meta({
                defaultText: "the web's",
                description:
                    "the TSA's host key: its public key line as the `.pub` file holds it (`ssh-rsa AAAA... comment`); a known_hosts line, a fingerprint, a bare body, several keys or a private key are refused",
            }),
            team: plainName("a team name")
                .optional()
                .meta({ description: "register as a team worker (letters, digits and `_ . -`, not starting with `.` or `-`)" }),
            tags: z.array(tag).default([]).meta({ description: "extra tags, after the computed ones" }),
            binary: z
                .union(
                    [
                        z.strictObject({
                            url: httpUrl.meta({ description: "where the host downloads the release tarball" }),
                            sha256: z
                                .string()
                                .regex(/^[0-9a-f]{64}$/, { error: "expected a hex sha256" })
                                .meta({ description: "the tarball's sha256, checked before it is unpacked" }),
                        }),
                        z.strictObject({ path: z.string().min(1).meta({ description: "a release tarball uploaded from here" }) }),
                    ],
                    { error: "expected {url, sha256} or {path}" },
                )
                .optional()
                .meta({
                    description:
                        "`{url, sha256}` the host downloads (an `http://` or `https://` URL of plain characters), or `{path}` of a release tarball uploaded from here (a relative path is the project folder's); without it the chain stops before the worker and says so",
                }),
            workDir: workDir.default("/opt/concourse/worker").meta({
                description:
                    "deleted on destroy, so refused: what `datasets.root` refuses, `/opt`, `/srv`, `/mnt`, `/media` themselves, and the dataset root, a folder inside it or one holding it",
            }),
            userNamespace: z.boolean({ error: "expected true or false" }).optional().meta({
                defaultText: "true for an LXD container of the stack, else false",
                description:
                    "the worker's host is an unprivileged container, whose overlayfs refuses `metacopy`: the unit hides the offer from Concourse's volume driver (set it for an SSH host that is such a container)",
            }),
            networkMtu: z
                .number({ error: "expected an MTU such as 1500" })
                .int({ error: "expected an MTU such as 1500" })
                .min(576, { error: "expected an MTU of at least 576" })
                .max(65535, { error: "expected an MTU of at most 65535" })
                .optional()
                .meta({
                    description: "MTU of the containers' network; Concourse takes it from the host's outbound interface, so a host without a network needs it",
                }),
            taskCheck: z.boolean({ error: "expected true or false" }).default(true).meta({
                description:
                    "where the registration is checked, also run one task tagged with the worker's tags through the web (a one-off build on the image of Concourse's bundled mock resource, up to 300 s) and fail the `up` unless it succeeds ([how](docs/concourse.md#a-task-runs-through-the-web))",
            }),
            privilegedMode: z.enum(PRIVILEGED_MODES, { error: "expected ignore, fuse-only or full" }).default("ignore").meta({
                description:
                    "what a `privileged: true` step gets (`CONCOURSE_CONTAINERD_PRIVILEGED_MODE`, always set): `ignore`, the same as any step; `fuse-only`, CAP_SYS_ADMIN and `/dev/fuse` in a user namespace; `full`, root on the worker. Both of the latter let such a step undo the read-only datasets; they tag the worker `privileged=MODE` and let the runc wrapper create such containers ([why ignore](docs/concourse.md#privileged-steps))",
            }),
        })
        .meta({ description: "the Concourse worker: its release, the TSA it registers with, its tags and work dir" }),
});

/** Every setting of a worker, defaults applied. */
export type WorkerSettings = z.infer<typeof settingsSchema>;

/**
 * One layer of settings as a caller gives it (GpuWorker's arguments, a stack's `defaults` or
 * one host): any group, any field of it; what is left out takes the default.
 */
export type SettingsLayer<S extends z.ZodObject = typeof settingsSchema> = {
    [G in keyof z.input<S>]?: z.input<S>[G] extends Record<string, unknown> ? { [K in keyof z.input<S>[G]]?: z.input<S>[G][K] } : z.input<S>[G];
};

/** Built-in defaults, taken from the schema; a stack's `defaults` and each host override them field by field. */
export const WORKER_DEFAULTS = defaultsOf(settingsSchema) as SettingsLayer;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Settings given whole, never merged key by key: one form replaces another ({path} after {url, sha256}). */
export const WHOLE_VALUES = new Set(["concourse.binary"]);

/**
 * A layer of settings over another: objects merge key by key, anything else (lists included)
 * is replaced, and so are the values in WHOLE_VALUES.
 */
export function mergeSettings(base: unknown, override: unknown, at = ""): unknown {
    if (override === undefined) return base;
    if (!isPlainObject(base) || !isPlainObject(override) || WHOLE_VALUES.has(at)) return override;
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(override)) out[key] = mergeSettings(base[key], value, at ? `${at}.${key}` : key);
    return out;
}

/**
 * The one parse of a worker's settings: the layers over WORKER_DEFAULTS, each over the one before,
 * checked by the schema (the components' own, or a program's extension of it). A stack's hosts and
 * GpuWorker alone both take their settings from here, and a plan made from settings parsed here is
 * never parsed again (GpuWorker given `planned`).
 */
export function parseSettings<S extends z.ZodType = typeof settingsSchema>(layers: unknown[], schema?: S): z.ZodSafeParseResult<z.output<S>> {
    const merged = layers.reduce((base: unknown, layer) => mergeSettings(base, layer), WORKER_DEFAULTS);
    return (schema ?? settingsSchema).safeParse(merged, { reportInput: true }) as z.ZodSafeParseResult<z.output<S>>;
}
