/**
 * AMD's KFD topology, /sys/class/kfd/kfd/topology/nodes/N/properties: "key value" lines.
 * A node with simd_count > 0 is a GPU (node 0 is usually the CPU); gfx_target_version packs
 * the gfx target as decimal major*10000 + minor*100 + stepping, where minor and stepping
 * print as hex digits: 90010 -> gfx90a, 110003 -> gfx1103, 90402 -> gfx942.
 * drm_render_minor names the render node (128 -> renderD128); location_id and domain give
 * the PCI address; mem_banks/N/properties hold the memory size in size_in_bytes.
 */
import { busIdFromKfdLocation, PCI_VENDOR } from "./pci";
import { KfdNodeSource } from "./document";

export interface KfdGpu {
    node: number;
    gfxTarget?: string;
    renderNode?: string;
    busId?: string;
    deviceId?: string;
    /** Sum of the node's memory banks, MiB (dedicated VRAM, or the UMA carve-out of an APU). */
    memoryMiB?: number;
    simdCount: number;
    /** The node's `name` file, when the kernel writes one. */
    name?: string;
}

export function parseKfdProperties(text: string): Map<string, string> {
    const props = new Map<string, string>();
    for (const line of text.split(/\r?\n/)) {
        const m = /^\s*([A-Za-z0-9_]+)\s+(\S+)\s*$/.exec(line);
        if (m) props.set(m[1], m[2]);
    }
    return props;
}

/** 90010 -> "gfx90a", 110003 -> "gfx1103"; undefined for 0 (CPU) or nonsense. */
export function gfxTargetFromVersion(version: number): string | undefined {
    if (!Number.isInteger(version) || version <= 0) return undefined;
    const major = Math.floor(version / 10000);
    const minor = Math.floor(version / 100) % 100;
    const step = version % 100;
    if (major < 7 || minor > 15 || step > 15) return undefined;
    return `gfx${major}${minor.toString(16)}${step.toString(16)}`;
}

function num(props: Map<string, string>, key: string): number | undefined {
    const v = props.get(key);
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

export function parseKfdNodes(nodes: KfdNodeSource[]): KfdGpu[] {
    const gpus: KfdGpu[] = [];
    for (const node of nodes) {
        if (!node.properties) continue;
        const props = parseKfdProperties(node.properties);
        const simd = num(props, "simd_count") ?? 0;
        const vendor = num(props, "vendor_id");
        // GPU nodes only, and only AMD's (a KFD can also list other vendors' agents).
        if (simd <= 0 || (vendor !== undefined && vendor !== 0 && vendor !== parseInt(PCI_VENDOR.amd, 16))) continue;
        const version = num(props, "gfx_target_version");
        const minor = num(props, "drm_render_minor");
        const location = num(props, "location_id");
        const device = num(props, "device_id");
        let bytes = 0;
        for (const bank of node["mem-banks"]) bytes += num(parseKfdProperties(bank), "size_in_bytes") ?? 0;
        if (bytes === 0) bytes = num(props, "local_mem_size") ?? 0;
        gpus.push({
            node: Number(node.node),
            gfxTarget: version !== undefined ? gfxTargetFromVersion(version) : undefined,
            renderNode: minor !== undefined && minor > 0 ? `renderD${minor}` : undefined,
            busId: location !== undefined ? busIdFromKfdLocation(num(props, "domain") ?? 0, location) : undefined,
            deviceId: device !== undefined && device > 0 ? device.toString(16).padStart(4, "0") : undefined,
            memoryMiB: bytes > 0 ? Math.floor(bytes / (1024 * 1024)) : undefined,
            simdCount: simd,
            name: node.name?.trim() || undefined,
        });
    }
    return gpus.sort((a, b) => a.node - b.node);
}

/**
 * gfx targets of integrated parts (APUs): they share host memory. The KFD has no plain flag
 * for it, so the known APU targets are listed (Raven/Picasso, Renoir/Cezanne, Van Gogh,
 * Rembrandt, Raphael, Phoenix, Strix, Strix Halo, Krackan).
 */
export const APU_GFX_TARGETS = new Set(["gfx902", "gfx909", "gfx90c", "gfx1033", "gfx1035", "gfx1036", "gfx1037", "gfx1103", "gfx1150", "gfx1151", "gfx1152"]);
