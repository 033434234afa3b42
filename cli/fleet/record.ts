/** The last run of each operation (`last-up.json`, ...): which racks failed, for `fleet <op> --failed`. */
import * as fs from "fs";
import * as path from "path";
import { fleetDir } from "./workdir";

export interface RunRecord {
    finishedAt: string;
    /** Each rack the operation last ran on, and whether it succeeded that time. */
    racks: Record<string, { ok: boolean }>;
}

function recordFile(projectDir: string, stack: string, operation: string): string {
    return path.join(fleetDir(projectDir, stack), `last-${operation}.json`);
}

export function readRecord(projectDir: string, stack: string, operation: string): RunRecord | undefined {
    const file = recordFile(projectDir, stack, operation);
    return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as RunRecord) : undefined;
}

/** Records a run: the racks it ran take their new result, the others keep theirs. */
export function writeRecord(projectDir: string, stack: string, operation: string, results: Record<string, { ok: boolean }>): void {
    const racks = { ...(readRecord(projectDir, stack, operation)?.racks ?? {}), ...results };
    const record: RunRecord = { finishedAt: new Date().toISOString(), racks };
    fs.writeFileSync(recordFile(projectDir, stack, operation), JSON.stringify(record, null, 2) + "\n");
}

/** The racks whose last run of the operation failed. */
export function failedRacks(record: RunRecord | undefined): string[] {
    return Object.entries(record?.racks ?? {})
        .filter(([, r]) => !r.ok)
        .map(([name]) => name);
}
