/**
 * What the runc wrapper costs on a container's lifecycle: create, start, wait, delete, run
 * directly against runc (no containerd: its own time would only dilute the ratio). Like
 * containerd's shim, it makes three runtime calls (create, start, delete) and waits by
 * watching the container's process rather than by asking the runtime.
 *
 * Three sides, interleaved in one loop so machine noise hits all of them alike:
 *   bare          real runc, bundle without dataset mounts (the plain bundle)
 *   bare+mounts   real runc, bundle that already holds the very mounts and env the wrapper
 *                 adds (the edited config.json of a wrapper run): same work for runc
 *   wrapper       the wrapper in front of runc for all four calls, on the plain bundle
 *   wrapper+alloc the same with GPU allocation on (exclusive, 4 units, issue 41): each create
 *                 holds a unit under the holds' lock (sweeping the stale ones) and delete frees it
 * The target ratio is wrapper / bare: everything a container pays for the wrapper, runc
 * mounting the datasets included. The datasets are N read-only folders and 4 writable ones
 * (none at 0): the root is one mount and each writable folder one more, whatever N is.
 * wrapper / bare+mounts is the wrapper's own part; wrapper+alloc / bare minus wrapper / bare is
 * what allocation adds (target: at most 0.03). Every bundle is a task's: it mounts an empty folder
 * at /tmp/build/<8 hex>, as Concourse does, so that the allocating wrapper holds a unit. A second table shows where the wrapper's
 * time goes: what it adds to each runtime call (create edits the bundle; start and delete
 * only pass through).
 *
 * A third table is the wrapper's own CPU time per call, with no container at all (the
 * number the cost claims are about): `create` with /bin/true as the real runtime, minus
 * /bin/true alone, and a pass-through call (`state` of no container) minus runc's own.
 *
 * Bundles live on a tmpfs (/dev/shm), like containerd's state folder under /run. Prints the
 * medians and PASS/MISS per target; always exits 0 (benchmarks report, tests assert).
 *   node dist/bench/wrapper.js [--iterations N]   (default 100 lifecycles per side and folder count)
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderWrapperConfig } from "../components/program";
import {
    buildTestWrapper,
    ensureWrapperTools,
    makeBundle,
    makeBusyboxRootfs,
    nvidiaAllocation,
    withSettings,
    writeSettings,
} from "../test/realtool/wrapper-support";

const FOLDER_COUNTS = [0, 50, 200, 2000, 5000];
/** Writable folders among them: a mount each. */
const WRITABLE = 4;
/** wrapper / bare: the target is 1.15 at 5000 folders; the mounts do not depend on the number, so it holds for each. */
const TARGET = 1.15;
/** What allocation may add to wrapper / bare (issue 41). */
const ALLOC_TARGET = 0.03;
/** The task folder Concourse mounts in a task's container: what makes a container hold units. */
const TASK_DIR = "/tmp/build/1a2b3c4d";
const DEFAULT_ITERATIONS = 100;

type Side = "bare" | "bare+mounts" | "wrapper" | "wrapper+alloc";
type Call = "create" | "start" | "delete";
interface Lifecycle {
    total: number;
    calls: Record<Call, number>;
}

