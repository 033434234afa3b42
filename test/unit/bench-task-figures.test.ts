/** bench:task's figures: a task's time from a Concourse worker's own log, and the ratio with its interval. */
import * as assert from "assert";
import { mean, pairedBootstrap, pairedRatio, quantile, seededRandom, spreadOffsets, verdict } from "../../bench/stats";
import { pairedFigures, Run } from "../../bench/task-rounds";
import { parseTimestamp, parseWorkerLog, taskOnWorker, WorkerEvent } from "../../bench/worker-log";

// As `journalctl -u concourse-worker -o cat` prints them (Concourse 8.2.5; shortened data).
const CHECK = "74d2c8e5-c4a0-41f2-92b8-621d3d69c506";
const TASK = "00f2f965-533a-49c1-bb7f-c1462b45d786";
const LOG = [
    `time="2026-11-24T19:00:28.600000000Z" level=info msg="starting signal loop" namespace=concourse path=/run/containerd/io.containerd.runtime.v2.task/concourse/fd0065b3-d476-411f-8fa7-1b41bfd7541c pid=12001 runtime=io.containerd.runc.v2`,
    `{"timestamp":"2026-11-24T19:00:28.816594233Z","level":"info","source":"worker","message":"worker.garden.garden-server.run.exited","data":{"handle":"fd0065b3-d476-411f-8fa7-1b41bfd7541c","id":"${CHECK}","session":"1.2.573","status":0}}`,
    `time="2026-11-24T19:00:28.884803077Z" level=info msg="starting signal loop" namespace=concourse path=/run/containerd/io.containerd.runtime.v2.task/concourse/${TASK} pid=12154 runtime=io.containerd.runc.v2`,
    `time="2026-11-24T19:00:28.950000000Z" level=error msg="loading cgroup for 3555" error="cgroups: cannot find cgroup mount destination"`,
    `{"timestamp":"2026-11-24T19:00:29.034229798Z","level":"info","source":"worker","message":"worker.garden.garden-server.create.created","data":{"request":{"Handle":"${TASK}","GraceTime":0},"session":"1.2.578"}}`,
    `{"timestamp":"2026-11-24T19:00:29.157528728Z","level":"info","source":"worker","message":"worker.garden.garden-server.run.spawned","data":{"handle":"${TASK}","id":"task","session":"1.2.580"}}`,
    `{"timestamp":"2026-11-24T19:00:29.162296506Z","level":"info","source":"worker","message":"worker.garden.garden-server.run.exited","data":{"handle":"${TASK}","id":"task","session":"1.2.580","status":0}}`,
    "not a log line {",
].join("\n");

describe("bench:task: a task's time from the worker's log", () => {
    it("reads nanosecond time stamps to the microsecond, and lager's older Unix seconds", () => {
        assert.strictEqual(Math.round((parseTimestamp("2026-11-24T19:00:29.162296506Z") - parseTimestamp("2026-11-24T19:00:28.884803077Z")) * 1e6), 277493);
        assert.ok(Math.abs(parseTimestamp("2026-11-24T19:00:29.162296506Z") - 1795546829.162296) < 1e-6);
        assert.strictEqual(parseTimestamp("1690000000.25"), 1690000000.25);
        assert.throws(() => parseTimestamp("yesterday"), /not a time stamp: yesterday/);
    });

    it("finds the shim's start, the container's creation and the task's exit; other lines are skipped", () => {
        const events = parseWorkerLog(LOG);
        assert.deepStrictEqual(
            events.map((e) => `${e.kind} ${e.handle.slice(0, 8)} ${e.process ?? ""}`.trim()),
            ["shim-start fd0065b3", `exited fd0065b3 ${CHECK}`, "shim-start 00f2f965", "created 00f2f965", "spawned 00f2f965 task", "exited 00f2f965 task"],
        );
    });

    it("the task's container from its shim's start to the task's exit; a check container in the window is counted", () => {
        const events = parseWorkerLog(LOG);
        const start = parseTimestamp("2026-11-24T19:00:28.500000000Z");
        const task = taskOnWorker(events, start, start + 1)!;
        assert.strictEqual(Math.round(task.container * 1e6), 277493);
        assert.strictEqual(Math.round(task.create * 1e6), 149427);
        assert.strictEqual(task.otherContainers, 1);
        assert.strictEqual(taskOnWorker(events, start + 0.35, start + 1)!.otherContainers, 0);
        assert.strictEqual(taskOnWorker(events, start, start + 0.5), undefined, "no task exited in the window");
    });
});

