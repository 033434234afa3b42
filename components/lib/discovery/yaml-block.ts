/**
 * The inventory block `npm run discover` prints, ready to paste under a host in the stack
 * config (the keys vendor, nvswitches, tegra, gpus sit beside name and transport). What
 * discovery could not establish becomes YAML comments next to the value concerned. With
 * `indent`, every line is indented by that many spaces: 6 (PASTE_INDENT) puts the keys where a
 * host's keys sit in a Pulumi.<stack>.yaml (config: > gpu-workers:hosts: > - name:).
 */
import { Document, Scalar } from "yaml";
import { Gpu, GpuInventory } from "../gpu/inventory";
import { DiscoveryResult, FoundGpu, FoundVendor, inventoryOf } from "./result";

/** Only what differs from the schema's defaults, in a stable key order. */
function gpuBlock(gpu: Gpu): Record<string, unknown> {
    const out: Record<string, unknown> = { index: gpu.index, model: gpu.model, memoryMiB: gpu.memoryMiB };
    if (gpu.uuid) out.uuid = gpu.uuid;
    if (gpu.pciBusId) out.pciBusId = gpu.pciBusId;
    if (gpu.moduleId !== undefined) out.moduleId = gpu.moduleId;
    if (gpu.integrated) out.integrated = true;
    if (gpu.gfxTarget) out.gfxTarget = gpu.gfxTarget;
    if (gpu.cardNode) out.cardNode = gpu.cardNode;
    if (gpu.renderNode) out.renderNode = gpu.renderNode;
    if (gpu.driver) out.driver = gpu.driver;
    if (gpu.pciDeviceId) out.pciDeviceId = gpu.pciDeviceId;
    if (gpu.computeCapability) out.computeCapability = gpu.computeCapability;
    if (gpu.mig.length > 0) out.mig = gpu.mig.map((m) => ({ index: m.index, profile: m.profile, gi: m.gi, ci: m.ci, ...(m.uuid ? { uuid: m.uuid } : {}) }));
    return out;
}

function inventoryBlock(inv: GpuInventory): Record<string, unknown> {
    const out: Record<string, unknown> = { vendor: inv.vendor };
    if (inv.vendor !== "none") {
        out.nvswitches = inv.nvswitches;
        out.tegra = inv.tegra;
        if (inv.driverVersion) out.driverVersion = inv.driverVersion;
        if (inv.cudaVersion) out.cudaVersion = inv.cudaVersion;
        out.gpus = inv.gpus.map(gpuBlock);
    }
    return out;
}

/** The YAML of one vendor's inventory, with comments on values discovery could not read. */
function renderInventory(found: FoundVendor | undefined, inv: GpuInventory): Document {
    const doc = new Document(inventoryBlock(inv));
    const gpus: FoundGpu[] = found?.gpus ?? [];
    gpus.forEach((g, i) => {
        // PCI addresses and UUIDs quoted: "0000:14:00.0" reads as a base-60 number in YAML 1.1.
        for (const key of ["pciBusId", "uuid", "pciDeviceId"]) {
            const node = doc.getIn(["gpus", i, key], true);
            if (node instanceof Scalar) node.type = Scalar.QUOTE_DOUBLE;
        }
        if (!g.memoryKnown) {
            const node = doc.getIn(["gpus", i, "memoryMiB"], true);
            if (node instanceof Scalar)
                node.comment =
                    found?.vendor === "intel"
                        ? " not in sysfs: fill in (xpu-smi discovery shows it)"
                        : " unknown without a working driver: fill in (nvidia-smi --query-gpu=memory.total)";
        }
        if (g.modelSource !== "nvidia-smi" && g.modelSource !== "amd-smi") {
            const node = doc.getIn(["gpus", i, "model"], true);
            if (node instanceof Scalar) node.comment = ` from ${g.modelSource}: the driver's name may differ`;
        }
    });
    return doc;
}

/** Each line prefixed "# " (for blocks shown as an alternative). */
function commentOut(text: string): string {
    return text
        .trimEnd()
        .split("\n")
        .map((l) => `# ${l}`)
        .join("\n");
}

/** Where a host's keys sit in a Pulumi.<stack>.yaml: `config:` (0), `gpu-workers:hosts:` (2), `- name:` (4), the keys (6). */
export const PASTE_INDENT = 6;

/** Each non-empty line indented by `n` spaces. */
function indentLines(text: string, n: number): string {
    const pad = " ".repeat(n);
    return text
        .split("\n")
        .map((l) => (l === "" ? l : pad + l))
        .join("\n");
}

export function renderInventoryYaml(result: DiscoveryResult, origin: string, options: { indent?: number } = {}): string {
    const indent = options.indent ?? 0;
    const primary = result.vendors[0];
    const header: string[] = [`gpu-workers discover: ${origin}`];
    const facts = [
        result.driverVersion ? `NVIDIA driver ${result.driverVersion}` : undefined,
        result.cudaVersion ? `CUDA ${result.cudaVersion}` : undefined,
        result.l4t ? `L4T ${result.l4t}` : undefined,
    ].filter(Boolean);
    if (facts.length > 0) header.push(facts.join(", "));
    header.push(
        indent > 0
            ? `Paste under the host's \`- name:\` line in gpu-workers:hosts, beside name and transport (indented ${indent} spaces, as in Pulumi.<stack>.yaml).`
            : "Paste under the host in gpu-workers:hosts, beside name and transport.",
    );
    for (const p of result.problems) header.push(`PROBLEM: ${p}`);
    for (const w of result.warnings) header.push(`warning: ${w}`);
    const doc = renderInventory(primary ? result.found[primary] : undefined, result.inventory);
    doc.commentBefore = header.map((l) => ` ${l}`).join("\n");
    let text = doc.toString({ lineWidth: 0 });
    for (const other of result.vendors.slice(1)) {
        const alt = renderInventory(result.found[other], inventoryOf(result.found[other])).toString({ lineWidth: 0 });
        text += `\n# This host also has ${other === "amd" ? "AMD" : "NVIDIA"} GPUs. For a worker that uses them instead, replace the block above with:\n${commentOut(alt)}\n`;
    }
    return indent > 0 ? indentLines(text, indent) : text;
}
