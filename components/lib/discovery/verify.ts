/**
 * Compares the inventory declared in the stack with what discovery found on the host, and
 * words every difference as one line a person can act on. A stack may turn the differences
 * of chosen fields into warnings (`warnOnly`); faults of the hardware itself (a lost GPU, a
 * driver that finds no device) always stay errors. Pure: the InventoryCheck resource loads
 * this module at run time (it re-exports parseDiscoveryDocument for that).
 */
import { z } from "zod";
import { Gpu, GpuInventory, MigInstance } from "../gpu/inventory";
import { normalizeBusId } from "./pci";
import { DiscoveryResult, FoundGpu, GpuVendor } from "./result";

export { parseDiscoveryDocument } from "./parse";
export type { DiscoveryResult } from "./result";

/** Fields whose differences a stack can downgrade to warnings. */
export const VERIFY_FIELDS = [
    "vendor",
    "count",
    "model",
    "memory",
    "uuid",
    "pci",
    "module",
    "integrated",
    "gfx",
    "render",
    "card",
    "kernel-driver",
    "pci-device",
    "mig",
    "nvswitches",
    "tegra",
    "driver",
    "compute",
    "cuda",
] as const;
export type VerifyField = (typeof VERIFY_FIELDS)[number];

const fieldSchema = z.enum(VERIFY_FIELDS, { error: `expected one of ${VERIFY_FIELDS.join(", ")}` });

/** For the stack schema: `warnOnly: [memory, uuid]`. */
export const warnOnlyFieldsSchema = z.array(fieldSchema);

export const verifyOptionsSchema = z.strictObject({
    /** The driver pin: "preinstalled" (a driver must be loaded) or a version the loaded one must reach. */
    driverPin: z.string().min(1).optional(),
    /** Fields whose differences only warn. */
    warnOnly: z.partialRecord(fieldSchema, z.literal(true)).default({}),
});

export type VerifyOptions = z.input<typeof verifyOptionsSchema>;

export interface VerificationResult {
    errors: string[];
    warnings: string[];
}

/** Declared and found memory closer than this share of the found size are accepted (with a note). */
export const MEMORY_TOLERANCE = 0.01;

/** Model names only a vendor tool gives as the stack declares them ("NVIDIA H100 80GB HBM3"). */
const AUTHORITATIVE_MODEL_SOURCES = new Set(["nvidia-smi", "amd-smi"]);

const VENDOR_LABEL = { nvidia: "NVIDIA", amd: "AMD", intel: "Intel", none: "no" } as const;

function sameName(a: string, b: string): boolean {
    const norm = (s: string) => s.trim().replace(/\s+/g, " ").toLowerCase();
    return norm(a) === norm(b);
}

/** Numeric comparison of dotted versions: -1, 0, 1. A pin "550" matches any 550.x. */
export function compareVersions(found: string, pin: string): number {
    const a = found.split(".").map(Number);
    const b = pin.split(".").map(Number);
    for (let i = 0; i < b.length; i++) {
        const x = a[i] ?? 0;
        if (x !== b[i]) return x < b[i] ? -1 : 1;
    }
    return 0;
}

function describeGpu(g: Gpu | FoundGpu): string {
    const where = g.pciBusId ? ` at ${normalizeBusId(g.pciBusId) ?? g.pciBusId}` : "";
    return `GPU ${g.index} (${g.model}${g.memoryMiB ? `, ${g.memoryMiB} MiB` : ""}${where})`;
}

function describeMig(m: MigInstance): string {
    return `${m.profile} (GI ${m.gi}, CI ${m.ci})`;
}

class Collector {
    readonly errors: string[] = [];
    readonly warnings: string[] = [];
    constructor(private readonly warnOnly: Partial<Record<VerifyField, true>>) {}
    add(field: VerifyField, message: string): void {
        if (this.warnOnly[field]) this.warnings.push(`${message} (${field}: warning only)`);
        else this.errors.push(message);
    }
    warn(message: string): void {
        this.warnings.push(message);
    }
}

