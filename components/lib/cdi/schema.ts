/**
 * A validator for Container Device Interface (CDI) specs, enforcing the rules of the CDI
 * specification (cncf-tags/container-device-interface, SPEC.md) for the cdiVersion the spec
 * declares. Where SPEC.md is silent or looser than what runtimes enforce, the reference
 * implementation (pkg/parser, api/producer/validator-default.go, specs-go/version.go) decides,
 * because every CDI-aware runtime (podman, containerd, CRI-O, docker) uses it: a spec it
 * rejects is a spec no runtime can use. Unknown keys are errors: the reference parser reads
 * specs with strict unmarshalling. It guards the specs renderCdiSpec writes, and is stricter
 * than the library on paths and annotation keys; the specs vendor tools write on hosts are
 * judged by the library itself (cdi-check/, run by host/generate-cdi.sh).
 *
 * Version history, from SPEC.md "Released versions" and specs-go/version.go:
 *   0.3.0  first tagged release of this format (devices / containerEdits); earlier drafts differ.
 *   0.4.0  mounts[].type.
 *   0.5.0  deviceNodes[].hostPath; device names may start with a digit (requiresV050).
 *   0.6.0  annotations on the spec and on devices; dots in the class part of kind.
 *   0.7.0  containerEdits.intelRdt; containerEdits.additionalGids.
 *   0.8.0  no spec change (the Go API lost its ToOCI functions).
 *   1.0.0  no spec change (minimum-version checks moved into the spec package).
 *   1.1.0  containerEdits.netDevices; intelRdt.schemata and intelRdt.enableMonitoring,
 *          while intelRdt.enableCMT / enableMBM are no longer valid.
 */
import { parse as parseYaml } from "yaml";
import { z } from "zod";

export const CDI_VERSIONS = ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"] as const;
export type CdiVersion = (typeof CDI_VERSIONS)[number];

/** The hook names the reference validator accepts (SPEC.md lists the OCI ones; prestart is accepted too). */
export const CDI_HOOK_NAMES = ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"] as const;

export function versionIndex(v: string): number {
    return CDI_VERSIONS.indexOf(v as CdiVersion);
}

function atLeast(declared: string, needed: CdiVersion): boolean {
    return versionIndex(declared) >= versionIndex(needed);
}

