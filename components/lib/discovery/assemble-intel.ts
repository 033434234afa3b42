/**
 * Intel GPUs from sysfs alone (host/discover-gpus.sh's `intel-drm`: each DRM card of an Intel
 * display or 3D controller, its PCI address, device id, driver and render node), named by PCI
 * device id (intel-models.ts), with memory from `xpu-smi discovery -j` where it is installed
 * (sysfs does not say it). Index = position in card order, the order the cards were probed in.
 */
import { DiscoverySources, ToolFailure } from "./document";
import { intelModel } from "../gpu/intel-models";
import { FoundGpu, FoundVendor } from "./result";

export interface IntelFacts {
    found: FoundVendor;
    problems: string[];
    warnings: string[];
}

interface DrmCard {
    card: string;
    pci: string;
    device: string;
    driver: string;
    render: string;
}

const cardNumber = (c: DrmCard) => Number(c.card.slice("card".length));

/**
 * `xpu-smi discovery --dump 1,11,4,16` (the list's JSON has no memory): memory (MiB) by PCI
 * address, the columns found by their labels; empty when it is absent or says nothing readable.
 * Its layout: test/fixtures/xpu-smi-metrics/source.md.
 */
function xpuSmiMemory(text: string | undefined): Map<string, number> {
    const out = new Map<string, number>();
    const [header, ...rows] = (text ?? "").split("\n");
    const bare = (v: string | undefined) => (v ?? "").replace(/"/g, "").trim();
    const labels = header.split(",").map(bare);
    const at = labels.indexOf("PCI BDF Address");
    const mem = labels.indexOf("Memory Physical Size");
    if (at < 0 || mem < 0) return out;
    for (const row of rows) {
        const cells = row.split(",");
        const address = bare(cells[at]).toLowerCase();
        const size = /^([0-9]+(?:\.[0-9]+)?) ?MiB$/.exec(bare(cells[mem]));
        if (/^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/.test(address) && size && Number(size[1]) > 0) out.set(address, Math.round(Number(size[1])));
    }
    return out;
}

export function assembleIntel(sources: DiscoverySources, errors: Record<string, ToolFailure>): IntelFacts {
    const problems: string[] = [];
    const warnings: string[] = [];
    const cards = ((sources["intel-drm"] ?? []) as DrmCard[]).slice().sort((a, b) => cardNumber(a) - cardNumber(b));
    const memory = xpuSmiMemory(sources["xpu-smi-discovery"]);
    if (errors["xpu-smi-discovery"]) warnings.push(`xpu-smi discovery failed (exit ${errors["xpu-smi-discovery"].exit}); Intel GPU memory unknown`);
    const gpus: FoundGpu[] = cards.map((c, index) => {
        const model = intelModel(c.device);
        const mib = memory.get(c.pci.toLowerCase());
        const gpu: FoundGpu = {
            index,
            model: model?.name ?? `Intel GPU ${c.device}`,
            memoryMiB: mib ?? 0,
            pciBusId: c.pci,
            integrated: model?.integrated ?? false,
            mig: [],
            cardNode: c.card,
            pciDeviceId: c.device.toLowerCase(),
            modelSource: "pci-id",
            memoryKnown: mib !== undefined,
        };
        if (c.driver === "i915" || c.driver === "xe") gpu.driver = c.driver;
        else problems.push(`Intel GPU ${index} (${c.pci}): bound to ${c.driver ? `driver ${c.driver}` : "no driver"}, not i915 or xe: no container can use it`);
        if (c.render) gpu.renderNode = c.render;
        else problems.push(`Intel GPU ${index} (${c.pci}): no render node in sysfs (device/drm/renderD*)`);
        if (!model) warnings.push(`Intel GPU ${index} (${c.pci}): PCI device id ${c.device} is not in the model table; named by its id`);
        return gpu;
    });
    if (gpus.length > 0 && memory.size === 0 && !errors["xpu-smi-discovery"])
        warnings.push("Intel GPU memory is not in sysfs and xpu-smi is not installed: memoryMiB is 0 (fill it in, or install xpu-smi)");
    return { found: { vendor: "intel", gpus, nvswitches: 0, tegra: false }, problems, warnings };
}
