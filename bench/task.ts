/**
 * npm run bench:task — a real Concourse (web and one worker with two datasets, in LXD instances
 * of a private LXD daemon, made by the stack) measured side by side:
 *  1. the same small task through `fly execute`, in N rounds of two runs: one with the runc
 *     wrapper in the place of Concourse's runc, one with the real runc put back (same worker,
 *     same image, already cached), in alternating order. Each round starts at its own point of
 *     the web's 500 ms tick (Concourse sends build events to watchers on that tick: back-to-back
 *     runs lock onto it, and then a few milliseconds decide whether a run waits a whole tick).
 *     Each run gives three times:
 *       - on the worker: the task's container, from its shim's start to the task's exit (the
 *         worker's journal, to the microsecond). Every runtime call of the task, and so all of
 *         the wrapper's work, falls inside; the web's waits do not;
 *       - on the web: the build from its start to its end (its row in the web's database);
 *       - fly execute's wall time, as a user sees it.
 *     A run whose build also checked the image (Concourse does once a minute) has a second
 *     container; such rounds are counted and left out of every figure.
 *     Each figure: the means, wrapped / bare, and its 95% interval from the rounds resampled.
 *     The web's own waits spread its two figures over hundreds of milliseconds, far more than
 *     the wrapper's few, so the target is taken where the wrapper works: a task through
 *     Concourse, wrapped / bare = 1 + (what the wrapper adds to the worker's figure) / (the bare
 *     task's wall time), with its interval. fly's own ratio is printed beside it.
 *  2. the time from the start of `up` to the worker listed as running (the registration
 *     check's end, with the task check off), beside the whole `up`;
 *  3. a no-op `up` of the web-plus-worker stack against its `preview` (interleaved).
 * It prints the figures and PASS/MISS; it asserts nothing (tests do that).
 *   BENCH_TASK_ROUNDS=N (default 80); BENCH_TASK_RAW=FILE also writes every run's figures there (JSON)
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { Fly, flyFor, suppliedRelease } from "../test/support/concourse";
import { datasetSourceDir, ensureEngine, makeProject, makeStack, tempDir, TestLxd } from "../test/support/engine";
import { Estimate, mean, median, pairedBootstrap, pairedRatio, seededRandom, spreadOffsets, verdict } from "./stats";
import { pairedFigures, Run, Side } from "./task-rounds";
import { parseWorkerLog, taskOnWorker, WORKER_LOG_LINES } from "./worker-log";

const ROUNDS = Number(process.env.BENCH_TASK_ROUNDS ?? 80);
const TARGET = 1.05;
/** Concourse 8.2.5 sends build events to their watchers every 500 ms (atc/db/notifications_bus.go). */
const EVENT_TICK_SECONDS = 0.5;
const PORTS = { web: 2490, tsa: 2491, webSsh: 2492, worker: 2493 };
const WEB = "bench-task-ci";
const WORKER = "bench-task-w";
const CONCOURSE_RUNC = "/usr/local/concourse/bin/runc";
const REAL_RUNC = "/var/lib/gpu-workers/concourse-runc.real";
const WRAPPER = "/usr/local/lib/gpu-workers/runc-wrapper";

function now(): number {
    return Date.now() / 1000;
}

function seconds(start: bigint): number {
    return Number(process.hrtime.bigint() - start) / 1e9;
}

