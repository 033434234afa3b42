/**
 * NVIDIA GPUs from the most to the least informative source: nvidia-smi's query table,
 * then `nvidia-smi -L`, then PCI (no usable driver: names from lspci, memory unknown), then
 * the Tegra release file (Jetson, no nvidia-smi). Failures of nvidia-smi are sorted into
 * faults of the hardware or driver (problems) and states the driver step will fix (warnings).
 */
import { MIG_PROFILE_PATTERN, MigInstance } from "../gpu/inventory";
import { DiscoverySources, ToolFailure } from "./document";
import { isGpuFunction, isNvSwitch, PciFunction, pciFunctions, pciModelName } from "./lspci";
import { ComputeInstance, parseComputeInstances, parseGpuInstances } from "./nvidia-mig";
import { NvidiaListedGpu, parseNvidiaSmiList } from "./nvidia-smi-list";
import { parseNvidiaSmiModuleIds } from "./nvidia-smi-q";
import { NvidiaQueryRow, parseNvidiaSmiQuery } from "./nvidia-smi-query";
import { NvidiaMigTableRow, parseNvidiaProcVersion, parseNvidiaSmiSummary } from "./nvidia-smi-summary";
import { normalizeBusId } from "./pci";
import { FoundGpu, FoundVendor } from "./result";
import { parseMemTotalMiB, parseTegraRelease } from "./tegra";
import { parseComputeCapabilities } from "./nvidia-compute-cap";

export interface NvidiaFacts {
    found: FoundVendor;
    driverVersion?: string;
    cudaVersion?: string;
    l4t?: string;
    problems: string[];
    warnings: string[];
}

const LOST = /Unable to determine the device handle for GPU\s*(?:\d+:\s*)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):?\s*([^\n]*)/g;
const MIG_UUID = /^MIG-[0-9a-fA-F-]+$/;
const GPU_UUID = /^GPU-[0-9a-fA-F-]+$/;

/** Text of a tool's answer, whether it succeeded or failed. */
function outputOf(sources: DiscoverySources, errors: Record<string, ToolFailure>, key: keyof DiscoverySources): string | undefined {
    const ok = sources[key];
    if (typeof ok === "string") return ok;
    return errors[key]?.output;
}

function firstLine(text: string): string {
    return (
        text
            .split(/\r?\n/)
            .map((l) => l.trim())
            .find((l) => l !== "") ?? "(no output)"
    );
}

function describePci(f: PciFunction): string {
    return `${f.busId}${f.name ? ` (${f.name})` : ` (${f.vendorId}:${f.deviceId})`}`;
}

/** Sorts nvidia-smi's failure by its exit status (nvidia-smi(1), RETURN VALUE) and message. */
function classifyFailure(failure: ToolFailure, pciGpus: PciFunction[], problems: string[], warnings: string[]): void {
    const text = failure.output;
    const said = firstLine(text);
    if (/Unable to determine the device handle|GPU is lost|fallen off the bus/i.test(text) || failure.exit === 15) {
        // Reported per GPU below, from the bus ids in the message.
        if (!new RegExp(LOST.source).test(text)) problems.push(`nvidia-smi: a GPU is inaccessible (exit ${failure.exit}): ${said}`);
        return;
    }
    if (failure.exit === 6 || /No devices were found/i.test(text)) {
        if (pciGpus.length > 0) {
            problems.push(
                `the NVIDIA driver is loaded but finds no GPU (nvidia-smi: "${said}", exit ${failure.exit}), while PCI lists ${pciGpus.length}: ${pciGpus.map(describePci).join(", ")}; the kernel log (dmesg | grep NVRM) says why the driver did not take it`,
            );
        } else {
            warnings.push(`nvidia-smi finds no GPU ("${said}") and PCI lists none`);
        }
        return;
    }
    if (
        [9, 12, 18].includes(failure.exit) ||
        /couldn't communicate with the NVIDIA driver|Driver\/library version mismatch|NVML Shared Library Not Found|Failed to initialize NVML/i.test(text)
    ) {
        warnings.push(
            `the NVIDIA driver is not usable yet (nvidia-smi: "${said}", exit ${failure.exit}): GPUs taken from PCI, memory unknown; after a driver update a reboot usually fixes this`,
        );
        return;
    }
    problems.push(`nvidia-smi failed (exit ${failure.exit}): ${said}`);
}