const absolutePath = z.string({ error: "expected an absolute path" }).regex(/^\//, { error: "expected an absolute path" });

/** "KEY=VALUE": the reference ValidateEnv rejects an entry whose first "=" is missing or at position 0. */
const envEntry = z
    .string({ error: "expected a KEY=VALUE string" })
    .refine((v) => v.indexOf("=") > 0, { error: (i) => `environment entry ${JSON.stringify(i.input)} is not KEY=VALUE` });

const uint32 = z
    .number({ error: "expected a non-negative integer" })
    .int({ error: "expected an integer" })
    .min(0, { error: "expected a non-negative integer" })
    .max(0xffffffff, { error: "expected a 32-bit unsigned integer" });

export const deviceNodeSchema = z.strictObject({
    /** Path in the container. */
    path: absolutePath,
    /** Path on the host; defaults to path. Needs cdiVersion 0.5.0. */
    hostPath: absolutePath.optional(),
    type: z.enum(["b", "c", "u", "p"], { error: "expected device type b, c, u or p" }).optional(),
    // Negative numbers are refused by the reference validator: -1 is a cgroup wildcard.
    major: z.number().int().min(0, { error: "expected a non-negative device number" }).optional(),
    minor: z.number().int().min(0, { error: "expected a non-negative device number" }).optional(),
    fileMode: z.number().int().min(0, { error: "expected a file mode" }).optional(),
    /** cgroup access: any of r (read), w (write), m (mknod). */
    permissions: z
        .string()
        .regex(/^[rwm]*$/, { error: "expected cgroup permissions made of r, w and m" })
        .optional(),
    uid: uint32.optional(),
    gid: uint32.optional(),
});

export const mountSchema = z.strictObject({
    hostPath: z.string({ error: "expected the host path" }).min(1, { error: "expected the host path" }),
    containerPath: absolutePath,
    options: z.array(z.string()).optional(),
    /** Filesystem type (e.g. bind, tmpfs). Needs cdiVersion 0.4.0. */
    type: z.string().min(1).optional(),
});

export const hookSchema = z.strictObject({
    hookName: z.enum(CDI_HOOK_NAMES, { error: `expected a hook name: ${CDI_HOOK_NAMES.join(", ")}` }),
    /** SPEC.md: "This specification extends the IEEE standard in that path MUST be absolute." */
    path: absolutePath,
    args: z.array(z.string()).optional(),
    env: z.array(envEntry).optional(),
    /** SPEC.md: "If set, timeout MUST be greater than zero." */
    timeout: z.number().int().positive({ error: "expected a timeout above 0 seconds" }).optional(),
});

export const intelRdtSchema = z.strictObject({
    closID: z
        .string()
        .refine((c) => c === "/" || (c.length < 4096 && c !== "." && c !== ".." && !/[/\n]/.test(c)), { error: "expected a valid CLOS name (a file name)" })
        .optional(),
    l3CacheSchema: z.string().optional(),
    memBwSchema: z.string().optional(),
    enableCMT: z.boolean().optional(),
    enableMBM: z.boolean().optional(),
    schemata: z.array(z.string()).optional(),
    enableMonitoring: z.boolean().optional(),
});

export const netDeviceSchema = z.strictObject({
    hostInterfaceName: z.string().min(1, { error: "expected the host interface name" }),
    name: z.string().min(1, { error: "expected the interface name in the container" }),
});

export const containerEditsSchema = z.strictObject({
    env: z.array(envEntry).optional(),
    deviceNodes: z.array(deviceNodeSchema).optional(),
    mounts: z.array(mountSchema).optional(),
    hooks: z.array(hookSchema).optional(),
    intelRdt: intelRdtSchema.optional(),
    additionalGids: z.array(uint32).optional(),
    netDevices: z.array(netDeviceSchema).optional(),
});

/** Kubernetes-style annotation keys ([prefix/]name), as the reference validator checks them. */
const ANNOTATION_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const annotationsSchema = z.record(z.string(), z.string({ error: "expected a string value" })).superRefine((map, ctx) => {
    let size = 0;
    for (const [key, value] of Object.entries(map)) {
        size += key.length + value.length;
        const slash = key.lastIndexOf("/");
        const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
        const name = slash >= 0 ? key.slice(slash + 1) : key;
        if (!ANNOTATION_NAME.test(name) || (prefix !== undefined && !isDnsSubdomain(prefix))) {
            ctx.addIssue({
                code: "custom",
                path: [key],
                message: `invalid annotation key ${JSON.stringify(key)} (expected [prefix/]name, name up to 63 letters, digits, -, _ and .)`,
            });
        }
    }
    if (size > 256 * 1024) ctx.addIssue({ code: "custom", message: "annotations exceed 256 KiB in total" });
});

export const deviceSchema = z.strictObject({
    name: z.string({ error: "expected the device name" }),
    annotations: annotationsSchema.optional(),
    containerEdits: containerEditsSchema,
});

export const cdiSpecSchema = z.strictObject({
    cdiVersion: z.string({ error: 'expected the CDI version, e.g. "0.5.0"' }),
    kind: z.string({ error: "expected the kind, vendor/class" }),
    annotations: annotationsSchema.optional(),
    devices: z.array(deviceSchema, { error: "expected a list of devices" }).min(1, { error: "a CDI spec needs at least one device" }),
    containerEdits: containerEditsSchema.optional(),
});

export type CdiDeviceNode = z.infer<typeof deviceNodeSchema>;
export type CdiMount = z.infer<typeof mountSchema>;
export type CdiHook = z.infer<typeof hookSchema>;
export type CdiContainerEdits = z.infer<typeof containerEditsSchema>;
export type CdiDevice = z.infer<typeof deviceSchema>;
export type CdiSpec = z.infer<typeof cdiSpecSchema>;

/** A DNS subdomain: dot-separated labels of letters, digits and dashes, 253 characters at most. */
function isDnsSubdomain(s: string): boolean {
    return s.length > 0 && s.length <= 253 && s.split(".").every((l) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(l));
}

/**
 * kind = vendor/class. SPEC.md: the vendor (prefix) is a DNS subdomain; the class (name) is at
 * most 63 characters, begins and ends with a letter or digit, with -, _, . and alphanumerics
 * between. The reference parser also wants both to begin with a letter.
 */
function kindProblems(kind: string): string[] {
    const parts = kind.split("/");
    if (parts.length !== 2 || !parts[0] || !parts[1]) return [`kind ${JSON.stringify(kind)} must be vendor/class, e.g. vendor.com/gpu`];
    const [vendor, cls] = parts;
    const problems: string[] = [];
    if (!isDnsSubdomain(vendor) || !/^[A-Za-z]/.test(vendor))
        problems.push(`vendor ${JSON.stringify(vendor)} must be a DNS subdomain starting with a letter (e.g. vendor.com)`);
    if (cls.length > 63 || !/^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/.test(cls))
        problems.push(
            `class ${JSON.stringify(cls)} must start with a letter, end with a letter or digit, and hold only letters, digits, -, _ and . (63 at most)`,
        );
    return problems;
}

/** Device names: letters and digits at both ends, -, _, . and : between (the reference parser's rule; ":" names MIG devices "0:1"). */
const DEVICE_NAME = /^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$/;

type Issue = { path: (string | number)[]; message: string };

/* The cross-field rules below also run on specs that failed the structural schema (so every
   problem is reported at once); they read the raw object defensively. */
type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose | undefined => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Loose) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const nonEmptyMap = (v: unknown) => Object.keys(obj(v) ?? {}).length > 0;

