/**
 * `nvidia-smi -L`: one line per GPU, and under a GPU in MIG mode one indented line per MIG
 * device:
 *   GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-4101de38-535a-4255-ac14-a63e072d7a10)
 *     MIG 3g.40gb     Device  0: (UUID: MIG-d771d938-b556-4f9d-b742-2dd26b864023)
 * Drivers before R470 printed MIG UUIDs as MIG-GPU-<uuid>/<gi>/<ci>; those are kept as text.
 */

export interface NvidiaListedMig {
    /** MIG device index within its GPU. */
    index: number;
    profile: string;
    uuid?: string;
}

export interface NvidiaListedGpu {
    index: number;
    name: string;
    uuid?: string;
    mig: NvidiaListedMig[];
}

export interface NvidiaListResult {
    gpus: NvidiaListedGpu[];
    messages: string[];
}

const GPU_LINE = /^GPU\s+(\d+):\s+(.*?)\s+\(UUID:\s*([^)]*)\)\s*$/;
const MIG_LINE = /^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s+\(UUID:\s*([^)]*)\)\s*$/;

export function parseNvidiaSmiList(text: string): NvidiaListResult {
    const gpus: NvidiaListedGpu[] = [];
    const messages: string[] = [];
    for (const line of text.split(/\r?\n/)) {
        if (line.trim() === "") continue;
        const gpu = GPU_LINE.exec(line);
        if (gpu) {
            gpus.push({ index: Number(gpu[1]), name: gpu[2].trim(), uuid: gpu[3].trim() || undefined, mig: [] });
            continue;
        }
        const mig = MIG_LINE.exec(line);
        if (mig && gpus.length > 0) {
            gpus[gpus.length - 1].mig.push({ index: Number(mig[2]), profile: mig[1], uuid: mig[3].trim() || undefined });
            continue;
        }
        messages.push(line.trim());
    }
    return { gpus, messages };
}