function migFor(gpu: number, listed: NvidiaListedGpu | undefined, table: NvidiaMigTableRow[], cis: ComputeInstance[], warnings: string[]): MigInstance[] {
    if (!listed || listed.mig.length === 0) return [];
    const rows = table.filter((r) => r.gpu === gpu);
    // Without the summary's MIG table, pair devices with compute instances in (GI, CI) order,
    // which is the order nvidia-smi numbers MIG devices in.
    const ordered = cis.filter((c) => c.gpu === gpu).sort((a, b) => a.gi - b.gi || a.ci - b.ci);
    let inferred = false;
    const out = listed.mig.map((m, position) => {
        const row = rows.find((r) => r.device === m.index);
        let gi = row?.gi;
        let ci = row?.ci;
        if (gi === undefined && ordered[position]) {
            gi = ordered[position].gi;
            ci = ordered[position].ci;
            inferred = true;
        }
        if (gi === undefined || ci === undefined) {
            warnings.push(
                `GPU ${gpu} MIG device ${m.index}: GPU/compute instance ids unknown (no MIG table and no \`nvidia-smi mig -lci\`); set gi and ci by hand`,
            );
            gi = gi ?? 0;
            ci = ci ?? 0;
        }
        // The inventory schema's own pattern, so discovery warns exactly where the stack would refuse.
        if (!MIG_PROFILE_PATTERN.test(m.profile)) {
            warnings.push(
                `GPU ${gpu} MIG device ${m.index}: profile "${m.profile}" is not a MIG profile the stack accepts (such as 3g.40gb, 1c.3g.20gb or 1g.10gb+me)`,
            );
        }
        const mig: MigInstance = { index: m.index, profile: m.profile, gi, ci };
        if (m.uuid && MIG_UUID.test(m.uuid)) mig.uuid = m.uuid;
        else if (m.uuid) warnings.push(`GPU ${gpu} MIG device ${m.index}: UUID "${m.uuid}" is in the pre-R470 form; it is left out`);
        return mig;
    });
    if (inferred) warnings.push(`GPU ${gpu}: MIG GPU/compute instance ids paired with MIG devices by order (the nvidia-smi summary had no MIG devices table)`);
    return out;
}

