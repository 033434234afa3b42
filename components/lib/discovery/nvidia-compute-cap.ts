/** `nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader`: "0, 9.0" per GPU. */
import { COMPUTE_CAPABILITY_PATTERN } from "../gpu/inventory";

export function parseComputeCapabilities(text: string): Map<number, string> {
    const out = new Map<number, string>();
    for (const line of text.split(/\r?\n/)) {
        const m = /^\s*(\d+)\s*,\s*(\S+)\s*$/.exec(line);
        if (m && COMPUTE_CAPABILITY_PATTERN.test(m[2])) out.set(Number(m[1]), m[2]);
    }
    return out;
}
