/**
 * A task's time on a Concourse worker, from the worker's own log (its journal: the containerd
 * shim's lines and the garden server's lager lines, each with a nanosecond time stamp):
 * from the moment the shim of the task's container starts, before any runtime call for it,
 * to the moment the task's process has exited. Every runtime call of a task (create, start,
 * exec, each through the wrapper when it is in place) falls inside; the web's own waits
 * (its 500 ms tick for build events, its polls for volumes) fall outside. Pure.
 */

/** The lines the parser reads, as an extended regular expression for grep on the worker. */
export const WORKER_LOG_LINES = "starting signal loop|garden-server\\.(create\\.created|run\\.spawned|run\\.exited)";

export interface WorkerEvent {
    /** Seconds since the epoch, to the microsecond. */
    time: number;
    kind: "shim-start" | "created" | "spawned" | "exited";
    /** The container (Concourse's handle, containerd's id). */
    handle: string;
    /** The process id within the container ("task" for a task's command). */
    process?: string;
}

/** RFC 3339 with up to nine digits of fraction ("2026-11-24T18:53:49.800559165Z"), or Unix seconds as lager once wrote them. */
export function parseTimestamp(text: string): number {
    if (/^[0-9]+(\.[0-9]+)?$/.test(text)) return Number(text);
    const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(text);
    if (!m) throw new Error(`not a time stamp: ${text}`);
    return Date.parse(m[1] + m[3]) / 1000 + (m[2] ? Number(`0${m[2]}`) : 0);
}

const SHIM_START = /^time="([^"]+)".*msg="starting signal loop".*\spath=\S*\/([^/\s"]+)(\s|$)/;

/** The events of `text` (one log line each, as `journalctl -o cat` prints them); other lines are skipped. */
export function parseWorkerLog(text: string): WorkerEvent[] {
    const events: WorkerEvent[] = [];
    for (const line of text.split("\n")) {
        const shim = SHIM_START.exec(line);
        if (shim) {
            events.push({ time: parseTimestamp(shim[1]), kind: "shim-start", handle: shim[2] });
            continue;
        }
        if (!line.startsWith("{")) continue;
        let entry: { timestamp?: string; message?: string; data?: { handle?: string; id?: string; request?: { Handle?: string } } };
        try {
            entry = JSON.parse(line) as typeof entry;
        } catch {
            continue;
        }
        const kind = entry.message?.endsWith("garden-server.create.created")
            ? "created"
            : entry.message?.endsWith("garden-server.run.spawned")
              ? "spawned"
              : entry.message?.endsWith("garden-server.run.exited")
                ? "exited"
                : undefined;
        const handle = entry.data?.handle ?? entry.data?.request?.Handle;
        if (!kind || !handle || !entry.timestamp) continue;
        events.push({ time: parseTimestamp(String(entry.timestamp)), kind, handle, ...(entry.data?.id ? { process: entry.data.id } : {}) });
    }
    return events;
}

export interface TaskOnWorker {
    /** Seconds from the shim's start for the task's container to the task's exit. */
    container: number;
    /** Of which: the shim's start to the container created (runtime create and start). */
    create: number;
    /** Other containers whose shim started in the same window (an image check, a fetch). */
    otherContainers: number;
}

/**
 * The task of the build that ran between `from` and `to` (seconds since the epoch): its
 * container is the one whose process `task` exited in that window. Undefined when the log
 * holds no such container.
 */
export function taskOnWorker(events: WorkerEvent[], from: number, to: number, taskProcess = "task"): TaskOnWorker | undefined {
    const inWindow = events.filter((e) => e.time >= from && e.time <= to);
    const exited = inWindow.find((e) => e.kind === "exited" && e.process === taskProcess);
    if (!exited) return undefined;
    const of = (kind: WorkerEvent["kind"]) => inWindow.find((e) => e.kind === kind && e.handle === exited.handle);
    const shim = of("shim-start");
    const created = of("created");
    if (!shim || !created) return undefined;
    const others = new Set(inWindow.filter((e) => e.kind === "shim-start" && e.handle !== exited.handle).map((e) => e.handle));
    return { container: exited.time - shim.time, create: created.time - shim.time, otherContainers: others.size };
}