function arg(name: string): number | undefined {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The settings with allocation on, as the plan renders it for 4 GPUs in mode exclusive (the plan then sets no GPU variable itself). */
function allocationSettings(settings: string): string {
    const s = JSON.parse(settings) as { env: Record<string, string>; unsetEnv: string[] };
    const env = Object.fromEntries(Object.entries(s.env).filter(([k]) => !k.startsWith("NVIDIA_")));
    return withSettings(settings, {
        env,
        unsetEnv: [...s.unsetEnv, "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"],
        allocation: nvidiaAllocation(4),
    });
}

function main(): void {
    ensureWrapperTools();
    const iterationsArg = arg("--iterations");
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "gw-bench-"));
    const shm = fs.existsSync("/dev/shm") ? fs.mkdtempSync("/dev/shm/gw-bench-") : fs.mkdtempSync(path.join(work, "bundles-"));
    const runcRoot = path.join(shm, "runc-root");
    const devnull = fs.openSync("/dev/null", "r+");
    try {
        const settingsPath = path.join(work, "runc-wrapper.json");
        const wrapper = buildTestWrapper(work, settingsPath);
        // A variant of its own (settings, state folder) with allocation on.
        const allocWork = path.join(work, "alloc");
        fs.mkdirSync(allocWork);
        const allocSettingsPath = path.join(allocWork, "runc-wrapper.json");
        const allocWrapper = buildTestWrapper(allocWork, allocSettingsPath);
        const runc = spawnSync("sh", ["-c", "command -v runc"], { encoding: "utf8" }).stdout.trim();
        const rootfs = path.join(work, "rootfs");
        makeBusyboxRootfs(rootfs);
        fs.mkdirSync(path.join(rootfs, TASK_DIR), { recursive: true });
        const taskFolder = path.join(work, "task-folder");
        fs.mkdirSync(taskFolder);
        const template = makeBundle(path.join(shm, "template"), rootfs, ["/bin/true"], ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"]);
        const templateSpec = JSON.parse(fs.readFileSync(path.join(template, "config.json"), "utf8")) as { mounts: unknown[] };
        templateSpec.mounts.push({ destination: TASK_DIR, type: "bind", source: taskFolder, options: ["rbind", "rw"] });
        const plainSpec = Buffer.from(JSON.stringify(templateSpec, null, 2));
        // stdio goes to files, never pipes: a created container's init holds them open.
        const errFile = path.join(work, "call.err");
        const call = (bin: string, args: string[]): void => {
            const err = fs.openSync(errFile, "w");
            const r = spawnSync(bin, ["--root", runcRoot, ...args], { stdio: ["ignore", devnull, err], timeout: 60_000 });
            fs.closeSync(err);
            if (r.status !== 0) throw new Error(`${path.basename(bin)} ${args.join(" ")}: ${r.error ?? fs.readFileSync(errFile, "utf8")}`);
        };
        // Waiting the way the shim does: watch the container's process, no runtime call.
        const exited = (pid: number): boolean => {
            try {
                return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
            } catch {
                return true;
            }
        };
        let n = 0;
        const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
        const lifecycle = (bin: string, spec: Buffer): Lifecycle => {
            const id = `gwb${process.pid}-${++n}`;
            const bundle = path.join(shm, id);
            fs.mkdirSync(bundle);
            fs.writeFileSync(path.join(bundle, "config.json"), spec);
            const t0 = process.hrtime.bigint();
            call(bin, ["create", "--bundle", bundle, "--pid-file", path.join(bundle, "init.pid"), id]);
            const create = ms(t0);
            const pid = Number(fs.readFileSync(path.join(bundle, "init.pid"), "utf8"));
            const t1 = process.hrtime.bigint();
            call(bin, ["start", id]);
            const start = ms(t1);
            while (!exited(pid)) {
                /* the container runs /bin/true: a few hundred microseconds */
            }
            const t2 = process.hrtime.bigint();
            call(bin, ["delete", id]);
            const del = ms(t2);
            const total = ms(t0);
            fs.rmSync(bundle, { recursive: true, force: true });
            return { total, calls: { create, start, delete: del } };
        };

        console.log(
            `runc wrapper benchmark: create + start + wait + delete of /bin/true, ${iterationsArg ?? DEFAULT_ITERATIONS} lifecycles per side and folder count, interleaved`,
        );
        console.log(
            `bundles on ${shm} (tmpfs); runc ${spawnSync(runc, ["--version"], { encoding: "utf8" }).stdout.split("\n")[0]}; ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}`,
        );
        const rows: string[][] = [["folders", "writable", "bare ms", "bare+mounts ms", "wrapper ms", "wrapper/bare", "wrapper/bare+mounts", "target"]];
        const allocRows: string[][] = [["folders", "wrapper ms", "wrapper+alloc ms", "wrapper/bare", "wrapper+alloc/bare", "added", "target"]];
        const added: string[][] = [["folders", "create +ms", "start +ms", "delete +ms", "lifecycle +ms"]];
        for (const count of FOLDER_COUNTS) {
            const iterations = iterationsArg ?? DEFAULT_ITERATIONS;
            const root = path.join(work, `datasets-${count}`);
            fs.mkdirSync(root);
            const writable = Math.min(count, WRITABLE);
            for (let i = 0; i < count; i++) fs.mkdirSync(path.join(root, i < writable ? `set-${i}_rw` : `set-${i}`));
            const settings = renderWrapperConfig({
                plan: {
                    env: { NVIDIA_VISIBLE_DEVICES: "0", NVIDIA_DRIVER_CAPABILITIES: "compute,utility" },
                    unsetEnv: ["AMD_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"],
                    deviceNodes: [],
                },
                datasets: { root, writableSuffixes: ["_writable", "_rw"] },
                realRuntime: runc,
                logPath: path.join(work, "wrapper.log"),
            });
            writeSettings(settingsPath, settings);
            writeSettings(allocSettingsPath, allocationSettings(settings));
            // The spec exactly as the wrapper leaves it: bare runc then does the same mounts.
            const probe = path.join(shm, "probe");
            fs.mkdirSync(probe);
            fs.writeFileSync(path.join(probe, "config.json"), plainSpec);
            call(wrapper, ["create", "--bundle", probe, `gwb-probe-${count}`]);
            call(runc, ["delete", "--force", `gwb-probe-${count}`]);
            const editedSpec = fs.readFileSync(path.join(probe, "config.json"));
            fs.rmSync(probe, { recursive: true, force: true });
            const mounts = (JSON.parse(editedSpec.toString()) as { mounts: { destination: string }[] }).mounts.filter((m) =>
                m.destination.startsWith(root),
            ).length;
            if (mounts !== 1 + writable)
                throw new Error(`expected ${1 + writable} dataset mounts in the edited spec (the root and the writable folders), got ${mounts}`);

            const times: Record<Side, Lifecycle[]> = { bare: [], "bare+mounts": [], wrapper: [], "wrapper+alloc": [] };
            const sides: [Side, string, Buffer][] = [
                ["bare", runc, plainSpec],
                ["bare+mounts", runc, editedSpec],
                ["wrapper", wrapper, plainSpec],
                ["wrapper+alloc", allocWrapper, plainSpec],
            ];
            for (let i = 0; i < 3; i++) for (const [, bin, spec] of sides) lifecycle(bin, spec); // warm up
            for (let i = 0; i < iterations; i++) {
                // Rotate the order each round so no side always runs first.
                for (let k = 0; k < sides.length; k++) {
                    const [side, bin, spec] = sides[(i + k) % sides.length];
                    times[side].push(lifecycle(bin, spec));
                }
            }
            const total = (side: Side) => median(times[side].map((t) => t.total));
            const perCall = (side: Side, c: Call) => median(times[side].map((t) => t.calls[c]));
            const bare = total("bare");
            const bareMounts = total("bare+mounts");
            const wrapped = total("wrapper");
            const ratio = wrapped / bare;
            const allocRatio = total("wrapper+alloc") / bare;
            allocRows.push([
                String(count),
                wrapped.toFixed(1),
                total("wrapper+alloc").toFixed(1),
                ratio.toFixed(3),
                allocRatio.toFixed(3),
                (allocRatio - ratio).toFixed(3),
                `${allocRatio - ratio <= ALLOC_TARGET ? "PASS" : "MISS"} (<= ${ALLOC_TARGET})`,
            ]);
            rows.push([
                String(count),
                String(writable),
                bare.toFixed(1),
                bareMounts.toFixed(1),
                wrapped.toFixed(1),
                ratio.toFixed(3),
                (wrapped / bareMounts).toFixed(3),
                count === 0 ? "-" : `${ratio <= TARGET ? "PASS" : "MISS"} (<= ${TARGET})`,
            ]);
            added.push([
                String(count),
                ...(["create", "start", "delete"] as Call[]).map((c) => (perCall("wrapper", c) - perCall("bare+mounts", c)).toFixed(1)),
                (wrapped - bareMounts).toFixed(1),
            ]);
        }
        // The wrapper's own CPU per call: loops in one bash, whose `times` gives its children's CPU.
        const CALLS = 200;
        const childCpuPerCall = (loopBody: string): number => {
            const out = spawnSync("bash", ["-c", `for i in $(seq ${CALLS}); do ${loopBody}; done >/dev/null 2>&1; times`], {
                encoding: "utf8",
                timeout: 600_000,
            })
                .stdout.trim()
                .split("\n");
            const secs = (out[1] ?? "").split(" ").map((t) => {
                const m = /^(\d+)m([\d.]+)s$/.exec(t);
                return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
            });
            return ((secs[0] + secs[1]) * 1000) / CALLS;
        };
        const own: string[][] = [["call", "folders", "wrapper's own CPU ms"]];
        const bundle = path.join(shm, "cpu");
        fs.mkdirSync(bundle);
        const plainFile = path.join(shm, "plain.json");
        fs.writeFileSync(plainFile, plainSpec);
        const q = (p: string) => `'${p}'`;
        for (const count of FOLDER_COUNTS) {
            const settings = renderWrapperConfig({
                plan: {
                    env: { NVIDIA_VISIBLE_DEVICES: "0", NVIDIA_DRIVER_CAPABILITIES: "compute,utility" },
                    unsetEnv: ["AMD_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"],
                    deviceNodes: [],
                },
                datasets: { root: path.join(work, `datasets-${count}`), writableSuffixes: ["_writable", "_rw"] },
                realRuntime: "/bin/true",
                logPath: path.join(work, "wrapper.log"),
            });
            writeSettings(settingsPath, settings);
            writeSettings(allocSettingsPath, allocationSettings(settings));
            const reset = `cp ${q(plainFile)} ${q(path.join(bundle, "config.json"))}`;
            const diffs: number[] = [];
            for (let round = 0; round < 3; round++) {
                const wrapped = childCpuPerCall(`${reset}; ${q(wrapper)} create --bundle ${q(bundle)} cpu-${count}`);
                diffs.push(wrapped - childCpuPerCall(`${reset}; /bin/true create --bundle ${q(bundle)} cpu-${count}`));
            }
            own.push(["create", String(count), median(diffs).toFixed(2)]);
            // /bin/true makes no container: each create's hold is stale at the next, which sweeps it.
            const allocDiffs: number[] = [];
            for (let round = 0; round < 3; round++) {
                const wrapped = childCpuPerCall(`${reset}; ${q(allocWrapper)} create --bundle ${q(bundle)} cpu-${count}`);
                allocDiffs.push(wrapped - childCpuPerCall(`${reset}; /bin/true create --bundle ${q(bundle)} cpu-${count}`));
            }
            own.push(["create (allocation)", String(count), median(allocDiffs).toFixed(2)]);
        }
        const passDiffs: number[] = [];
        for (let round = 0; round < 3; round++) {
            const state = `--root ${q(runcRoot)} state no-such-container`;
            passDiffs.push(childCpuPerCall(`${q(wrapper)} ${state}`) - childCpuPerCall(`${q(runc)} ${state}`));
        }
        own.push(["state (passes through)", "any", median(passDiffs).toFixed(2)]);

        const print = (table: string[][]) => {
            const widths = table[0].map((_, c) => Math.max(...table.map((r) => r[c].length)));
            for (const r of table) console.log(r.map((cell, c) => cell.padStart(widths[c])).join("  "));
        };
        print(rows);
        console.log("with GPU allocation on (exclusive, 4 units; each create holds one, each delete frees it):");
        print(allocRows);
        console.log("what the wrapper adds to each call (median wrapper minus median bare+mounts):");
        print(added);
        console.log(`the wrapper's own CPU time per call (${CALLS} calls, median of 3 rounds; no container):`);
        print(own);
    } finally {
        fs.closeSync(devnull);
        fs.rmSync(shm, { recursive: true, force: true });
        fs.rmSync(work, { recursive: true, force: true });
    }
}

main();
