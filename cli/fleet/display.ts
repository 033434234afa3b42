/**
 * What a person sees of a fleet run: on a terminal a table, a line per rack, redrawn in place; in
 * CI (no TTY) a plain line per change of a rack's state; at the end a summary table.
 */
/** A rack skipped was not run: the web's stack it waits on (or, on destroy, its racks) failed first. */
export type RackState = "waiting" | "running" | "done" | "failed" | "skipped";

export interface RackRow {
    rack: string;
    stack: string;
    hosts: number;
    state: RackState;
    done: number;
    /** Steps expected: the resources of the rack's state before (0 where it had none). */
    known: number;
    current: string;
    startedAt?: number;
    finishedAt?: number;
    changes?: Record<string, number>;
    error?: string[];
}

function elapsed(row: RackRow, now: number): string {
    if (row.startedAt === undefined) return "";
    return `${Math.round(((row.finishedAt ?? now) - row.startedAt) / 1000)}s`;
}

function steps(row: RackRow): string {
    return row.known > 0 ? `${row.done}/${row.known}` : `${row.done}`;
}

function changeText(changes: Record<string, number> | undefined): string {
    const entries = Object.entries(changes ?? {});
    return entries.length === 0 ? "no changes" : entries.map(([op, n]) => `${n} ${op}`).join(", ");
}

/** Rows of text cells as a table with aligned columns. */
export function table(header: string[], rows: string[][]): string[] {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (cells: string[]) =>
        cells
            .map((c, i) => c.padEnd(widths[i]))
            .join("  ")
            .trimEnd();
    return [line(header), ...rows.map(line)];
}

function liveTable(rows: RackRow[], now: number): string[] {
    return table(
        ["RACK", "HOSTS", "STEPS", "STATE", "TIME", "CURRENT"],
        rows.map((r) => [r.rack, String(r.hosts), steps(r), r.state, elapsed(r, now), r.state === "running" ? r.current.slice(0, 60) : ""]),
    );
}

export function summaryTable(rows: RackRow[], now = Date.now()): string[] {
    return table(
        ["RACK", "STACK", "HOSTS", "RESULT", "TIME", "CHANGES"],
        rows.map((r) => [
            r.rack,
            r.stack,
            String(r.hosts),
            r.state === "failed" ? "FAILED" : r.state,
            elapsed(r, now),
            r.state === "done" ? changeText(r.changes) : "",
        ]),
    );
}

/** Shows the rows as they change: `update()` after each change, `finish()` once. */
export class FleetDisplay {
    private drawn = 0;
    private timer?: NodeJS.Timeout;
    private lastState = new Map<string, RackState>();

    constructor(
        private readonly rows: RackRow[],
        private readonly out: NodeJS.WriteStream = process.stdout,
        private readonly live = Boolean(process.stdout.isTTY) && process.env.CI === undefined,
    ) {
        if (this.live) this.timer = setInterval(() => this.redraw(), 1000);
    }

    update(): void {
        if (this.live) return this.redraw();
        for (const row of this.rows) {
            if (this.lastState.get(row.rack) === row.state) continue;
            this.lastState.set(row.rack, row.state);
            if (row.state === "waiting") continue;
            const detail = row.state === "done" ? ` (${changeText(row.changes)})` : row.error ? `: ${row.error.at(-1)}` : "";
            this.out.write(`${new Date().toISOString()} ${row.rack} (${row.stack}, ${row.hosts} hosts): ${row.state}${detail}\n`);
        }
    }

    /** A line about a rack that is no change of its state (a lock cleared). */
    note(rack: string, text: string): void {
        if (this.live) this.clear();
        this.out.write(`${rack}: ${text}\n`);
        if (this.live) this.redraw();
    }

    finish(): void {
        if (this.timer) clearInterval(this.timer);
        if (this.live) this.redraw();
        else this.update();
    }

    private clear(): void {
        if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}A\x1b[J`);
        this.drawn = 0;
    }

    private redraw(): void {
        this.clear();
        const lines = liveTable(this.rows, Date.now());
        this.out.write(lines.join("\n") + "\n");
        this.drawn = lines.length;
    }
}
