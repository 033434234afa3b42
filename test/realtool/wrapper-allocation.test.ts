/**
 * GPUs handed out per task (issue 41) by the runc wrapper, with real runc: a task's container
 * (a mount at /tmp/build/<8 hex>) holds the units it asks with GPU_WORKERS_GPUS, exclusively or
 * up to `replicas` at once, waits for free ones up to waitSeconds, and gets only their variables;
 * a resource container holds none. Holds whose container and creator are both gone (a runtime
 * killed mid-create) are taken back; delete frees them. Each container writes its env and the
 * host's uptime at start and end into its task folder, and overlap is measured from those.
 */
import * as assert from "assert";
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import {
    buildTestWrapper,
    ensureWrapperTools,
    makeBundle,
    makeBusyboxRootfs,
    nvidiaAllocation,
    sh,
    tempDir,
    withSettings,
    writeSettings,
} from "./wrapper-support";

const TASK_DIR = "/tmp/build/1a2b3c4d";

interface Ran {
    id: string;
    status: number | null;
    signal: NodeJS.Signals | null;
    output: string;
    ms: number;
}

interface Interval {
    id: string;
    units: string[];
    start: number;
    end: number;
}

describe("runc wrapper: GPU units held per task (real runc)", function () {
    this.timeout(600_000);
    let dir: string;
    let wrapper: string;
    let rootfs: string;
    let settingsPath: string;
    let base: string;
    const runc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const runcRoot = () => path.join(dir, "runc-root");
    const holds = () => path.join(dir, "run", "gpu-holds");
    let ids: string[] = [];

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-alloc-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        for (const d of [TASK_DIR, "/tmp/build/get", "/out"]) fs.mkdirSync(path.join(rootfs, d), { recursive: true });
        fs.mkdirSync(path.join(dir, "datasets"));
        // As the plan renders it with allocation on: no GPU variable set, every one unset.
        base = renderWrapperConfig({
            plan: { env: {}, unsetEnv: ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"], deviceNodes: [] },
            datasets: { root: path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
            realRuntime: runc(),
            logPath: path.join(dir, "wrapper.log"),
            gpuJobs: { gpus: [0, 1, 2, 3] },
        });
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    afterEach(() => {
        for (const id of ids) spawnSync(wrapper, ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" });
        ids = [];
        fs.rmSync(holds(), { recursive: true, force: true });
        fs.rmSync(path.join(dir, "run", "gpu-jobs"), { recursive: true, force: true });
    });

    function configure(allocation: Record<string, unknown>, extra: Record<string, unknown> = {}): void {
        const { units = 4, ...rest } = allocation as { units?: number };
        writeSettings(settingsPath, withSettings(base, { ...extra, allocation: nvidiaAllocation(units, rest) }));
    }

    const out = (id: string) => path.join(dir, "out", id);

    /** A bundle whose process writes its env and the host's uptime at start and end into the mount at `at`. */
    function bundle(id: string, opts: { at?: string; env?: string[]; sleep?: number; then?: string } = {}): string {
        const at = opts.at ?? TASK_DIR;
        fs.mkdirSync(out(id), { recursive: true });
        const write = at;
        const b = makeBundle(
            path.join(dir, "bundles", id),
            rootfs,
            [
                "sh",
                "-c",
                `cut -d' ' -f1 /proc/uptime > ${write}/start; env > ${write}/env; ${opts.then ?? ""} sleep ${opts.sleep ?? 0}; cut -d' ' -f1 /proc/uptime > ${write}/end`,
            ],
            ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all", ...(opts.env ?? [])],
        );
        const specPath = path.join(b, "config.json");
        const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
        spec.mounts.push({ destination: at, type: "bind", source: out(id), options: ["rbind", "rw"] });
        fs.writeFileSync(specPath, JSON.stringify(spec, null, 2));
        ids.push(id);
        return b;
    }

    /** The wrapper, asynchronously; output into a file (a created container's init holds a pipe open). */
    function wrapped(args: string[]): { child: ChildProcess; done: Promise<Ran> } {
        const id = args[args.length - 1];
        const file = path.join(dir, `${id}.${args[0]}.out`);
        const fd = fs.openSync(file, "w");
        const t0 = Date.now();
        const child = spawn(wrapper, ["--root", runcRoot(), ...args], { stdio: ["ignore", fd, fd] });
        fs.closeSync(fd);
        const done = new Promise<Ran>((resolve) =>
            child.on("exit", (status, signal) => resolve({ id, status, signal, output: fs.readFileSync(file, "utf8"), ms: Date.now() - t0 })),
        );
        return { child, done };
    }

    function wrappedSync(args: string[]): Ran {
        const id = args[args.length - 1];
        const file = path.join(dir, `${id}.${args[0]}.out`);
        const fd = fs.openSync(file, "w");
        const t0 = Date.now();
        const r = spawnSync(wrapper, ["--root", runcRoot(), ...args], { stdio: ["ignore", fd, fd], timeout: 300_000 });
        fs.closeSync(fd);
        return { id, status: r.status, signal: r.signal, output: fs.readFileSync(file, "utf8"), ms: Date.now() - t0 };
    }

    const ok = (r: Ran) => assert.strictEqual(r.status, 0, `${r.id}: ${r.output}`);

    /** Holds every unit with created (never started) containers: runc knows them, their creators are gone. */
    function holdAll(prefix: string, n = 4): string[] {
        const holders = Array.from({ length: n }, (_, i) => `${prefix}-hold${i}`);
        for (const id of holders) ok(wrappedSync(["create", "--bundle", bundle(id), id]));
        return holders;
    }

    function envOf(id: string): Map<string, string> {
        const lines = fs
            .readFileSync(path.join(out(id), "env"), "utf8")
            .trimEnd()
            .split("\n");
        return new Map(lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    }

    /** What a finished container saw: its units (NVIDIA_VISIBLE_DEVICES) and when it ran (host uptime). */
    function interval(id: string): Interval {
        const num = (f: string) => Number(fs.readFileSync(path.join(out(id), f), "utf8").trim());
        const visible = envOf(id).get("NVIDIA_VISIBLE_DEVICES");
        assert.ok(visible, `${id} holds units`);
        return { id, units: visible.split(","), start: num("start"), end: num("end") };
    }

    /** The most containers on one unit at once (an end at the same tick as a start counts as before it). */
    function mostAtOnce(runs: Interval[]): Map<string, number> {
        const most = new Map<string, number>();
        const units = new Set(runs.flatMap((r) => r.units));
        for (const unit of units) {
            const events = runs
                .filter((r) => r.units.includes(unit))
                .flatMap((r) => [
                    [r.start, 1],
                    [r.end, -1],
                ])
                .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
            let now = 0;
            let peak = 0;
            for (const [, d] of events) peak = Math.max(peak, (now += d));
            most.set(unit, peak);
        }
        return most;
    }

    async function runAtOnce(prefix: string, n: number, sleep: number, env: string[] = []): Promise<Interval[]> {
        const runs = Array.from({ length: n }, (_, i) => {
            const id = `${prefix}${i}`;
            return wrapped(["run", "--bundle", bundle(id, { env, sleep }), id]).done;
        });
        for (const r of await Promise.all(runs)) ok(r);
        return Array.from({ length: n }, (_, i) => interval(`${prefix}${i}`));
    }

    it("exclusive over 4 units: five containers at once, each asking 1, never share a unit; the fifth waits until one ends", async () => {
        configure({});
        const runs = await runAtOnce("ex", 5, 2, ["GPU_WORKERS_GPUS=1"]);
        for (const r of runs) assert.strictEqual(r.units.length, 1, `${r.id}: one unit`);
        assert.deepStrictEqual([...mostAtOnce(runs).values()].sort(), [1, 1, 1, 1], "each unit held by one at a time, all four used");
        const byStart = [...runs].sort((a, b) => a.start - b.start);
        const last = byStart[4];
        assert.ok(
            byStart.slice(0, 4).some((r) => r.end <= last.start),
            `the fifth started after one ended: ${JSON.stringify(runs)}`,
        );
        assert.ok(Math.max(...byStart.slice(0, 4).map((r) => r.start)) < Math.min(...byStart.slice(0, 4).map((r) => r.end)), "the first four ran together");
        for (const r of runs) assert.strictEqual(envOf(r.id).get("NVIDIA_DRIVER_CAPABILITIES"), "compute,utility", "a holder gets holderEnv");
    });

    it("timeSlice, replicas 2, over 2 units: at most two at once on one unit, both shared, the fifth waits", async () => {
        configure({ mode: "timeSlice", replicas: 2, units: 2 });
        const runs = await runAtOnce("ts", 5, 2, ["GPU_WORKERS_GPUS=1"]);
        assert.deepStrictEqual([...mostAtOnce(runs).values()].sort(), [2, 2], `two at once on each unit: ${JSON.stringify(runs)}`);
        const byStart = [...runs].sort((a, b) => a.start - b.start);
        assert.ok(
            byStart.slice(0, 4).some((r) => r.end <= byStart[4].start),
            "the fifth waited for a slot",
        );
    });

    it("an ask above the capacity fails at once naming the ask and the capacity; not a number names the ask", () => {
        configure({});
        const five = wrappedSync(["create", "--bundle", bundle("ask5", { env: ["GPU_WORKERS_GPUS=5"] }), "ask5"]);
        assert.notStrictEqual(five.status, 0);
        assert.match(five.output, /container "ask5": GPU_WORKERS_GPUS=5 asks more GPUs than this worker has \(4\)/);
        const word = wrappedSync(["create", "--bundle", bundle("asktwo", { env: ["GPU_WORKERS_GPUS=two"] }), "asktwo"]);
        assert.notStrictEqual(word.status, 0);
        assert.match(word.output, /GPU_WORKERS_GPUS="two" is not a whole number of GPUs \(this worker has 4\)/);
        assert.ok(five.ms < 10_000 && word.ms < 10_000, `at once, not after waitSeconds (${five.ms} ms, ${word.ms} ms)`);
        assert.deepStrictEqual(fs.existsSync(holds()) ? fs.readdirSync(holds()) : [], [], "nothing held");
    });

    it("50 containers created at once over 4 exclusive units never overlap on a unit", async () => {
        configure({ waitSeconds: 240 });
        const runs = await runAtOnce("fifty", 50, 0.3, ["GPU_WORKERS_GPUS=1"]);
        const most = mostAtOnce(runs);
        assert.deepStrictEqual([...most.keys()].sort(), ["0", "1", "2", "3"]);
        assert.deepStrictEqual([...most.values()], [1, 1, 1, 1], `overlap: ${JSON.stringify(runs)}`);
    });

    it("a runtime killed by SIGKILL mid-create, and a waiting wrapper killed by SIGKILL, leak no unit", async () => {
        configure({ waitSeconds: 2 });
        const holders = holdAll("kill", 3);
        // The "real runtime" dies by SIGKILL in the wrapper's process, after the hold is written.
        const killer = path.join(dir, "killed-runtime");
        fs.writeFileSync(killer, "#!/bin/sh\nkill -9 $$\n", { mode: 0o755 });
        configure({ waitSeconds: 2 }, { realRuntime: killer });
        const killed = wrappedSync(["create", "--bundle", bundle("kill-mid"), "kill-mid"]);
        assert.strictEqual(killed.signal, "SIGKILL", killed.output);
        assert.ok(fs.existsSync(path.join(holds(), "kill-mid")), "the hold was written before the runtime died");
        configure({ waitSeconds: 2 });
        const next = wrappedSync(["create", "--bundle", bundle("kill-next"), "kill-next"]);
        ok(next);
        assert.ok(!fs.existsSync(path.join(holds(), "kill-mid")), "the dead create's hold was swept");
        // Every unit held again: a create that waits, killed while waiting, holds nothing afterwards.
        configure({ waitSeconds: 60 });
        const waiting = wrapped(["create", "--bundle", bundle("kill-wait"), "kill-wait"]);
        await new Promise((r) => setTimeout(r, 800));
        waiting.child.kill("SIGKILL");
        assert.strictEqual((await waiting.done).signal, "SIGKILL");
        assert.deepStrictEqual(fs.readdirSync(holds()).sort(), [...holders, "kill-next"].sort());
        ok(wrappedSync(["delete", "--force", holders[0]]));
        configure({ waitSeconds: 2 });
        ok(wrappedSync(["create", "--bundle", bundle("kill-after"), "kill-after"]));
    });

    it("a hold is kept while its create is under way (creator alive, no runc state yet) and while runc knows the container", async () => {
        configure({ waitSeconds: 1 });
        holdAll("slow", 3);
        // A runtime that takes its time before runc makes the container's state folder.
        const slow = path.join(dir, "slow-runtime");
        fs.writeFileSync(slow, `#!/bin/sh\nsleep 3\nexec ${runc()} "$@"\n`, { mode: 0o755 });
        configure({ waitSeconds: 1 }, { realRuntime: slow });
        const underWay = wrapped(["create", "--bundle", bundle("slow-create"), "slow-create"]);
        for (let i = 0; i < 100 && !fs.existsSync(path.join(holds(), "slow-create")); i++) await new Promise((r) => setTimeout(r, 50));
        configure({ waitSeconds: 1 });
        const during = wrappedSync(["create", "--bundle", bundle("slow-during"), "slow-during"]);
        assert.notStrictEqual(during.status, 0, "a create under way kept its unit");
        assert.match(during.output, /too few free GPU units after waiting 1s .*held by slow-create/);
        ok(await underWay.done);
        const after = wrappedSync(["create", "--bundle", bundle("slow-after"), "slow-after"]);
        assert.notStrictEqual(after.status, 0, "a created container (its creator gone) kept its unit");
        assert.match(after.output, /unit \d: held by slow-create/);
    });

    it("a resource container and an ask of 0 hold nothing and wait for none when every unit is held, and get every GPU variable unset", () => {
        configure({ waitSeconds: 60 });
        holdAll("res");
        const cases: [string, { at?: string; env?: string[] }][] = [
            ["res-get", { at: "/tmp/build/get" }],
            // A check's container: no working folder (its output lands elsewhere).
            ["res-check", { at: "/out" }],
            ["res-zero", { env: ["GPU_WORKERS_GPUS=0"] }],
        ];
        for (const [id, opts] of cases) {
            const r = wrappedSync(["run", "--bundle", bundle(id, opts), id]);
            ok(r);
            assert.ok(r.ms < 20_000, `${id} did not wait (${r.ms} ms)`);
        }
        for (const id of ["res-get", "res-check", "res-zero"]) {
            const env = envOf(id);
            assert.ok(!env.has("NVIDIA_VISIBLE_DEVICES") && !env.has("NVIDIA_DRIVER_CAPABILITIES"), `${id}: ${[...env.keys()].join(" ")}`);
        }
        assert.deepStrictEqual(fs.readdirSync(holds()).sort(), ["res-hold0", "res-hold1", "res-hold2", "res-hold3"]);
    });

    it("a unit of a GPU the health watcher marks unhealthy goes to no new container", () => {
        const health = path.join(dir, "health");
        fs.mkdirSync(health, { recursive: true, mode: 0o755 });
        fs.writeFileSync(
            path.join(health, "gpus.tsv"),
            "0\t0000:01:00.0\t1\t0\t\t\n1\t0000:02:00.0\t0\t1\t79\tXid 79 (fallen off the bus)\n2\t0000:03:00.0\t1\t0\t\t\n3\t0000:04:00.0\t1\t0\t\t\n",
        );
        configure({ waitSeconds: 1, healthFile: path.join(health, "gpus.tsv") });
        const holders = holdAll("sick", 3);
        const units = holders.map((id) => JSON.parse(fs.readFileSync(path.join(dir, "bundles", id, "config.json"), "utf8")) as { process: { env: string[] } });
        const visible = units.map((s) => s.process.env.find((e) => e.startsWith("NVIDIA_VISIBLE_DEVICES="))).sort();
        assert.deepStrictEqual(visible, ["NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_VISIBLE_DEVICES=2", "NVIDIA_VISIBLE_DEVICES=3"]);
        const fourth = wrappedSync(["create", "--bundle", bundle("sick-4"), "sick-4"]);
        assert.notStrictEqual(fourth.status, 0, "unit 1 is out of the pool");
        assert.match(fourth.output, /unit 1: out of the pool \(GPU 1 unhealthy\)/);
    });

    it("a spec may carry the GPU nodes of the units it holds only: another unit's node is refused, and a container holding nothing may carry none", () => {
        configure({});
        const withNode = (id: string, node: string, at?: string): string => {
            const b = bundle(id, { at });
            const specPath = path.join(b, "config.json");
            const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
            // /dev/null's numbers: a stand-in node that runc makes inside the container.
            spec.linux.devices = [{ path: node, type: "c", major: 1, minor: 3, fileMode: 0o666, uid: 0, gid: 0 }];
            fs.writeFileSync(specPath, JSON.stringify(spec, null, 2));
            return b;
        };
        // Every unit free: the first ask gets unit 0 (the least held, then the settings' order).
        ok(wrappedSync(["create", "--bundle", withNode("node-own", "/dev/nvidia0"), "node-own"]));
        assert.match(fs.readFileSync(path.join(holds(), "node-own"), "utf8"), /^units=0$/m);
        const other = wrappedSync(["create", "--bundle", withNode("node-other", "/dev/nvidia0"), "node-other"]);
        assert.notStrictEqual(other.status, 0, "unit 0 is node-own's: node-other holds another");
        assert.match(other.output, /device node \/dev\/nvidia0 in linux.devices \(other-gpu-devices/);
        const resource = wrappedSync(["create", "--bundle", withNode("node-res", "/dev/nvidia2", "/tmp/build/get"), "node-res"]);
        assert.notStrictEqual(resource.status, 0, "a container holding nothing carries no GPU node");
        assert.match(resource.output, /device node \/dev\/nvidia2/);
        assert.deepStrictEqual(fs.readdirSync(holds()), ["node-own"], "the refused creates left no hold");
    });

    it("exec gets the env of the container's hold, and the GPU job records name exactly the held GPU", () => {
        configure({});
        holdAll("exh", 2);
        ok(wrappedSync(["create", "--bundle", bundle("ex-task", { sleep: 30 }), "ex-task"]));
        sh(runc(), ["--root", runcRoot(), "start", "ex-task"]);
        ok(wrappedSync(["create", "--bundle", bundle("ex-res", { at: "/tmp/build/get", sleep: 30 }), "ex-res"]));
        sh(runc(), ["--root", runcRoot(), "start", "ex-res"]);
        const held = fs.readFileSync(path.join(holds(), "ex-task"), "utf8").match(/^units=(\d)$/m)?.[1];
        assert.ok(held, "ex-task holds one unit");
        const execEnv = (id: string, at: string): Map<string, string> => {
            const proc = path.join(dir, `${id}.process.json`);
            fs.writeFileSync(
                proc,
                JSON.stringify({
                    terminal: false,
                    user: { uid: 0, gid: 0 },
                    cwd: "/",
                    args: ["sh", "-c", `env > ${at}/exec-env`],
                    env: ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=all"],
                }),
            );
            ok(wrappedSync(["exec", "--process", proc, id]));
            const lines = fs
                .readFileSync(path.join(out(id), "exec-env"), "utf8")
                .trimEnd()
                .split("\n");
            return new Map(lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
        };
        const task = execEnv("ex-task", TASK_DIR);
        assert.strictEqual(task.get("NVIDIA_VISIBLE_DEVICES"), held, "exec names the held unit, not the process file's all");
        assert.strictEqual(task.get("NVIDIA_DRIVER_CAPABILITIES"), "compute,utility");
        const res = execEnv("ex-res", "/tmp/build/get");
        assert.ok(!res.has("NVIDIA_VISIBLE_DEVICES") && !res.has("NVIDIA_DRIVER_CAPABILITIES"), `a container holding nothing: ${[...res.keys()].join(" ")}`);
        const jobs = path.join(dir, "run", "gpu-jobs");
        const recorded = fs.readdirSync(jobs).filter((g) => /^\d+$/.test(g) && fs.readdirSync(path.join(jobs, g)).includes("ex-task"));
        assert.deepStrictEqual(recorded, [held], "the record names the held GPU only");
        assert.ok(
            !fs.readdirSync(jobs).some((g) => /^\d+$/.test(g) && fs.readdirSync(path.join(jobs, g)).includes("ex-res")),
            "no record for a container holding nothing",
        );
    });

    it("delete frees the units for a waiting create; a delete that fails (the container still runs) frees nothing", async () => {
        configure({ waitSeconds: 1 });
        const holders = holdAll("del", 3);
        ok(wrappedSync(["create", "--bundle", bundle("del-running", { sleep: 30 }), "del-running"]));
        sh(runc(), ["--root", runcRoot(), "start", "del-running"]);
        assert.notStrictEqual(wrappedSync(["delete", "del-running"]).status, 0, "runc refuses to delete a running container");
        const meanwhile = wrappedSync(["create", "--bundle", bundle("del-meanwhile"), "del-meanwhile"]);
        assert.notStrictEqual(meanwhile.status, 0, "the running container kept its unit");
        assert.match(meanwhile.output, /held by del-running/);
        ok(wrappedSync(["delete", "--force", "del-running"]));
        configure({ waitSeconds: 60 });
        holders.push(...holdAll("del-again", 1));
        const freed = fs.readFileSync(path.join(holds(), holders[2]), "utf8").match(/^units=(\d)$/m)?.[1];
        const waiting = wrapped(["create", "--bundle", bundle("del-wait"), "del-wait"]);
        await new Promise((r) => setTimeout(r, 1500));
        assert.strictEqual(waiting.child.exitCode, null, "the create waits while every unit is held");
        ok(wrappedSync(["delete", "--force", holders[2]]));
        const r = await waiting.done;
        ok(r);
        assert.ok(r.ms < 30_000, `the waiting create went on once the unit was free (${r.ms} ms)`);
        assert.match(fs.readFileSync(path.join(holds(), "del-wait"), "utf8"), new RegExp(`^units=${freed}$`, "m"));
        // Its record goes at the next sweep after runc's delete: the waiting create may have run
        // while the delete was under way (then the hold had ended, and counted for no unit).
        configure({ waitSeconds: 1 });
        const sweep = wrappedSync(["create", "--bundle", bundle("del-sweep"), "del-sweep"]);
        assert.notStrictEqual(sweep.status, 0, "every unit is held again");
        assert.doesNotMatch(sweep.output, new RegExp(`held by [^;]*${holders[2]}`), "the deleted container holds nothing");
        assert.ok(!fs.existsSync(path.join(holds(), holders[2])), "the deleted container's hold is gone");
    });

    /** A bundle whose init is `args` alone (as Concourse's, which only waits while its steps run as execs). */
    function bundleWithInit(id: string, args: string[]): string {
        const b = bundle(id);
        const specPath = path.join(b, "config.json");
        const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
        spec.process.args = args;
        fs.writeFileSync(specPath, JSON.stringify(spec, null, 2));
        return b;
    }

    /** `runc exec` through the wrapper of a short process in `id`, as containerd's shim starts a step: a process file. */
    function execShort(id: string): Ran {
        const proc = path.join(dir, `${id}.short.json`);
        fs.writeFileSync(
            proc,
            JSON.stringify({ terminal: false, user: { uid: 0, gid: 0 }, cwd: "/", args: ["sh", "-c", `env > ${TASK_DIR}/exec-env`], env: ["PATH=/bin"] }),
        );
        return wrappedSync(["exec", "--process", proc, id]);
    }

    it("a container whose processes have ended frees its units while runc still knows it; an exec into it takes them back, or is refused while another holds them", () => {
        configure({ units: 1, waitSeconds: 1 });
        // Concourse's way: an init that only waits, the step as an exec; the container stays after the step.
        ok(wrappedSync(["create", "--bundle", bundleWithInit("end-step", ["sleep", "300"]), "end-step"]));
        sh(runc(), ["--root", runcRoot(), "start", "end-step"]);
        const before = wrappedSync(["create", "--bundle", bundle("end-before"), "end-before"]);
        assert.notStrictEqual(before.status, 0, "a started container no exec has reached yet keeps its unit");
        assert.match(before.output, /unit 0: held by end-step/);
        ok(execShort("end-step"));
        assert.strictEqual(
            fs.readFileSync(path.join(out("end-step"), "exec-env"), "utf8").match(/^NVIDIA_VISIBLE_DEVICES=(.*)$/m)?.[1],
            "0",
            "the step got the unit",
        );
        const after = wrappedSync(["create", "--bundle", bundle("end-after"), "end-after"]);
        ok(after);
        assert.match(fs.readFileSync(path.join(holds(), "end-after"), "utf8"), /^units=0$/m, "the step's end freed unit 0");
        const again = execShort("end-step");
        assert.notStrictEqual(again.status, 0, "the container still has unit 0's GPU, now end-after's");
        assert.match(again.output, /container "end-step": its GPU unit 0 went to end-after after its processes had ended/);
        ok(wrappedSync(["delete", "--force", "end-after"]));
        ok(execShort("end-step"));
        // The exec held the unit again while it ran; the init alone is left, so it is free once more.
        ok(wrappedSync(["create", "--bundle", bundle("end-next"), "end-next"]));
        ok(wrappedSync(["delete", "--force", "end-next"]));
        // An init that has exited: runc calls the container stopped, and keeps it until delete.
        ok(wrappedSync(["delete", "--force", "end-step"]));
        ok(wrappedSync(["create", "--bundle", bundleWithInit("end-stopped", ["true"]), "end-stopped"]));
        sh(runc(), ["--root", runcRoot(), "start", "end-stopped"]);
        for (let i = 0; i < 50 && !/"status": "stopped"/.test(sh(runc(), ["--root", runcRoot(), "state", "end-stopped"])); i++) spawnSync("sleep", ["0.1"]);
        ok(wrappedSync(["create", "--bundle", bundle("end-after-stop"), "end-after-stop"]));
        assert.ok(fs.existsSync(path.join(holds(), "end-stopped")), "the stopped container's record stays until its delete");
    });

    it("mps: a holder gets its GPU's daemon's pipe folder and shm (read-write, at /dev/shm) and the variable, nothing of another GPU's; one GPU at most; a GPU whose daemon is down is out of the pool", async () => {
        const mps = path.join(dir, "mps");
        const pipe = (g: number) => path.join(mps, `${g}`, "pipe");
        const shm = (g: number) => path.join(mps, `${g}`, "shm");
        for (const g of [0, 1]) for (const d of [pipe(g), shm(g)]) fs.mkdirSync(d, { recursive: true, mode: 0o1777 });
        // What each GPU's daemon left in its folders: a holder must see its own GPU's only.
        for (const g of [0, 1]) for (const d of [pipe(g), shm(g)]) fs.writeFileSync(path.join(d, `daemon-${g}`), "");
        const allocation = nvidiaAllocation(2, { mode: "mps", replicas: 2, waitSeconds: 0 }) as { units: Record<string, unknown>[] };
        allocation.units.forEach((u, g) => {
            u.env = { CUDA_MPS_PIPE_DIRECTORY: pipe(g) };
            u.mounts = [
                { source: pipe(g), destination: pipe(g) },
                { source: shm(g), destination: "/dev/shm" },
            ];
        });
        writeSettings(settingsPath, withSettings(base, { allocation }));
        // Each writes a file through both folders and says what it sees of the other GPU's.
        const then = (id: string) =>
            `echo ${id} > $CUDA_MPS_PIPE_DIRECTORY/${id}; echo ${id} > /dev/shm/${id}; ls ${mps} > ${TASK_DIR}/seen; ` +
            `ls ${mps}/0/pipe ${mps}/1/pipe /dev/shm 2>/dev/null | grep daemon- > ${TASK_DIR}/daemons;`;
        const runs = await Promise.all(
            ["mps-a", "mps-b"].map((id) => {
                const b = bundle(id, { env: ["GPU_WORKERS_GPUS=1"], then: then(id) });
                return wrapped(["run", "--bundle", b, id]).done;
            }),
        );
        for (const r of runs) ok(r);
        for (const id of ["mps-a", "mps-b"]) {
            const g = Number(envOf(id).get("NVIDIA_VISIBLE_DEVICES"));
            assert.strictEqual(envOf(id).get("CUDA_MPS_PIPE_DIRECTORY"), pipe(g), `${id}: the variable names its GPU's pipe folder`);
            assert.strictEqual(fs.readFileSync(path.join(pipe(g), id), "utf8").trim(), id, `${id}: wrote through its GPU's pipe folder`);
            assert.strictEqual(fs.readFileSync(path.join(shm(g), id), "utf8").trim(), id, `${id}: its /dev/shm is its GPU's shm folder`);
            assert.deepStrictEqual(
                fs
                    .readFileSync(path.join(out(id), "daemons"), "utf8")
                    .trim()
                    .split("\n"),
                [`daemon-${g}`, `daemon-${g}`],
                `${id}: nothing of another GPU's in sight`,
            );
        }
        const two = wrappedSync(["create", "--bundle", bundle("mps-two", { env: ["GPU_WORKERS_GPUS=2"] }), "mps-two"]);
        assert.notStrictEqual(two.status, 0);
        assert.match(two.output, /GPU_WORKERS_GPUS=2: in mode mps a container holds one GPU at most/);
        // GPU 1's daemon stops (its pipe folder goes): its unit is handed to no one.
        fs.rmSync(pipe(1), { recursive: true });
        ok(wrappedSync(["create", "--bundle", bundle("mps-c"), "mps-c"]));
        ok(wrappedSync(["create", "--bundle", bundle("mps-d"), "mps-d"]));
        const third = wrappedSync(["create", "--bundle", bundle("mps-e"), "mps-e"]);
        assert.notStrictEqual(third.status, 0, "GPU 0 holds two, GPU 1 is out of the pool");
        assert.match(
            third.output,
            new RegExp(`unit 1: out of the pool \\(${pipe(1).replace(/[/.]/g, "\\$&")} is not a folder: its GPU's daemon is not running\\)`),
        );
        for (const id of ["mps-c", "mps-d"]) assert.match(fs.readFileSync(path.join(holds(), id), "utf8"), /^units=0$/m);
    });
});
