/**
 * Turns the document host/discover-gpus.sh prints into what the host has: the inventory
 * (the shape of components/gpu/inventory.ts) for the primary vendor, every vendor found,
 * driver and CUDA versions, the sources used, and what is wrong or uncertain. Pure.
 */
import { assembleAmd } from "./assemble-amd";
import { assembleIntel } from "./assemble-intel";
import { assembleNvidia } from "./assemble-nvidia";
import { DiscoveryDocument, readDiscoveryDocument } from "./document";
import { DiscoveryResult, GpuVendor, inventoryOf } from "./result";

export function interpretDiscovery(doc: DiscoveryDocument): DiscoveryResult {
    const nvidia = assembleNvidia(doc.sources, doc.errors);
    const amd = assembleAmd(doc.sources, doc.errors);
    const intel = assembleIntel(doc.sources, doc.errors);
    const vendors: GpuVendor[] = [];
    if (nvidia.found.gpus.length > 0) vendors.push("nvidia");
    if (amd.found.gpus.length > 0) vendors.push("amd");
    if (intel.found.gpus.length > 0) vendors.push("intel");
    const found: DiscoveryResult["found"] = {};
    if (vendors.includes("nvidia") || nvidia.found.nvswitches > 0) found.nvidia = nvidia.found;
    if (vendors.includes("amd")) found.amd = amd.found;
    if (vendors.includes("intel")) found.intel = intel.found;
    const warnings = [...nvidia.warnings, ...amd.warnings, ...intel.warnings];
    if (vendors.length > 1) warnings.push(`this host has GPUs of ${vendors.length} vendors (${vendors.join(", ")}); a worker uses one`);
    // "6.2.2-116" -> "6.2.2": the release the driver step pins.
    const rocmVersion = /^([0-9]+(\.[0-9]+)+)/.exec(doc.sources["rocm-version"]?.trim() ?? "")?.[1];
    const primary = vendors[0];
    const versions =
        primary === "nvidia"
            ? { driverVersion: nvidia.driverVersion, cudaVersion: nvidia.cudaVersion }
            : primary === "amd"
              ? { driverVersion: rocmVersion }
              : {};
    return {
        vendors,
        found,
        inventory: inventoryOf(primary ? found[primary] : undefined, versions),
        ...(rocmVersion ? { rocmVersion } : {}),
        driverVersion: nvidia.driverVersion,
        cudaVersion: nvidia.cudaVersion,
        l4t: nvidia.l4t,
        sources: Object.keys(doc.sources).sort(),
        failedTools: Object.entries(doc.errors).map(([tool, f]) => `${tool} (exit ${f.exit})`),
        problems: [...nvidia.problems, ...amd.problems, ...intel.problems],
        warnings,
    };
}

/** The script's stdout (or its parsed JSON) -> DiscoveryResult; throws a readable error on bad input. */
export function parseDiscoveryDocument(input: unknown, origin?: string): DiscoveryResult {
    return interpretDiscovery(readDiscoveryDocument(input, origin));
}