function compareMig(path: string, declared: MigInstance[], found: MigInstance[], out: Collector): void {
    for (const d of declared) {
        const f = found.find((m) => m.index === d.index);
        if (!f) {
            out.add(
                "mig",
                `${path}.mig: MIG device ${d.index} ${describeMig(d)} declared, not found${found.length ? ` (found: ${found.map((m) => `${m.index}=${describeMig(m)}`).join(", ")})` : " (no MIG devices)"}`,
            );
            continue;
        }
        if (d.profile !== f.profile || d.gi !== f.gi || d.ci !== f.ci) {
            out.add("mig", `${path}.mig: MIG device ${d.index} declared ${describeMig(d)}, found ${describeMig(f)}`);
        }
        if (d.uuid && f.uuid && d.uuid !== f.uuid) out.add("uuid", `${path}.mig: MIG device ${d.index} declared UUID ${d.uuid}, found ${f.uuid}`);
    }
    for (const f of found) {
        if (!declared.some((d) => d.index === f.index)) out.add("mig", `${path}.mig: MIG device ${f.index} ${describeMig(f)} found but not declared`);
    }
}

function compareGpu(path: string, d: Gpu, f: FoundGpu, vendor: GpuInventory["vendor"], out: Collector): void {
    if (!sameName(d.model, f.model)) {
        if (AUTHORITATIVE_MODEL_SOURCES.has(f.modelSource)) out.add("model", `${path}: declared model "${d.model}", found "${f.model}"`);
        else out.warn(`${path}: model "${d.model}" not verified: ${f.modelSource} names it "${f.model}"`);
    }
    if (!f.memoryKnown) {
        out.warn(`${path}: memory ${d.memoryMiB} MiB not verified (unknown without a working driver)`);
    } else if (d.memoryMiB !== f.memoryMiB) {
        const off = Math.abs(d.memoryMiB - f.memoryMiB) / Math.max(f.memoryMiB, 1);
        if (off <= MEMORY_TOLERANCE) {
            out.warn(
                `${path}: declared ${d.memoryMiB} MiB, the driver reports ${f.memoryMiB} MiB (within ${MEMORY_TOLERANCE * 100}%: accepted; declare ${f.memoryMiB} to silence this)`,
            );
        } else {
            out.add("memory", `${path}: declared memory ${d.memoryMiB} MiB, found ${f.memoryMiB} MiB`);
        }
    }
    if (d.uuid) {
        if (!f.uuid) out.warn(`${path}: UUID ${d.uuid} not verified (discovery found none)`);
        else if (d.uuid.toLowerCase() !== f.uuid.toLowerCase()) out.add("uuid", `${path}: declared UUID ${d.uuid}, found ${f.uuid}`);
    }
    if (d.pciBusId && f.pciBusId && normalizeBusId(d.pciBusId) !== normalizeBusId(f.pciBusId)) {
        out.add("pci", `${path}: declared PCI address ${d.pciBusId}, found ${f.pciBusId}`);
    }
    if (d.moduleId !== undefined) {
        // Fabric partitions pick GPUs by module id: a wrong one gives a worker the wrong GPUs.
        if (f.moduleId === undefined) out.warn(`${path}: module id ${d.moduleId} not verified (nvidia-smi -q reported none)`);
        else if (d.moduleId !== f.moduleId) out.add("module", `${path}: declared module id ${d.moduleId}, found ${f.moduleId}`);
    }
    if (d.integrated !== f.integrated) {
        out.add("integrated", `${path}: declared ${d.integrated ? "integrated" : "discrete"}, found ${f.integrated ? "integrated" : "discrete"}`);
    }
    if (d.gfxTarget || f.gfxTarget) {
        if (!f.gfxTarget) out.warn(`${path}: gfx target ${d.gfxTarget} not verified (no KFD)`);
        else if (d.gfxTarget !== f.gfxTarget) out.add("gfx", `${path}: declared gfx target ${d.gfxTarget ?? "(none)"}, found ${f.gfxTarget}`);
    }
    if (vendor === "amd" && f.renderNode) {
        const declared = d.renderNode ?? `renderD${128 + d.index}`;
        if (declared !== f.renderNode) {
            out.add(
                "render",
                `${path}: ${d.renderNode ? `declared render node ${d.renderNode}` : `no render node declared (default ${declared})`}, but the GPU's is ${f.renderNode}: the worker would get the wrong /dev/dri node`,
            );
        }
    }
    if (vendor === "intel") compareIntel(path, d, f, out);
    if (d.computeCapability) {
        if (!f.computeCapability) out.warn(`${path}: compute capability ${d.computeCapability} not verified (nvidia-smi did not report compute_cap)`);
        else if (d.computeCapability !== f.computeCapability)
            out.add("compute", `${path}: declared compute capability ${d.computeCapability}, found ${f.computeCapability}`);
    }
    compareMig(path, d.mig, f.mig, out);
}