export function assembleNvidia(sources: DiscoverySources, errors: Record<string, ToolFailure>): NvidiaFacts {
    const problems: string[] = [];
    const warnings: string[] = [];
    const pci = pciFunctions(sources);
    const pciGpus = pci.filter((f) => isGpuFunction(f, "nvidia"));
    const pciSwitches = pci.filter(isNvSwitch);

    const queryText = outputOf(sources, errors, "nvidia-smi-query");
    const listText = outputOf(sources, errors, "nvidia-smi-L");
    const summaryText = outputOf(sources, errors, "nvidia-smi");
    const query = queryText !== undefined ? parseNvidiaSmiQuery(queryText) : { rows: [] as NvidiaQueryRow[], messages: [] as string[] };
    const list = listText !== undefined ? parseNvidiaSmiList(listText) : { gpus: [] as NvidiaListedGpu[], messages: [] as string[] };
    const summary = summaryText !== undefined ? parseNvidiaSmiSummary(summaryText) : { migDevices: [] as NvidiaMigTableRow[] };
    const cis = sources["nvidia-smi-mig-lci"] ? parseComputeInstances(sources["nvidia-smi-mig-lci"]) : [];
    const gis = sources["nvidia-smi-mig-lgi"] ? parseGpuInstances(sources["nvidia-smi-mig-lgi"]) : [];
    const moduleIds = sources["nvidia-smi-q"] ? parseNvidiaSmiModuleIds(sources["nvidia-smi-q"]) : new Map<string, number>();

    let failure: ToolFailure | undefined = errors["nvidia-smi-query"] ?? errors["nvidia-smi-L"] ?? errors["nvidia-smi"];
    // Where only the query fails (JetPack 6's nvidia-smi supports few fields), -L still lists the GPUs.
    const queryOnly =
        errors["nvidia-smi-query"] && !errors["nvidia-smi-L"] && list.gpus.length > 0 && !new RegExp(LOST.source).test(errors["nvidia-smi-query"].output);
    if (queryOnly) {
        warnings.push(
            `nvidia-smi --query-gpu failed (exit ${errors["nvidia-smi-query"].exit}: ${firstLine(errors["nvidia-smi-query"].output)}); GPUs taken from nvidia-smi -L`,
        );
        failure = undefined;
    }
    if (failure) classifyFailure(failure, pciGpus, problems, warnings);
    const capabilities = sources["nvidia-smi-compute-cap"] ? parseComputeCapabilities(sources["nvidia-smi-compute-cap"]) : new Map<number, string>();
    if (errors["nvidia-smi-compute-cap"])
        warnings.push(
            `nvidia-smi --query-gpu=compute_cap failed (exit ${errors["nvidia-smi-compute-cap"].exit}: ${firstLine(errors["nvidia-smi-compute-cap"].output)}); compute capabilities unknown (a driver older than the compute_cap field?)`,
        );
    for (const key of ["nvidia-smi-mig-lgi", "nvidia-smi-mig-lci"] as const) {
        if (errors[key])
            warnings.push(`\`nvidia-smi mig ${key.endsWith("lgi") ? "-lgi" : "-lci"}\` failed (exit ${errors[key].exit}): ${firstLine(errors[key].output)}`);
    }

    // GPUs the driver cannot reach, named by bus id in nvidia-smi's messages.
    const lost = new Map<string, string>();
    for (const text of [queryText, listText, summaryText]) {
        for (const m of (text ?? "").matchAll(LOST)) {
            const bus = normalizeBusId(m[1]);
            if (bus && !lost.has(bus)) lost.set(bus, m[0].trim());
        }
    }

    const procVersion = sources["driver-version"] ? parseNvidiaProcVersion(sources["driver-version"]) : undefined;
    const driverVersion = summary.driverVersion ?? query.rows.find((r) => r.driverVersion)?.driverVersion ?? procVersion;
    const tegra = sources.tegra ? parseTegraRelease(sources.tegra) : undefined;
    if (sources.tegra && !tegra) warnings.push(`/etc/nv_tegra_release is there but unreadable as an L4T release: ${firstLine(sources.tegra)}`);
    const isTegra = tegra !== undefined;

    let gpus: FoundGpu[] = [];
    if (query.rows.length > 0) {
        gpus = query.rows.map((row) => {
            const listed = list.gpus.find((g) => g.index === row.index);
            const uuid = row.uuid ?? listed?.uuid;
            const gpu: FoundGpu = {
                index: row.index,
                model: row.name,
                memoryMiB: row.memoryMiB ?? 0,
                integrated: isTegra,
                mig: migFor(row.index, listed, summary.migDevices, cis, warnings),
                modelSource: "nvidia-smi",
                memoryKnown: row.memoryMiB !== undefined,
            };
            if (uuid && GPU_UUID.test(uuid)) gpu.uuid = uuid;
            const cc = capabilities.get(row.index);
            if (cc) gpu.computeCapability = cc;
            if (row.pciBusId && normalizeBusId(row.pciBusId)) gpu.pciBusId = row.pciBusId;
            const moduleId = moduleIds.get(normalizeBusId(row.pciBusId) ?? "");
            if (moduleId !== undefined) gpu.moduleId = moduleId;
            if (row.migEnabled && gpu.mig.length === 0)
                warnings.push(`GPU ${row.index} is in MIG mode but has no MIG devices: it runs no CUDA work until GPU and compute instances are created`);
            return gpu;
        });
        // A GPU on the bus the driver does not report: lost, or bound to another driver.
        const seen = new Set(gpus.map((g) => normalizeBusId(g.pciBusId)).filter(Boolean));
        for (const f of pciGpus) {
            if (seen.has(f.busId)) continue;
            if (lost.has(f.busId)) continue;
            warnings.push(`PCI lists NVIDIA GPU ${describePci(f)} that nvidia-smi does not report (bound to another driver such as vfio-pci?)`);
        }
    } else if (list.gpus.length > 0) {
        gpus = list.gpus.map((g) => {
            const gpu: FoundGpu = {
                index: g.index,
                model: g.name,
                memoryMiB: 0,
                integrated: isTegra,
                mig: migFor(g.index, g, summary.migDevices, cis, warnings),
                modelSource: "nvidia-smi",
                memoryKnown: false,
            };
            if (g.uuid && GPU_UUID.test(g.uuid)) gpu.uuid = g.uuid;
            return gpu;
        });
        warnings.push("nvidia-smi -L lists the GPUs, the query table did not: memory and PCI addresses unknown");
    } else if (pciGpus.length > 0) {
        // nvidia-smi numbers GPUs in PCI bus order; so does this.
        gpus = pciGpus.map((f, index) => ({
            index,
            model: pciModelName(f, "nvidia"),
            memoryMiB: 0,
            pciBusId: f.busId,
            integrated: false,
            mig: [],
            modelSource: f.name ? "lspci" : "pci-id",
            memoryKnown: false,
        }));
        if (!failure)
            warnings.push(
                sources["driver-version"]
                    ? "nvidia-smi is not installed: GPUs taken from PCI, memory unknown"
                    : "no NVIDIA driver loaded: inventory from PCI only, memory unknown",
            );
    }

    for (const [bus, message] of lost) {
        const gpu = gpus.find((g) => normalizeBusId(g.pciBusId) === bus);
        const where = gpu ? `GPU ${gpu.index} at ${bus}` : `the GPU at ${bus}`;
        problems.push(
            `${where} is lost to the driver (fell off the bus?): nvidia-smi says "${message}"; reseat or power-cycle it, or remove it from the inventory`,
        );
    }

    if (isTegra && gpus.length === 0) {
        const memory = parseMemTotalMiB(sources.meminfo);
        const board = sources["device-tree-model"]?.replace(/\0/g, "").trim();
        gpus = [
            {
                index: 0,
                model: board || `NVIDIA Jetson (L4T ${tegra.l4t})`,
                memoryMiB: memory ?? 0,
                integrated: true,
                mig: [],
                modelSource: "tegra",
                memoryKnown: memory !== undefined,
            },
        ];
    }
    if (isTegra) {
        for (const gpu of gpus) {
            if (gpu.memoryKnown) continue;
            const memory = parseMemTotalMiB(sources.meminfo);
            if (memory !== undefined) {
                gpu.memoryMiB = memory;
                gpu.memoryKnown = true;
            }
        }
        warnings.push(`Jetson (L4T ${tegra.l4t}): the GPU is integrated and shares system memory; memoryMiB is the host's MemTotal`);
    }

    // NVSwitches: the driver's own list when it has one; PCI otherwise (e.g. bound to vfio-pci).
    const driverSwitches = sources["nvswitch-devices"];
    let nvswitches = driverSwitches ? driverSwitches.length : pciSwitches.length;
    if (driverSwitches && pciSwitches.length > driverSwitches.length) {
        warnings.push(
            `PCI lists ${pciSwitches.length} NVSwitches but the NVIDIA driver has ${driverSwitches.length} (the others are bound to another driver, e.g. vfio-pci for a fabric manager service VM)`,
        );
        nvswitches = pciSwitches.length;
    }
    if (gpus.length === 0 && nvswitches > 0) warnings.push(`${nvswitches} NVSwitches but no NVIDIA GPU on this host`);

    return {
        found: { vendor: "nvidia", gpus, nvswitches, tegra: isTegra },
        driverVersion,
        cudaVersion: summary.cudaVersion,
        l4t: tegra?.l4t,
        problems,
        warnings: [...warnings, ...gisWithoutDevices(gis, cis)],
    };
}

/** GPU instances without a compute instance run nothing: worth saying. */
function gisWithoutDevices(gis: { gpu: number; gi: number; profile: string }[], cis: ComputeInstance[]): string[] {
    if (cis.length === 0) return [];
    return gis
        .filter((g) => !cis.some((c) => c.gpu === g.gpu && c.gi === g.gi))
        .map((g) => `GPU ${g.gpu}: GPU instance ${g.gi} (${g.profile}) has no compute instance, so no MIG device`);
}