/** One pulumi command as a user runs it, timed. */
function timedPulumi(projectDir: string, env: Record<string, string>, args: string[]): number {
    const start = process.hrtime.bigint();
    const r = spawnSync("pulumi", [...args, "--non-interactive"], { cwd: projectDir, env: { ...process.env, ...env }, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} failed:\n${r.stdout}\n${r.stderr}`);
    return seconds(start);
}

/**
 * The first `up`, timed: the whole of it, and until the registration check saw the worker
 * running in the web (its outputs event: the check returns as soon as the web lists it).
 */
async function firstUp(stack: Stack): Promise<{ up: number; running: number }> {
    const start = process.hrtime.bigint();
    let running = NaN;
    await stack.up({
        onEvent: (event) => {
            const urn = event.resOutputsEvent?.metadata.urn ?? "";
            if (urn.endsWith("::w-concourse-registration")) running = seconds(start);
        },
    });
    return { up: seconds(start), running };
}

/** Each build's start and end on the web, from its database (to the microsecond). */
function buildTimes(lxd: TestLxd, builds: number[]): Map<number, number> {
    const query = `select id, extract(epoch from end_time - start_time) from builds where id in (${builds.join(",")})`;
    const out = lxd.exec(WEB, `cd / && su postgres -c "psql -d atc -Atc '${query}'"`);
    return new Map(
        out
            .trim()
            .split("\n")
            .map((row) => row.split("|"))
            .map(([id, s]) => [Number(id), Number(s)]),
    );
}

function format(seconds: number): string {
    return seconds < 1 ? `${(seconds * 1000).toFixed(1)} ms` : `${seconds.toFixed(3)} s`;
}

function line(what: string, wrapped: number[], bare: number[], estimate: Estimate): string {
    const spread = (xs: number[]) => `median ${format(median(xs))}`;
    return (
        `  ${what}: wrapped ${format(mean(wrapped))} (${spread(wrapped)}), bare ${format(mean(bare))} (${spread(bare)}); ` +
        `wrapped / bare ${estimate.value.toFixed(3)} (95%: ${estimate.low.toFixed(3)} to ${estimate.high.toFixed(3)})`
    );
}

async function main(): Promise<void> {
    // The release first: without one there is nothing to measure, and nothing is made or started.
    const supplied = suppliedRelease();
    if (!supplied)
        throw new Error(
            "bench:task runs a real Concourse: set GPU_WORKERS_CONCOURSE_RELEASE to the official concourse-<version>-linux-amd64.tgz (or the folder it unpacks to)",
        );
    const root = tempDir("gw-bt-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    let fly: Fly | undefined;
    const datasets = datasetSourceDir("gw-bt-");
    try {
        const env = ensureEngine(path.join(root, "state"));
        lxd.start();
        const project = makeProject(path.join(root, "project"));
        // Two datasets, as on a real worker: the wrapped side pays for its mounts too.
        for (const folder of ["models", "scratch_rw"]) fs.mkdirSync(path.join(datasets, folder), { recursive: true });
        fs.chmodSync(path.join(datasets, "scratch_rw"), 0o1777);
        const stack = await makeStack(project, "bench-task", env, {
            // The registration check's end marks the worker running: no task check after it.
            defaults: { concourse: { version: supplied.version, binary: { path: supplied.tarball }, networkMtu: 1500, tags: ["bench"], taskCheck: false } },
            web: {
                name: "bench-ci",
                transport: {
                    lxd: {
                        server: { socket: lxd.socket },
                        instance: WEB,
                        image: "gpu-workers/debian-12",
                        sshPort: PORTS.webSsh,
                        publish: { web: PORTS.web, tsa: PORTS.tsa },
                    },
                },
            },
            hosts: [
                {
                    name: "w",
                    transport: {
                        lxd: {
                            server: { socket: lxd.socket },
                            instance: WORKER,
                            image: "gpu-workers/debian-12",
                            sshPort: PORTS.worker,
                            shiftWritable: false,
                            datasetSource: datasets,
                            datasetFolders: ["models", "scratch_rw"],
                        },
                    },
                    vendor: "none",
                },
            ],
        });
        const first = await firstUp(stack);
        const web = (await stack.outputs()).web.value as { url: string; username: string; password: string };
        const logged = await flyFor("gw-bench", web);
        fly = logged;

        const taskFile = path.join(root, "task.yml");
        fs.writeFileSync(
            taskFile,
            JSON.stringify({ platform: "linux", image_resource: { type: "mock", source: { mirror_self: true } }, run: { path: "true" } }),
        );
        const runTask = (): { start: number; end: number; build: number } => {
            const start = now();
            const r = logged.run(["execute", "-c", taskFile, "--tag", "bench"], 300_000);
            const end = now();
            if (r.status !== 0) throw new Error(`fly execute failed:\n${r.stdout}\n${r.stderr}`);
            const build = /executing build (\d+)/.exec(r.stdout + r.stderr);
            if (!build) throw new Error(`fly execute named no build:\n${r.stdout}\n${r.stderr}`);
            return { start, end, build: Number(build[1]) };
        };
        // A symlink swapped in by one rename: copying megabytes before each run would leave dirty
        // pages that the next fsync on that disk (PostgreSQL's, containerd's) has to write first.
        const use = (binary: string) => lxd.exec(WORKER, `ln -sfn ${binary} ${CONCOURSE_RUNC}.bench && mv -fT ${CONCOURSE_RUNC}.bench ${CONCOURSE_RUNC}`);
        runTask(); // the image's first fetch (and the wrapper's first look at the runtime) is no part of either side
        const seed = Date.now() >>> 0;
        const offsets = spreadOffsets(ROUNDS, EVENT_TICK_SECONDS, seededRandom(seed));
        const runs: Run[] = [];
        for (let round = 0; round < ROUNDS; round++) {
            for (const side of (round % 2 === 0 ? ["wrapped", "bare"] : ["bare", "wrapped"]) as Side[]) {
                use(side === "wrapped" ? WRAPPER : REAL_RUNC);
                await new Promise((resolve) => setTimeout(resolve, offsets[round] * 1000));
                runs.push({ side, round, ...runTask() });
            }
        }
        // The wrapper as the stack placed it (a file, not a link), for the no-op up and the destroy.
        lxd.exec(WORKER, `cp ${WRAPPER} ${CONCOURSE_RUNC}.bench && mv -fT ${CONCOURSE_RUNC}.bench ${CONCOURSE_RUNC}`);
        const log = lxd.exec(WORKER, `journalctl -u concourse-worker -o cat --since @${Math.floor(runs[0].start) - 1} | grep -E '${WORKER_LOG_LINES}' || true`);
        const events = parseWorkerLog(log);
        const onWeb = buildTimes(
            lxd,
            runs.map((r) => r.build),
        );

        const noop = { up: [] as number[], preview: [] as number[] };
        for (let round = 0; round < 3; round++) {
            for (const side of round % 2 === 0 ? (["up", "preview"] as const) : (["preview", "up"] as const)) {
                noop[side].push(
                    timedPulumi(
                        project,
                        env,
                        side === "up" ? ["up", "--yes", "--skip-preview", "--stack", "bench-task"] : ["preview", "--stack", "bench-task"],
                    ),
                );
            }
        }
        await stack.destroy();

        const { figures, leftOut } = pairedFigures(runs, events, onWeb);
        if (process.env.BENCH_TASK_RAW) {
            const raw = runs.map((r) => ({ ...r, offset: offsets[r.round], worker: taskOnWorker(events, r.start, r.end), web: onWeb.get(r.build) }));
            fs.writeFileSync(process.env.BENCH_TASK_RAW, JSON.stringify(raw, null, 1));
        }
        const kept = figures.worker.wrapped.length;
        const estimate = {
            worker: pairedRatio(figures.worker.wrapped, figures.worker.bare),
            web: pairedRatio(figures.web.wrapped, figures.web.bare),
            fly: pairedRatio(figures.fly.wrapped, figures.fly.bare),
        };
        // What the wrapper adds, measured where it works, against the whole task as a user waits for it.
        const rounds = figures.worker.wrapped.map((w, i) => ({ added: w - figures.worker.bare[i], wall: figures.fly.bare[i] }));
        const added = pairedBootstrap(rounds, (sample) => mean(sample.map((r) => r.added)));
        const throughConcourse = pairedBootstrap(rounds, (sample) => 1 + mean(sample.map((r) => r.added)) / mean(sample.map((r) => r.wall)));
        const noopRatio = median(noop.up) / median(noop.preview);
        const v = verdict(throughConcourse, TARGET);
        const interval = (e: Estimate, digits: number, unit = 1) =>
            `${(e.value * unit).toFixed(digits)} (95%: ${(e.low * unit).toFixed(digits)} to ${(e.high * unit).toFixed(digits)})`;
        console.log(
            `a task through Concourse: ${ROUNDS} rounds of one wrapped and one bare run, order alternating, each round from its own point of the web's ${EVENT_TICK_SECONDS * 1000} ms event tick (seed ${seed}); ${kept} rounds kept`,
        );
        for (const why of leftOut) console.log(`  left out: ${why}`);
        console.log(
            line("on the worker, the task's container from its shim's start to the task's exit", figures.worker.wrapped, figures.worker.bare, estimate.worker),
        );
        console.log(`    the wrapper adds ${interval(added, 1, 1000)} ms there`);
        console.log(line("on the web, the build from start to end", figures.web.wrapped, figures.web.bare, estimate.web));
        console.log(line("fly execute, wall time", figures.fly.wrapped, figures.fly.bare, estimate.fly));
        console.log(
            "    (the web's own waits, build events sent on a 500 ms tick and volumes polled with back-off, spread these two over hundreds of milliseconds)",
        );
        console.log(
            `a task through Concourse, wrapped / bare = 1 + what the wrapper adds on the worker / the bare task's wall time: ${interval(throughConcourse, 3)} (target <= ${TARGET}) ${v}${v === "UNRESOLVED" ? ": the interval straddles the target, run more rounds" : ""}`,
        );
        console.log(
            `first up of web + worker: worker running after ${first.running.toFixed(1)} s; the up (registration checked) took ${first.up.toFixed(1)} s`,
        );
        console.log(
            `no-op up ${median(noop.up).toFixed(2)} s / preview ${median(noop.preview).toFixed(2)} s = ${noopRatio.toFixed(2)} (target <= 1.3) ${noopRatio <= 1.3 ? "PASS" : "MISS"}`,
        );
    } finally {
        lxd.stop();
        fly?.cleanup();
        fs.rmSync(root, { recursive: true, force: true });
        fs.rmSync(datasets, { recursive: true, force: true });
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