/** An Intel GPU's nodes (what a container gets), kernel driver (its tags) and device id, each as sysfs has it. */
function compareIntel(path: string, d: Gpu, f: FoundGpu, out: Collector): void {
    const fields: ["cardNode" | "renderNode" | "driver" | "pciDeviceId", VerifyField, string][] = [
        ["cardNode", "card", "card node"],
        ["renderNode", "render", "render node"],
        ["driver", "kernel-driver", "driver"],
        ["pciDeviceId", "pci-device", "PCI device id"],
    ];
    for (const [key, field, what] of fields) {
        const declared = d[key];
        const seen = f[key];
        if (declared !== undefined && seen !== undefined && declared !== seen) out.add(field, `${path}: declared ${what} ${declared}, found ${seen}`);
    }
}

/** The declared driver (or ROCm) and CUDA versions, which the feature tags come from. */
function compareVersionsDeclared(declared: GpuInventory, found: DiscoveryResult, out: Collector): void {
    const foundDriver = declared.vendor === "nvidia" ? found.driverVersion : declared.vendor === "amd" ? found.rocmVersion : undefined;
    const what = declared.vendor === "amd" ? "ROCm" : "NVIDIA driver";
    if (declared.driverVersion) {
        if (!foundDriver) out.warn(`driverVersion: ${what} ${declared.driverVersion} not verified (discovery found no version)`);
        else if (compareVersions(foundDriver, declared.driverVersion) !== 0)
            out.add("driver", `driverVersion: declared ${what} ${declared.driverVersion}, found ${foundDriver}`);
    }
    if (declared.cudaVersion) {
        if (!found.cudaVersion) out.warn(`cudaVersion: ${declared.cudaVersion} not verified (nvidia-smi did not report one)`);
        else if (found.cudaVersion !== declared.cudaVersion) out.add("cuda", `cudaVersion: declared ${declared.cudaVersion}, found ${found.cudaVersion}`);
    }
}

function compareDriver(declared: GpuInventory, found: DiscoveryResult, pin: string | undefined, out: Collector): void {
    if (declared.vendor !== "nvidia" || pin === undefined) return;
    const loaded = found.driverVersion;
    if (pin === "preinstalled") {
        if (!loaded)
            out.add("driver", "driver: pinned as preinstalled, but no NVIDIA driver is loaded; install one or pin a version for the driver step to install");
        return;
    }
    if (!loaded) {
        out.warn(`driver: no NVIDIA driver loaded yet; the driver step installs ${pin}`);
        return;
    }
    const order = compareVersions(loaded, pin);
    if (order < 0)
        out.add(
            "driver",
            `driver: the loaded NVIDIA driver ${loaded} is below the pinned ${pin}; install ${pin} (and reboot), or list driver under warnOnly to let the driver step upgrade it`,
        );
    else if (order > 0) out.warn(`driver: the loaded NVIDIA driver ${loaded} is newer than the pinned ${pin}`);
}

/**
 * Every difference between the declared inventory and discovery's findings, one message each.
 * Throws on invalid options (an unknown warnOnly field), naming the valid ones.
 */
