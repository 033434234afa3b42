/**
 * `nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version,mig.mode.current
 * --format=csv,noheader,nounits`: one line per GPU, ", " between fields. Lines that are not
 * rows (a lost GPU's "Unable to determine the device handle ..." can come between rows) are
 * returned as messages.
 */

export const NVIDIA_QUERY_FIELDS = ["index", "uuid", "name", "memory.total", "pci.bus_id", "driver_version", "mig.mode.current"] as const;

export interface NvidiaQueryRow {
    index: number;
    uuid?: string;
    name: string;
    /** undefined when nvidia-smi reports [N/A] (integrated parts). */
    memoryMiB?: number;
    pciBusId?: string;
    driverVersion?: string;
    /** true / false, or undefined where the GPU has no MIG support ([N/A]). */
    migEnabled?: boolean;
}

export interface NvidiaQueryResult {
    rows: NvidiaQueryRow[];
    /** Lines that are not GPU rows, verbatim. */
    messages: string[];
}

function value(field: string): string | undefined {
    const v = field.trim();
    return v === "" || /^\[?N\/A\]?$/i.test(v) || /^\[?Not Supported\]?$/i.test(v) || /^\[?Unknown Error\]?$/i.test(v) ? undefined : v;
}

export function parseNvidiaSmiQuery(text: string): NvidiaQueryResult {
    const rows: NvidiaQueryRow[] = [];
    const messages: string[] = [];
    for (const line of text.split(/\r?\n/)) {
        if (line.trim() === "") continue;
        const fields = line.split(",");
        const n = NVIDIA_QUERY_FIELDS.length;
        if (fields.length < n || !/^\s*\d+\s*$/.test(fields[0])) {
            messages.push(line.trim());
            continue;
        }
        // A name with a comma in it spreads over several fields: the name takes the surplus.
        const extra = fields.length - n;
        const name = fields
            .slice(2, 3 + extra)
            .join(",")
            .trim();
        const [memory, busId, driver, mig] = fields.slice(3 + extra);
        const memoryText = value(memory);
        const migText = value(mig);
        rows.push({
            index: Number(fields[0].trim()),
            uuid: value(fields[1]),
            name,
            memoryMiB: memoryText !== undefined && /^\d+$/.test(memoryText) ? Number(memoryText) : undefined,
            pciBusId: value(busId),
            driverVersion: value(driver),
            migEnabled: migText === undefined ? undefined : /^enabled$/i.test(migText),
        });
    }
    return { rows, messages };
}
