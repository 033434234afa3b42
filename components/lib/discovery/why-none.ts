/**
 * Why discovery found no GPU: what each probe of host/discover-gpus.sh saw, one line each, read
 * from the document alone (a source the script records only when it found the tool, file or
 * folder says, by its absence, that it did not). `npm run discover` prints these on stderr when
 * the block it prints says `vendor: none`, so "none" never comes without its reasons. Pure.
 */
import { DiscoveryDocument, ToolFailure } from "./document";
import { isGpuFunction, PciFunction, pciFunctions } from "./lspci";

/** A tool's first line of output, for a failure's one-line summary. */
function said(failure: ToolFailure): string {
    const first = failure.output.split("\n").find((l) => l.trim() !== "");
    return first ? `: ${first.trim()}` : "";
}

/** The nvidia-smi runs the script records (the first query, then the list). */
const NVIDIA_SMI_KEYS = ["nvidia-smi-query", "nvidia-smi-L", "nvidia-smi"];

function nvidiaSmi(doc: DiscoveryDocument): string {
    const ran = NVIDIA_SMI_KEYS.filter((k) => doc.sources[k] !== undefined || doc.errors[k] !== undefined);
    if (ran.length === 0) return "nvidia-smi: not on PATH (the NVIDIA driver's utilities are not installed, or not on this PATH)";
    const failed = NVIDIA_SMI_KEYS.map((k) => doc.errors[k]).find((f) => f !== undefined);
    if (failed) return `nvidia-smi: ran and failed (exit ${failed.exit})${said(failed)}`;
    return "nvidia-smi: ran and listed no GPU";
}

function pciLine(functions: PciFunction[], source: string): string {
    const nvidia = functions.filter((f) => f.vendorId === "10de");
    const amd = functions.filter((f) => f.vendorId === "1002");
    const gpus = functions.filter((f) => isGpuFunction(f, "nvidia") || isGpuFunction(f, "amd"));
    if (gpus.length > 0) return `PCI (${source}): ${gpus.length} NVIDIA or AMD display function(s), which the other probes did not make a GPU of`;
    if (nvidia.length + amd.length === 0) return `PCI (${source}): no NVIDIA (10de) or AMD graphics (1002) function`;
    return `PCI (${source}): ${nvidia.length} NVIDIA and ${amd.length} AMD graphics function(s), none of a display class (03xx)`;
}

function pci(doc: DiscoveryDocument): string {
    const source = doc.sources.lspci !== undefined ? "lspci -Dnn" : doc.sources["pci-devices"] ? "/sys/bus/pci/devices" : undefined;
    if (source) return pciLine(pciFunctions(doc.sources), source);
    if (doc.errors.lspci) return `PCI: lspci failed (exit ${doc.errors.lspci.exit})${said(doc.errors.lspci)}, and there is no /sys/bus/pci/devices`;
    return "PCI: no lspci on PATH and no /sys/bus/pci/devices (a container or a VM without PCI passthrough sees no GPU)";
}

function kfd(doc: DiscoveryDocument): string {
    const nodes = doc.sources["kfd-nodes"];
    const devKfd = doc.sources["dev-kfd"] ? "/dev/kfd present" : "no /dev/kfd";
    if (nodes === undefined) return `AMD KFD: no /sys/class/kfd topology (amdgpu's compute interface not loaded), ${devKfd}`;
    return `AMD KFD: ${nodes.length} topology node(s), none a GPU, ${devKfd}`;
}

function renderNodes(doc: DiscoveryDocument): string {
    const nodes = doc.sources["render-nodes"];
    if (nodes === undefined) return "/dev/dri: absent";
    return nodes.length === 0
        ? "/dev/dri: no render node"
        : `/dev/dri: render node(s) ${nodes.join(", ")} (not a GPU this project drives without KFD, a vendor tool or an Intel card in sysfs)`;
}

function amdTools(doc: DiscoveryDocument): string {
    return ["amd-smi", "rocm-smi"]
        .map((tool) => {
            const failure = doc.errors[tool];
            if (failure) return `${tool}: failed (exit ${failure.exit})${said(failure)}`;
            return doc.sources[tool] !== undefined ? `${tool}: ran and listed no GPU` : `${tool}: not on PATH`;
        })
        .join("; ");
}

function intelCards(doc: DiscoveryDocument): string {
    const cards = doc.sources["intel-drm"];
    return cards === undefined || cards.length === 0
        ? "Intel: no /sys/class/drm card of an Intel display or 3D controller (vendor 0x8086, class 0300 or 0380)"
        : `Intel: ${cards.length} DRM card(s), none usable`;
}

/** What each probe saw, one line each: for a document in which discovery found no GPU. */
export function whyNoGpu(doc: DiscoveryDocument): string[] {
    const s = doc.sources;
    return [
        nvidiaSmi(doc),
        s["driver-version"] !== undefined
            ? "NVIDIA kernel driver: loaded (/proc/driver/nvidia/version)"
            : "NVIDIA kernel driver: not loaded (no /proc/driver/nvidia/version)",
        s.tegra !== undefined ? "Jetson: /etc/nv_tegra_release present" : "Jetson: no /etc/nv_tegra_release",
        pci(doc),
        kfd(doc),
        renderNodes(doc),
        amdTools(doc),
        intelCards(doc),
    ];
}