function editsIssues(raw: unknown, base: (string | number)[], version: string): Issue[] {
    const issues: Issue[] = [];
    const edits = obj(raw);
    if (!edits) return issues;
    const need = (what: string, path: (string | number)[], v: CdiVersion) => {
        if (!atLeast(version, v)) issues.push({ path, message: `${what} needs cdiVersion ${v} or later (the spec declares ${version})` });
    };
    arr(edits.deviceNodes).forEach((n, i) => {
        if (obj(n)?.hostPath !== undefined) need("hostPath", [...base, "deviceNodes", i, "hostPath"], "0.5.0");
    });
    arr(edits.mounts).forEach((m, i) => {
        if (obj(m)?.type !== undefined) need("a mount type", [...base, "mounts", i, "type"], "0.4.0");
    });
    const rdt = obj(edits.intelRdt);
    if (rdt) {
        need("intelRdt", [...base, "intelRdt"], "0.7.0");
        for (const f of ["enableCMT", "enableMBM"]) {
            if (rdt[f] !== undefined && atLeast(version, "1.1.0"))
                issues.push({ path: [...base, "intelRdt", f], message: `${f} is not valid from cdiVersion 1.1.0 on (use enableMonitoring)` });
        }
        for (const f of ["schemata", "enableMonitoring"]) {
            if (rdt[f] !== undefined) need(f, [...base, "intelRdt", f], "1.1.0");
        }
    }
    if (edits.additionalGids !== undefined) need("additionalGids", [...base, "additionalGids"], "0.7.0");
    if (edits.netDevices !== undefined) {
        need("netDevices", [...base, "netDevices"], "1.1.0");
        const hosts = new Set<unknown>();
        const names = new Set<unknown>();
        arr(edits.netDevices).forEach((raw, i) => {
            const d = obj(raw);
            if (!d) return;
            if (hosts.has(d.hostInterfaceName))
                issues.push({
                    path: [...base, "netDevices", i, "hostInterfaceName"],
                    message: `duplicate host interface ${JSON.stringify(d.hostInterfaceName)}`,
                });
            if (names.has(d.name)) issues.push({ path: [...base, "netDevices", i, "name"], message: `duplicate interface name ${JSON.stringify(d.name)}` });
            hosts.add(d.hostInterfaceName);
            names.add(d.name);
        });
    }
    return issues;
}

function isEmptyEdits(raw: unknown): boolean {
    const e = obj(raw);
    if (!e) return true;
    return !(
        arr(e.env).length ||
        arr(e.deviceNodes).length ||
        arr(e.mounts).length ||
        arr(e.hooks).length ||
        arr(e.additionalGids).length ||
        obj(e.intelRdt) ||
        arr(e.netDevices).length
    );
}

