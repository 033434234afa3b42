/**
 * NVIDIA Jetson (Tegra): /etc/nv_tegra_release names the L4T release, e.g.
 *   # R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: ...
 * and /proc/device-tree/model the board ("NVIDIA Jetson AGX Orin Developer Kit"). The GPU is
 * integrated (not on PCI) and shares system memory; JetPack 5 has no nvidia-smi at all and
 * JetPack 6's reports "Orin (nvgpu)" with most fields N/A.
 */

export interface TegraRelease {
    /** L4T release, e.g. "35.4.1". */
    l4t?: string;
    board?: string;
}

export function parseTegraRelease(text: string): TegraRelease | undefined {
    const m = /#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([0-9.]+)/.exec(text);
    if (!m) return undefined;
    return { l4t: `${m[1]}.${m[2]}`, board: /BOARD:\s*([^,\s]+)/.exec(text)?.[1] };
}

/** "MemTotal:       30536316 kB" -> MiB. */
export function parseMemTotalMiB(text: string | undefined): number | undefined {
    const m = text ? /MemTotal:\s+(\d+)\s*kB/.exec(text) : null;
    return m ? Math.floor(Number(m[1]) / 1024) : undefined;
}
