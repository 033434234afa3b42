/**
 * `nvidia-smi mig -lgi` and `nvidia-smi mig -lci` tables, e.g.
 *   |   0  MIG 3g.20gb          9        1          4:4     |      (GPU, profile, profile id, GI id, placement)
 *   |   0      1       MIG 3g.20gb          2         0          0:3     |   (GPU, GI id, profile, profile id, CI id, placement)
 */

export interface GpuInstance {
    gpu: number;
    profile: string;
    profileId: number;
    gi: number;
}

export interface ComputeInstance {
    gpu: number;
    gi: number;
    profile: string;
    profileId: number;
    ci: number;
}

export function parseGpuInstances(text: string): GpuInstance[] {
    const out: GpuInstance[] = [];
    for (const line of text.split(/\r?\n/)) {
        const m = /^\|\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+\d+:\d+\s+\|\s*$/.exec(line);
        if (m) out.push({ gpu: Number(m[1]), profile: m[2], profileId: Number(m[3]), gi: Number(m[4]) });
    }
    return out;
}

export function parseComputeInstances(text: string): ComputeInstance[] {
    const out: ComputeInstance[] = [];
    for (const line of text.split(/\r?\n/)) {
        const m = /^\|\s+(\d+)\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+\d+:\d+\s+\|\s*$/.exec(line);
        if (m) out.push({ gpu: Number(m[1]), gi: Number(m[2]), profile: m[3], profileId: Number(m[4]), ci: Number(m[5]) });
    }
    return out;
}