/** Rules across fields: versions, kind and names, uniqueness, non-empty device edits. */
function specIssues(raw: unknown): Issue[] {
    const issues: Issue[] = [];
    const spec = obj(raw);
    if (!spec) return issues;
    const version = spec.cdiVersion;
    if (typeof version === "string" && versionIndex(version) < 0) {
        const hint = /^0\.[12]\.\d+$/.test(version) ? " (CDI before 0.3.0 used another format)" : "";
        issues.push({ path: ["cdiVersion"], message: `unknown CDI version ${JSON.stringify(version)}${hint}; known: ${CDI_VERSIONS.join(", ")}` });
    }
    // Version rules need a known version; the other rules do not.
    const known = typeof version === "string" && versionIndex(version) >= 0 ? version : undefined;
    const needs = (cond: boolean, path: (string | number)[], what: string, v: CdiVersion) => {
        if (cond && known && !atLeast(known, v)) issues.push({ path, message: `${what} needs cdiVersion ${v} or later (the spec declares ${known})` });
    };
    if (typeof spec.kind === "string") {
        for (const p of kindProblems(spec.kind)) issues.push({ path: ["kind"], message: p });
        needs((spec.kind.split("/")[1] ?? "").includes("."), ["kind"], "a dot in the class part of kind", "0.6.0");
    }
    needs(nonEmptyMap(spec.annotations), ["annotations"], "the annotations field", "0.6.0");
    if (known) issues.push(...editsIssues(spec.containerEdits, ["containerEdits"], known));
    const seen = new Map<string, number>();
    arr(spec.devices).forEach((rawDevice, i) => {
        const d = obj(rawDevice);
        if (!d) return;
        if (typeof d.name === "string") {
            if (!DEVICE_NAME.test(d.name)) {
                issues.push({
                    path: ["devices", i, "name"],
                    message: `device name ${JSON.stringify(d.name)} must begin and end with a letter or digit and hold only letters, digits, -, _, . and :`,
                });
            } else {
                needs(/^[0-9]/.test(d.name), ["devices", i, "name"], `a device name starting with a digit (${JSON.stringify(d.name)})`, "0.5.0");
            }
            const first = seen.get(d.name);
            if (first !== undefined)
                issues.push({ path: ["devices", i, "name"], message: `duplicate device name ${JSON.stringify(d.name)} (also devices[${first}])` });
            else seen.set(d.name, i);
        }
        needs(nonEmptyMap(d.annotations), ["devices", i, "annotations"], "the annotations field", "0.6.0");
        if (d.containerEdits !== undefined && isEmptyEdits(d.containerEdits))
            issues.push({
                path: ["devices", i, "containerEdits"],
                message: "a device needs at least one container edit (env, deviceNodes, mounts, hooks, ...)",
            });
        if (known) issues.push(...editsIssues(d.containerEdits, ["devices", i, "containerEdits"], known));
    });
    return issues;
}

/** `["devices", 1, "name"]` -> `devices[1].name`. */
function formatPath(path: readonly PropertyKey[]): string {
    let out = "";
    for (const part of path) out += typeof part === "number" ? `[${part}]` : `${out ? "." : ""}${String(part)}`;
    return out || "(root)";
}

export class CdiSpecError extends Error {
    constructor(
        public readonly source: string,
        public readonly problems: string[],
    ) {
        super(
            `${source}: invalid CDI spec (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n${problems.map((p) => `  - ${source}: ${p}`).join("\n")}`,
        );
        this.name = "CdiSpecError";
    }
}

/** The lowest cdiVersion whose features the spec uses (what nvidia-ctk and the CDI producer API write). */
export function minimumCdiVersion(spec: Omit<CdiSpec, "cdiVersion">): CdiVersion {
    for (const v of CDI_VERSIONS) {
        if (specIssues({ ...spec, cdiVersion: v }).every((i) => !/needs cdiVersion/.test(i.message))) return v;
    }
    return CDI_VERSIONS[CDI_VERSIONS.length - 1];
}

/**
 * Validates a CDI spec given as YAML or JSON text (JSON is YAML) or as a parsed object.
 * Returns the spec; throws CdiSpecError with every problem and its path otherwise, e.g.
 * `/etc/cdi/nvidia.yaml: devices[1].name: duplicate device name "0" (also devices[0])`.
 */
export function validateCdiSpec(input: unknown, source = "CDI spec"): CdiSpec {
    let raw = input;
    if (typeof input === "string") {
        try {
            raw = parseYaml(input);
        } catch (err) {
            throw new CdiSpecError(source, [`not YAML or JSON: ${(err as Error).message.split("\n")[0]}`]);
        }
    }
    const parsed = cdiSpecSchema.safeParse(raw);
    const problems = parsed.success
        ? []
        : parsed.error.issues.map((i) => {
              const message =
                  i.code === "unrecognized_keys"
                      ? `unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.join(", ")} (not part of CDI up to ${CDI_VERSIONS[CDI_VERSIONS.length - 1]})`
                      : i.message;
              return `${formatPath(i.path)}: ${message}`;
          });
    for (const i of specIssues(raw)) {
        const line = `${formatPath(i.path)}: ${i.message}`;
        if (!problems.includes(line)) problems.push(line);
    }
    if (problems.length > 0 || !parsed.success) throw new CdiSpecError(source, problems);
    return parsed.data;
}
