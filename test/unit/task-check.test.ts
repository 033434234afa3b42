import * as assert from "assert";
import { parseBuildEvents, taskCheckOutcome, taskCheckPlan } from "../../components/lib/concourse/task-check";
import { taskCheckProblem } from "../../components/providers/checks/worker-registration-ops";

/** One event as the web writes it on GET /api/v1/builds/:id/events. */
const sse = (id: number, event: string, data: object) => `id: ${id}\nevent: event\ndata: ${JSON.stringify({ data, event, version: "1.0" })}\n\n`;

describe("the task check: a one-off build with the worker's tags", () => {
    it("plans what fly execute posts: no inputs, one task with the tags on the mock resource's image", () => {
        const plan = taskCheckPlan(["gpu", "gpu-count=2"]) as {
            do: { task?: { tags?: string[]; config: { image_resource: object; run: { path: string } } } }[];
        };
        const task = plan.do[1].task!;
        assert.deepStrictEqual(task.tags, ["gpu", "gpu-count=2"]);
        assert.deepStrictEqual(task.config.image_resource, { type: "mock", source: { mirror_self: true } });
        assert.strictEqual(task.config.run.path, "sh");
        const untagged = taskCheckPlan([]) as { do: { task?: object }[] };
        assert.ok(!("tags" in untagged.do[1].task!), "an untagged worker takes untagged steps");
    });

    it("reads the event stream: log, the task's worker (not the image fetch's), status, and the end", () => {
        const text = [
            sse(0, "selected-worker", { origin: { id: "gw-task/image-check" }, selected_worker: "other" }),
            sse(1, "selected-worker", { origin: { id: "gw-task" }, selected_worker: "gpu-a" }),
            sse(2, "log", { origin: { id: "gw-task", source: "stdout" }, payload: "NVIDIA_VISIBLE_DEVICES=0,1\n" }),
            sse(3, "log", { origin: { id: "gw-task", source: "stdout" }, payload: "gpu-workers: the task check ran\n" }),
            sse(4, "status", { status: "succeeded", time: 1 }),
            "id: 5\nevent: end\ndata\n\n",
        ].join("");
        // Split anywhere: a read may end inside an event.
        const cut = 150;
        const first = parseBuildEvents(text.slice(0, cut));
        const second = parseBuildEvents(first.rest + text.slice(cut));
        assert.strictEqual(first.ended, false);
        assert.strictEqual(second.ended, true);
        const outcome = taskCheckOutcome([...first.events, ...second.events]);
        assert.deepStrictEqual(outcome, { status: "succeeded", worker: "gpu-a", log: "NVIDIA_VISIBLE_DEVICES=0,1\ngpu-workers: the task check ran\n" });
        assert.strictEqual(taskCheckProblem({ worker: "gpu-a", tags: ["gpu"] }, 7, outcome), undefined);
    });

    it("a build that did not succeed fails the check with its status, worker and last output", () => {
        const events = parseBuildEvents(
            [
                sse(0, "selected-worker", { origin: { id: "gw-task" }, selected_worker: "gpu-a" }),
                sse(1, "log", { origin: { id: "gw-task" }, payload: "exec: nvidia-container-cli: no such device\n" }),
                sse(2, "error", { origin: { id: "gw-task" }, message: "task errored" }),
                sse(3, "status", { status: "errored", time: 1 }),
            ].join(""),
        ).events;
        const problem = taskCheckProblem({ worker: "gpu-a", tags: ["gpu", "gpu-type=nvidia"] }, 12, taskCheckOutcome(events));
        assert.strictEqual(
            problem,
            "worker gpu-a: the task check (one-off build 12, tags [gpu, gpu-type=nvidia]) ended errored on worker gpu-a; its output:\nexec: nvidia-container-cli: no such device\nerror: task errored",
        );
    });

    it("a stream cut before the status is no success", () => {
        const outcome = taskCheckOutcome(parseBuildEvents(sse(0, "log", { payload: "started\n" })).events);
        assert.match(taskCheckProblem({ worker: "w", tags: [] }, 1, outcome)!, /ended unknown; its output:\nstarted/);
    });
});