describe("bench:task: rounds side by side", () => {
    /** The events of one task run from `at`: its container's shim, creation and exit, and a check container when asked. */
    const task = (at: number, handle: string, seconds: number, check = false): WorkerEvent[] => [
        ...(check ? [{ time: at + 0.01, kind: "shim-start" as const, handle: `${handle}-check` }] : []),
        { time: at + 0.1, kind: "shim-start", handle },
        { time: at + 0.2, kind: "created", handle },
        { time: at + 0.1 + seconds, kind: "exited", handle, process: "task" },
    ];

    it("pairs each round's runs; a round with an image check or a missing task is left out whole, with why", () => {
        const runs: Run[] = [
            { side: "wrapped", round: 0, start: 100, end: 101, build: 1 },
            { side: "bare", round: 0, start: 102, end: 103.5, build: 2 },
            { side: "bare", round: 1, start: 104, end: 105, build: 3 },
            { side: "wrapped", round: 1, start: 106, end: 107, build: 4 },
            { side: "wrapped", round: 2, start: 108, end: 109, build: 5 },
            { side: "bare", round: 2, start: 110, end: 111, build: 6 },
        ];
        const events = [...task(100, "a", 0.26), ...task(102, "b", 0.25), ...task(104, "c", 0.24, true), ...task(106, "d", 0.27), ...task(108, "e", 0.3)];
        const web = new Map([
            [1, 0.5],
            [2, 0.6],
            [3, 0.4],
            [4, 0.4],
            [5, 0.5],
            [6, 0.5],
        ]);
        const { figures, leftOut } = pairedFigures(runs, events, web);
        assert.deepStrictEqual(
            figures.worker.wrapped.map((x) => Math.round(x * 1000)),
            [260],
        );
        assert.deepStrictEqual(
            figures.worker.bare.map((x) => Math.round(x * 1000)),
            [250],
        );
        assert.deepStrictEqual({ web: figures.web, fly: figures.fly }, { web: { wrapped: [0.5], bare: [0.6] }, fly: { wrapped: [1], bare: [1.5] } });
        assert.deepStrictEqual(leftOut, ["build 3 (bare): also checked the image", "build 6: no task in the worker's log"]);
    });
});

describe("bench:task: the ratio says its spread", () => {
    it("a ratio of means with a 95% interval from paired rounds, reproducible from its seed", () => {
        const bare = [250, 260, 240, 255, 245, 250, 262, 238];
        const wrapped = bare.map((b, i) => b + 8 + (i % 2 ? 2 : -2));
        const estimate = pairedRatio(wrapped, bare);
        assert.strictEqual(estimate.value, mean(wrapped) / mean(bare));
        assert.ok(estimate.low < estimate.value && estimate.value < estimate.high && estimate.high - estimate.low < 0.02, JSON.stringify(estimate));
        assert.deepStrictEqual(pairedRatio(wrapped, bare), estimate);
        assert.throws(() => pairedRatio([1], [1, 2]), /same number/);
        // Pairs stay together: a shared swing between rounds does not widen the interval of the difference.
        const drift = pairedBootstrap(
            bare.map((b, i) => [b + 100 * i, b + 100 * i + 8]),
            (s) => mean(s.map(([x, y]) => y - x)),
        );
        assert.deepStrictEqual(drift, { value: 8, low: 8, high: 8 });
    });

    it("PASS only when the whole interval is at or under the target, MISS when all of it is over", () => {
        assert.strictEqual(verdict({ value: 1.02, low: 1.0, high: 1.04 }, 1.05), "PASS");
        assert.strictEqual(verdict({ value: 1.04, low: 1.01, high: 1.07 }, 1.05), "UNRESOLVED");
        assert.strictEqual(verdict({ value: 1.2, low: 1.1, high: 1.3 }, 1.05), "MISS");
    });

    it("start offsets: one in each n-th of the period, in random order", () => {
        const offsets = spreadOffsets(10, 0.5, seededRandom(7));
        assert.deepStrictEqual(
            [...offsets].map((o) => Math.floor(o / 0.05)).sort((a, b) => a - b),
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        );
        assert.notDeepStrictEqual(
            offsets,
            [...offsets].sort((a, b) => a - b),
        );
        assert.strictEqual(quantile([1, 2, 3, 4], 0.5), 2.5);
    });
});
