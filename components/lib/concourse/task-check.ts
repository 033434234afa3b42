/**
 * The task the registration check runs through Concourse once the worker is listed: a one-off
 * build (what `fly execute` creates) of one task tagged with the worker's tags, on the image
 * of Concourse's bundled mock resource, and how its event stream is read. Pure functions.
 */

/** What the task runs: it prints the GPU variables the wrapper gave it, so a failure shows them. */
export const TASK_CHECK_SCRIPT = "env | grep -E '^(NVIDIA|CUDA|ROCR|HIP|GPU)_' | sort; echo 'gpu-workers: the task check ran'";

/** The build plan, as `fly execute` posts it: no inputs, one task. Plan ids are only unique labels. */
export function taskCheckPlan(tags: string[]): object {
    const task = {
        name: "gpu-workers-task-check",
        privileged: false,
        ...(tags.length > 0 ? { tags } : {}),
        config: {
            platform: "linux",
            // Every Concourse release bundles the mock resource; mirror_self makes its own root the task's image.
            image_resource: { type: "mock", source: { mirror_self: true } },
            run: { path: "sh", args: ["-c", TASK_CHECK_SCRIPT] },
        },
    };
    return {
        id: "gw-task-check",
        do: [
            { id: "gw-inputs", in_parallel: { steps: [] } },
            { id: "gw-task", task },
        ],
    };
}

/** One event of a build's stream (GET /api/v1/builds/:id/events), as the web writes it. */
export interface BuildEvent {
    event: string;
    data: Record<string, unknown>;
}

/**
 * Splits server-sent events text into the build's events; `ended` once the web sent its
 * `end` event (after the build finished). A trailing event without its blank line is left
 * for the next read.
 */
export function parseBuildEvents(text: string): { events: BuildEvent[]; ended: boolean; rest: string } {
    const blocks = text.replace(/\r\n/g, "\n").split("\n\n");
    const rest = blocks.pop() ?? "";
    const events: BuildEvent[] = [];
    let ended = false;
    for (const block of blocks) {
        const lines = block.split("\n");
        const name = lines
            .find((l) => l.startsWith("event:"))
            ?.slice(6)
            .trim();
        if (name === "end") {
            ended = true;
            continue;
        }
        const data = lines
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
        if (name !== "event" || data === "") continue;
        const envelope = JSON.parse(data) as { event?: string; data?: Record<string, unknown> };
        if (envelope.event) events.push({ event: envelope.event, data: envelope.data ?? {} });
    }
    return { events, ended, rest };
}

/** What a finished task check build says: its status, the worker that ran the task, its output. */
export interface TaskCheckOutcome {
    status: string;
    worker?: string;
    log: string;
}

export function taskCheckOutcome(events: BuildEvent[]): TaskCheckOutcome {
    let status = "unknown";
    let worker: string | undefined;
    let log = "";
    for (const e of events) {
        if (e.event === "status" && typeof e.data.status === "string") status = e.data.status;
        // The task's own worker: image-check and image-get steps may run elsewhere first.
        if (e.event === "selected-worker" && typeof e.data.selected_worker === "string" && originId(e) === "gw-task") worker = e.data.selected_worker;
        if (e.event === "log" && typeof e.data.payload === "string") log += e.data.payload;
        if (e.event === "error" && typeof e.data.message === "string") log += `error: ${e.data.message}\n`;
    }
    return { status, ...(worker ? { worker } : {}), log };
}

function originId(e: BuildEvent): string | undefined {
    const origin = e.data.origin as { id?: unknown } | undefined;
    return typeof origin?.id === "string" ? origin.id : undefined;
}
