/**
 * Marketing names from AMD's tools, when they are installed: `amd-smi static --asic --bus --vram`
 * prints per GPU a "BDF:" and a "MARKET_NAME:" line; `rocm-smi --showproductname --showbus`
 * prints "GPU[0]		: Card Series: ..." and "GPU[0]		: PCI Bus: 0000:03:00.0". Both are read
 * loosely (their layouts change between ROCm releases): only name and PCI address are taken.
 */
import { normalizeBusId } from "./pci";

export interface AmdToolGpu {
    busId?: string;
    name: string;
}

export function parseAmdSmiStatic(text: string): AmdToolGpu[] {
    const out: AmdToolGpu[] = [];
    let bus: string | undefined;
    for (const line of text.split(/\r?\n/)) {
        if (/^GPU:\s*\d+/.test(line.trim())) bus = undefined;
        const bdf = /^\s*BDF:\s*(\S+)/.exec(line);
        if (bdf) bus = normalizeBusId(bdf[1]);
        const name = /^\s*MARKET_NAME:\s*(.+?)\s*$/.exec(line);
        if (name && name[1] !== "N/A") out.push({ busId: bus, name: name[1] });
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
    return [...byGpu.entries()].sort((a, b) => a[0] - b[0]).map(([, g]) => g).filter((g) => g.name !== "");
}
