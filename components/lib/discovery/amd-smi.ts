/**
 * Marketing names from AMD's tools, when they are installed: `amd-smi static --asic --bus --vram`
 * prints per GPU a "GPU: N" block, "MARKET_NAME:" in its ASIC section before "BDF:" in its
 * BUS section; `rocm-smi --showproductname --showbus` prints "GPU[0]		: Card Series: ..."
 * and "GPU[0]		: PCI Bus: 0000:03:00.0". Both are read loosely (their layouts change between
 * ROCm releases): only name and PCI address are taken.
 */
import { normalizeBusId } from "./pci";

export interface AmdToolGpu {
    busId?: string;
    name: string;
}

export function parseAmdSmiStatic(text: string): AmdToolGpu[] {
    // Each "GPU: N" block is read whole: MARKET_NAME (ASIC section) comes before BDF (BUS
    // section), so a name is paired with its address only once the block has ended.
    const out: AmdToolGpu[] = [];
    for (const block of text.split(/^\s*GPU:\s*\d+.*$/m)) {
        const name = /^[ \t]*MARKET_NAME:[ \t]*(.+?)\s*$/m.exec(block);
        if (!name || name[1] === "N/A") continue;
        const bdf = /^[ \t]*BDF:[ \t]*(\S+)/m.exec(block);
        out.push({ busId: bdf ? normalizeBusId(bdf[1]) : undefined, name: name[1] });
    }
    return out;
}

export function parseRocmSmi(text: string): AmdToolGpu[] {
    const byGpu = new Map<number, AmdToolGpu>();
    for (const line of text.split(/\r?\n/)) {
        const m = /^GPU\[(\d+)\]\s*:\s*(Card Series|Card series|PCI Bus)\s*:\s*(.+?)\s*$/.exec(line);
        if (!m) continue;
        const gpu = byGpu.get(Number(m[1])) ?? { name: "" };
        if (/pci bus/i.test(m[2])) gpu.busId = normalizeBusId(m[3]);
        else gpu.name = m[3];
        byGpu.set(Number(m[1]), gpu);
    }
    return [...byGpu.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([, g]) => g)
        .filter((g) => g.name !== "");
}