export function compareInventory(declared: GpuInventory, found: DiscoveryResult, options: VerifyOptions = {}): VerificationResult {
    const parsed = verifyOptionsSchema.safeParse(options);
    if (!parsed.success) {
        throw new Error(
            `invalid verification options: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")} (fields: ${VERIFY_FIELDS.join(", ")})`,
        );
    }
    const out = new Collector(parsed.data.warnOnly);
    for (const p of found.problems) out.errors.push(p);
    for (const w of found.warnings) out.warn(w);

    const foundVendor = declared.vendor === "none" ? undefined : found.found[declared.vendor];
    const others = found.vendors.filter((v) => v !== declared.vendor);
    const summary = (v: GpuVendor) => {
        const gpus = found.found[v]?.gpus ?? [];
        return `${gpus.length} ${VENDOR_LABEL[v]} GPU${gpus.length === 1 ? "" : "s"} (${gpus.map((g) => `${g.index}: ${g.model}`).join(", ")})`;
    };
    if (declared.vendor === "none") {
        if (found.vendors.length > 0) out.add("vendor", `vendor: declared none (no GPU), found ${found.vendors.map(summary).join(" and ")}`);
    } else if (!foundVendor || foundVendor.gpus.length === 0) {
        out.add(
            "vendor",
            `vendor: declared ${declared.vendor} with ${declared.gpus.length} GPU${declared.gpus.length === 1 ? "" : "s"}, but discovery found no ${VENDOR_LABEL[declared.vendor]} GPU${others.length ? `; it found ${others.map(summary).join(" and ")}` : ""}`,
        );
    } else {
        if (others.length > 0) out.warn(`vendor: this host also has ${others.map(summary).join(" and ")}, which this worker does not use`);
        declared.gpus.forEach((d, i) => {
            const path = d.index === i ? `gpus[${i}]` : `gpus[${i}] (GPU ${d.index})`;
            const f = foundVendor.gpus.find((g) => g.index === d.index);
            if (!f)
                out.add(
                    "count",
                    `${path}: ${describeGpu(d)} declared, not found (found ${foundVendor.gpus.length}: ${foundVendor.gpus.map((g) => g.index).join(", ")})`,
                );
            else compareGpu(path, d, f, declared.vendor, out);
        });
        for (const f of foundVendor.gpus) {
            if (!declared.gpus.some((d) => d.index === f.index)) out.add("count", `gpus: ${describeGpu(f)} found but not declared`);
        }
    }
    const foundSwitches = declared.vendor === "nvidia" ? (found.found.nvidia?.nvswitches ?? 0) : 0;
    if (declared.nvswitches !== foundSwitches) {
        out.add(
            "nvswitches",
            `nvswitches: declared ${declared.nvswitches}, found ${foundSwitches}${foundSwitches > 0 ? " (fabricmanager must run on this host)" : declared.nvswitches > 0 ? " (fabricmanager would start without NVSwitches)" : ""}`,
        );
    }
    const foundTegra = declared.vendor === "nvidia" ? (found.found.nvidia?.tegra ?? false) : false;
    if (declared.tegra !== foundTegra)
        out.add(
            "tegra",
            `tegra: declared ${declared.tegra}, found ${foundTegra}${foundTegra ? " (/etc/nv_tegra_release: a Jetson needs CDI in csv mode)" : ""}`,
        );
    compareDriver(declared, found, parsed.data.driverPin, out);
    compareVersionsDeclared(declared, found, out);
    return { errors: out.errors, warnings: out.warnings };
}

/** One message for a host: every error, then every warning. */
export function formatVerification(hostName: string, result: VerificationResult): string {
    const lines: string[] = [];
    if (result.errors.length > 0) {
        lines.push(`host ${hostName}: declared inventory does not match the hardware:`);
        lines.push(...result.errors.map((e) => `  - ${e}`));
        if (result.warnings.length > 0) lines.push("  warnings:", ...result.warnings.map((w) => `    - ${w}`));
    } else if (result.warnings.length > 0) {
        lines.push(`host ${hostName}: declared inventory matches the hardware, with warnings:`);
        lines.push(...result.warnings.map((w) => `  - ${w}`));
    } else {
        lines.push(`host ${hostName}: declared inventory matches the hardware`);
    }
    return lines.join("\n");
}
