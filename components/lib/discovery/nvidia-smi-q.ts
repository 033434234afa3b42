/**
 * `nvidia-smi -q`: one block per GPU, opened by a line "GPU 00000000:18:00.0" and holding
 * "    Module ID                             : 3" (N/A where the board has no module ids).
 * Only the module id is read here: fabric partitions name GPUs by it. Pure.
 */
import { normalizeBusId } from "./pci";

/** Module id by normalized PCI bus id (0000:18:00.0); GPUs that report N/A are left out. */
export function parseNvidiaSmiModuleIds(text: string): Map<string, number> {
    const out = new Map<string, number>();
    let bus: string | undefined;
    for (const line of text.split(/\r?\n/)) {
        const header = /^GPU\s+([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s*$/.exec(line);
        if (header) {
            bus = normalizeBusId(header[1]);
            continue;
        }
        // The GPU's own attribute sits one level in; deeper lines belong to sub-sections.
        const m = /^ {4}Module ID\s*:\s*(\S+)\s*$/.exec(line);
        if (m && bus && /^[0-9]+$/.test(m[1]) && Number(m[1]) > 0) out.set(bus, Number(m[1]));
    }
    return out;
}
