/**
 * AMD GPUs from the KFD topology (the ROCm view: gfx target, render node, memory), named
 * by amd-smi or rocm-smi when installed, else by lspci. Without a KFD (amdgpu not loaded)
 * they come from PCI alone. Index = position among the KFD's GPU nodes, which is how
 * ROCR_VISIBLE_DEVICES and AMD_VISIBLE_DEVICES number them.
 */
import { DiscoverySources, ToolFailure } from "./document";
import { AmdToolGpu, parseAmdSmiStatic, parseRocmSmi } from "./amd-smi";
import { APU_GFX_TARGETS, parseKfdNodes } from "./kfd";
import { isGpuFunction, pciFunctions, pciModelName } from "./lspci";
import { FoundGpu, FoundVendor, ModelSource } from "./result";

export interface AmdFacts {
    found: FoundVendor;
    problems: string[];
    warnings: string[];
}

/**
 * The tool's entry for a KFD GPU, by PCI address. By position only where the tool gave no
 * addresses at all and lists as many GPUs as the KFD: with addresses, a miss is a real miss.
 */
function toolGpuFor(tool: AmdToolGpu[], busId: string | undefined, index: number, kfdCount: number): AmdToolGpu | undefined {
    const byAddress = tool.find((g) => g.busId && g.busId === busId);
    if (byAddress || tool.some((g) => g.busId)) return byAddress;
    return tool.length === kfdCount ? tool[index] : undefined;
}

export function assembleAmd(sources: DiscoverySources, errors: Record<string, ToolFailure>): AmdFacts {
    const problems: string[] = [];
    const warnings: string[] = [];
    const pciGpus = pciFunctions(sources).filter((f) => isGpuFunction(f, "amd"));
    const kfd = parseKfdNodes(sources["kfd-nodes"] ?? []);
    const amdSmi = sources["amd-smi"] ? parseAmdSmiStatic(sources["amd-smi"]) : [];
    const rocmSmi = sources["rocm-smi"] ? parseRocmSmi(sources["rocm-smi"]) : [];
    for (const key of ["amd-smi", "rocm-smi"]) {
        if (errors[key]) warnings.push(`${key} failed (exit ${errors[key].exit}); names taken from PCI`);
    }

    let gpus: FoundGpu[];
    if (kfd.length > 0) {
        gpus = kfd.map((node, index) => {
            const pci = pciGpus.find((f) => f.busId === node.busId);
            let model: string | undefined;
            let modelSource: ModelSource = "kfd";
            const fromAmdSmi = toolGpuFor(amdSmi, node.busId, index, kfd.length);
            const fromRocmSmi = toolGpuFor(rocmSmi, node.busId, index, kfd.length);
            if (fromAmdSmi) {
                model = fromAmdSmi.name;
                modelSource = "amd-smi";
            } else if (fromRocmSmi) {
                model = fromRocmSmi.name;
                modelSource = "rocm-smi";
            } else if (pci) {
                model = pciModelName(pci, "amd");
                modelSource = pci.name ? "lspci" : "pci-id";
            } else model = node.name && !/^gfx/i.test(node.name) ? `AMD ${node.name}` : `AMD GPU ${node.gfxTarget ?? `node ${node.node}`}`;
            const gpu: FoundGpu = {
                index,
                model,
                memoryMiB: node.memoryMiB ?? 0,
                integrated: node.gfxTarget !== undefined && APU_GFX_TARGETS.has(node.gfxTarget),
                mig: [],
                modelSource,
                memoryKnown: node.memoryMiB !== undefined,
            };
            if (node.busId) gpu.pciBusId = node.busId;
            if (node.gfxTarget) gpu.gfxTarget = node.gfxTarget;
            else warnings.push(`AMD GPU ${index} (KFD node ${node.node}) reports no gfx target`);
            if (node.renderNode) gpu.renderNode = node.renderNode;
            const renders = sources["render-nodes"];
            if (node.renderNode && renders && !renders.includes(node.renderNode)) {
                problems.push(
                    `AMD GPU ${index}: the KFD names /dev/dri/${node.renderNode}, which does not exist (render nodes: ${renders.join(", ") || "none"})`,
                );
            }
            return gpu;
        });
        if (sources["dev-kfd"] === false) problems.push("the KFD lists AMD GPUs but /dev/kfd is missing: ROCm cannot reach them");
        for (const f of pciGpus) {
            if (!kfd.some((n) => n.busId === f.busId))
                warnings.push(
                    `PCI lists AMD GPU ${f.busId}${f.name ? ` (${f.name})` : ""} that the KFD does not (not supported by ROCm, or bound to another driver)`,
                );
        }
    } else {
        gpus = pciGpus.map((f, index) => ({
            index,
            model: pciModelName(f, "amd"),
            memoryMiB: 0,
            pciBusId: f.busId,
            integrated: false,
            mig: [],
            modelSource: f.name ? "lspci" : "pci-id",
            memoryKnown: false,
        }));
        if (gpus.length > 0) warnings.push("no AMD KFD (amdgpu not loaded, or no ROCm-capable GPU): AMD GPUs taken from PCI, memory and gfx target unknown");
    }
    return { found: { vendor: "amd", gpus, nvswitches: 0, tegra: false }, problems, warnings };
}
