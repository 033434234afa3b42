/**
 * Plain `nvidia-smi`: its header names the driver and the CUDA version the driver supports,
 *   | NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |
 * (newer drivers: "KMD Version: ...  CUDA UMD Version: ..."; Jetson: "CUDA Version: N/A" or a
 * version), and its "MIG devices" table ties MIG device indices to GPU/compute instance ids:
 *   |  0    1   0   0  |  ...
 *      GPU  GI  CI  MIG Dev
 */

export interface NvidiaMigTableRow {
    gpu: number;
    gi: number;
    ci: number;
    /** MIG device index, as `nvidia-smi -L` numbers it. */
    device: number;
}

export interface NvidiaSummary {
    driverVersion?: string;
    cudaVersion?: string;
    migDevices: NvidiaMigTableRow[];
}

const VERSION = /^[0-9]+(\.[0-9]+)+$/;

export function parseNvidiaSmiSummary(text: string): NvidiaSummary {
    const driver = /(?:Driver|KMD) Version:\s*(\S+)/.exec(text)?.[1];
    const cuda = /CUDA (?:UMD )?Version:\s*(\S+)/.exec(text)?.[1];
    const migDevices: NvidiaMigTableRow[] = [];
    const start = text.search(/\|\s*MIG devices:/);
    if (start >= 0) {
        // The table ends at the next section (Processes) or a blank line.
        const section = text.slice(start).split(/\n\s*\n/)[0];
        for (const line of section.split(/\r?\n/)) {
            const m = /^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|/.exec(line);
            if (m) migDevices.push({ gpu: Number(m[1]), gi: Number(m[2]), ci: Number(m[3]), device: Number(m[4]) });
        }
    }
    return {
        driverVersion: driver && VERSION.test(driver) ? driver : undefined,
        cudaVersion: cuda && VERSION.test(cuda) ? cuda : undefined,
        migDevices,
    };
}

/** /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..." */
export function parseNvidiaProcVersion(text: string): string | undefined {
    return /Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+)/.exec(text)?.[1];
}
