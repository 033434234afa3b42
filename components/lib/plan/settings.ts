/**
 * A worker's settings: what a GpuWorker (or one host of a stack) can set besides its
 * transport and inventory, their zod schema (the components' own contract, which the stack
 * config reuses) and the built-in defaults. Pure.
 */
import { z } from "zod";
import { warnOnlyFieldsSchema } from "../discovery/verify";
import { PRIVILEGED_MODES } from "../gpu/plan";
import { CONCOURSE_TAG, datasetRoot, hostAddress, hostPath, httpUrl, plainName, publicKeyLine, workDir, writableSuffix } from "./value-patterns";

export const nonNegativeInt = z.number({ error: "expected a non-negative integer" })
    .int({ error: "expected a non-negative integer" })
    .nonnegative({ error: "expected a non-negative integer" });
export const port = z.number({ error: "expected a port number" }).int({ error: "expected a port number" })
    .min(1, { error: "expected a port number (1-65535)" }).max(65535, { error: "expected a port number (1-65535)" });
/** Absolute, in normal form, of plain characters (value-patterns.ts). */
export const absolutePath = hostPath;
export const version = z.string({ error: "expected a version such as 1.2.3" }).regex(/^[0-9]+(\.[0-9]+)+(-[0-9A-Za-z.-]+)?$/, { error: "expected a version such as 1.2.3" });
/** Any vendor's toolkit version form (1.17.8, 1.18.0~rc.1); the vendor's own form is checked with the host. */
const toolkitVersionForm = z.string().regex(/^[0-9]+(\.[0-9]+)+(~rc\.[0-9]+)?$/, { error: "expected preinstalled or a version such as 1.17.8" });
// One schema, not a union of two, so a bad value's error names both forms.
const DRIVER_VERSION_ERROR = "expected preinstalled or a pinned version such as 550.54.15";
const driverVersion = z.string({ error: DRIVER_VERSION_ERROR }).regex(/^(preinstalled|[0-9]+(\.[0-9]+)+(-[0-9A-Za-z.-]+)?)$/, { error: DRIVER_VERSION_ERROR });
export const publicKey = publicKeyLine;
/** A Concourse tag: kept plain, since CONCOURSE_TAG (which we never use) splits on commas. */
const tag = z.string().regex(CONCOURSE_TAG, { error: "expected a tag of letters, digits and _.:=+,-" });

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
        version: driverVersion,
    }),
    toolkit: z.strictObject({
        /**
         * The container toolkit version, or preinstalled to use (and check) the one on the host.
         * Unset: the vendor's default (components/lib/toolkit/versions.ts). The vendor's own
         * version form and the CVE floor are checked where the vendor is known (the host's plan).
         */
        version: z.union([z.literal("preinstalled"), toolkitVersionForm], { error: "expected preinstalled or a version such as 1.17.8" }).optional(),
        /** Generate a CDI spec and inject GPUs by CDI id. */
        cdi: z.boolean(),
    }),
    datasets: z.strictObject({
        root: datasetRoot,
        writableSuffixes: z.array(writableSuffix),
    }),
    containerd: z.strictObject({
        runtimeName: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, { error: "expected a runtime name such as gpu" }),
        default: z.boolean(),
    }),
    fabricManager: z.strictObject({
        /** host, service-vm, off, or auto (host where NVSwitches are declared); on is the older name of host. */
        mode: z.enum(["auto", "host", "service-vm", "off", "on"], { error: "expected auto, host, service-vm or off (on is the older name of host)" }),
        partitions: z.array(nonNegativeInt),
    }),
    concourse: z.strictObject({
        version: version,
        /** The TSA's host name or address as the worker reaches it; taken from the web when the stack has one. */
        tsaHost: hostAddress.optional(),
        tsaPort: port,
        /** The TSA's host public key ("ssh-rsa AAAA..."); taken from the web when the stack has one. */
        tsaPublicKey: publicKey.optional(),
        team: plainName("a team name").optional(),
        tags: z.array(tag),
        /** Where the worker binary comes from: a URL the host downloads, or a local file uploaded. */
        binary: z.union([
            z.strictObject({ url: httpUrl, sha256: z.string().regex(/^[0-9a-f]{64}$/, { error: "expected a hex sha256" }) }),
            z.strictObject({ path: z.string().min(1) }),
        ], { error: "expected {url, sha256} or {path}" }).optional(),
        workDir: workDir,
        /**
         * The worker's host runs in a user namespace (an unprivileged container), where overlayfs
         * refuses metacopy; absent: true for an LXD container this stack creates, else false.
         */
        userNamespace: z.boolean({ error: "expected true or false" }).optional(),
        /** MTU of the containers' network; needed where the host has no network route to detect it from. */
        networkMtu: z.number({ error: "expected an MTU such as 1500" }).int({ error: "expected an MTU such as 1500" }).min(576, { error: "expected an MTU of at least 576" }).max(65535, { error: "expected an MTU of at most 65535" }).optional(),
        /**
         * Where the registration is checked: then also run one task tagged with the worker's tags
         * through the web (a one-off build on the mock resource's image) and fail the up unless it
         * succeeds. Default: true.
         */
        taskCheck: z.boolean({ error: "expected true or false" }).optional(),
        /**
         * What a `privileged: true` step gets (CONCOURSE_CONTAINERD_PRIVILEGED_MODE): ignore (the
         * same as any step), fuse-only (CAP_SYS_ADMIN in a user namespace) or full (root on the
         * worker). Any mode but ignore can undo the read-only datasets, and is tagged privileged=MODE.
         */
        privilegedMode: z.enum(PRIVILEGED_MODES, { error: "expected ignore, fuse-only or full" }),
    }),
});

/** Every setting of a worker, defaults applied. */
export type WorkerSettings = z.infer<typeof settingsSchema>;

/** Built-in defaults; a stack's `defaults` and each host override them field by field. */
export const WORKER_DEFAULTS = {
    selection: "all",
    verify: { warnOnly: [] },
    driver: { version: "preinstalled" },
    toolkit: { cdi: true },
    datasets: { root: "/srv", writableSuffixes: ["_writable", "_rw"] },
    containerd: { runtimeName: "gpu", default: false },
    fabricManager: { mode: "auto", partitions: [] },
    concourse: { version: "7.14.2", tsaPort: 2222, tags: [], workDir: "/opt/concourse/worker", privilegedMode: "ignore" },
} as const;

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
