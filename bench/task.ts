/**
 * npm run bench:task — a real Concourse (web and one worker in LXD instances of a private LXD
 * daemon, made by the stack) measured side by side:
 *  1. the same small task through `fly execute`, N times each, interleaved: with the runc wrapper
 *     in Concourse's runc's place, and with the real runc put back (same worker, same image, the
 *     image already cached); task wall time wrapped / bare (target <= 1.05);
 *  2. the time from the start of `up` to the worker listed as running (the registration
 *     check's end, with the task check off), beside the whole `up`;
 *  3. a no-op `up` of the web-plus-worker stack against its `preview` (interleaved).
 * It prints medians, ratios and PASS/MISS; it asserts nothing (tests do that).
 *   BENCH_TASK_ROUNDS=N (default 10)
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { concourseRelease, Fly } from "../test/support/concourse";
import { ensureEngine, makeProject, makeStack, tempDir, TestLxd } from "../test/support/engine";

const ROUNDS = Number(process.env.BENCH_TASK_ROUNDS ?? 10);
const PORTS = { web: 2490, tsa: 2491, webSsh: 2492, worker: 2493 };
const WORKER = "bench-task-w";
const CONCOURSE_RUNC = "/usr/local/concourse/bin/runc";
const REAL_RUNC = "/var/lib/gpu-workers/concourse-runc.real";
const WRAPPER = "/usr/local/lib/gpu-workers/runc-wrapper";

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
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

async function main(): Promise<void> {
    const root = tempDir("gw-bt-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    const fly = new Fly("gw-bench");
    try {
        const env = ensureEngine(path.join(root, "state"));
        lxd.start();
        const project = makeProject(path.join(root, "project"));
        const release = concourseRelease();
        const stack = await makeStack(project, "bench-task", env, {
            // The registration check's end marks the worker running: no task check after it.
            defaults: { concourse: { version: "8.2.5", binary: { path: release }, networkMtu: 1500, tags: ["bench"], taskCheck: false } },
            web: { name: "bench-ci", transport: { lxd: { server: { socket: lxd.socket }, instance: "bench-task-ci", image: "gpu-workers/debian-12", sshPort: PORTS.webSsh, publish: { web: PORTS.web, tsa: PORTS.tsa } } } },
            hosts: [{ name: "w", transport: { lxd: { server: { socket: lxd.socket }, instance: WORKER, image: "gpu-workers/debian-12", sshPort: PORTS.worker, shiftWritable: false } }, vendor: "none" }],
        });
        const first = await firstUp(stack);
        const web = (await stack.outputs()).web.value as { url: string; username: string; password: string };
        fly.login(web.url, web.username, web.password);

        const task = path.join(root, "task.yml");
        fs.writeFileSync(task, JSON.stringify({ platform: "linux", image_resource: { type: "mock", source: { mirror_self: true } }, run: { path: "true" } }));
        const runTask = () => {
            const start = process.hrtime.bigint();
            const r = fly.run(["execute", "-c", task, "--tag", "bench"], 300_000);
            if (r.status !== 0) throw new Error(`fly execute failed:\n${r.stdout}\n${r.stderr}`);
            return seconds(start);
        };
        const use = (binary: string) => lxd.exec(WORKER, `cp ${binary} ${CONCOURSE_RUNC}.bench && mv -f ${CONCOURSE_RUNC}.bench ${CONCOURSE_RUNC}`);
        runTask(); // the image's first fetch is no part of either side
        const times = { wrapped: [] as number[], bare: [] as number[] };
        for (let round = 0; round < ROUNDS; round++) {
            for (const side of (round % 2 === 0 ? ["wrapped", "bare"] : ["bare", "wrapped"]) as ("wrapped" | "bare")[]) {
                use(side === "wrapped" ? WRAPPER : REAL_RUNC);
                times[side].push(runTask());
            }
        }
        use(WRAPPER);

        const noop = { up: [] as number[], preview: [] as number[] };
        for (let round = 0; round < 3; round++) {
            for (const side of (round % 2 === 0 ? ["up", "preview"] : ["preview", "up"]) as ("up" | "preview")[]) {
                noop[side].push(timedPulumi(project, env, side === "up" ? ["up", "--yes", "--skip-preview", "--stack", "bench-task"] : ["preview", "--stack", "bench-task"]));
            }
        }
        await stack.destroy();

        const ratio = median(times.wrapped) / median(times.bare);
        const noopRatio = median(noop.up) / median(noop.preview);
        console.log(`task through fly execute (${ROUNDS} each, interleaved): wrapped ${median(times.wrapped).toFixed(2)} s, bare runc ${median(times.bare).toFixed(2)} s`);
        console.log(`  wrapped / bare = ${ratio.toFixed(3)} (target <= 1.05) ${ratio <= 1.05 ? "PASS" : "MISS"}`);
        console.log(`first up of web + worker: worker running after ${first.running.toFixed(1)} s; the up (registration checked) took ${first.up.toFixed(1)} s`);
        console.log(`no-op up ${median(noop.up).toFixed(2)} s / preview ${median(noop.preview).toFixed(2)} s = ${noopRatio.toFixed(2)} (target <= 1.3) ${noopRatio <= 1.3 ? "PASS" : "MISS"}`);
    } finally {
        lxd.stop();
        fly.cleanup();
        fs.rmSync(root, { recursive: true, force: true });
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
