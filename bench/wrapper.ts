/**
 * What the runc wrapper costs on a container's lifecycle: create, start, wait, delete, run
 * directly against runc (no containerd: its own time would only dilute the ratio). Like
 * containerd's shim, it makes three runtime calls (create, start, delete) and waits by
 * watching the container's process rather than by asking the runtime.
 *
 * Three sides, interleaved in one loop so machine noise hits all of them alike:
 *   bare          real runc, bundle without dataset mounts
 *   bare+mounts   real runc, bundle that already holds the very mounts and env the wrapper
 *                 adds (the edited config.json of a wrapper run): same work for runc
 *   wrapper       the wrapper in front of runc for all four calls, on the plain bundle
 * The target ratio is wrapper / bare+mounts: the only difference is the wrapper itself.
 * wrapper / bare is shown too (it includes runc mounting the datasets).
 *
 * Bundles live on a tmpfs (/dev/shm), like containerd's state folder under /run. Prints the
 * medians and PASS/MISS per target; always exits 0 (benchmarks report, tests assert).
 *   node dist/bench/wrapper.js [--iterations N]
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderWrapperConfig } from "../components/lib/render/runc-wrapper";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, writeSettings } from "../test/realtool/wrapper-support";

const FOLDER_COUNTS = [0, 10, 50, 200];
const TARGETS: Record<number, number> = { 50: 1.15, 200: 1.2 };

type Side = "bare" | "bare+mounts" | "wrapper";

function arg(name: string, fallback: number): number {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function main(): void {
    ensureWrapperTools();
    const iterations = arg("--iterations", 100);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "gw-bench-"));
    const shm = fs.existsSync("/dev/shm") ? fs.mkdtempSync("/dev/shm/gw-bench-") : fs.mkdtempSync(path.join(work, "bundles-"));
    const runcRoot = path.join(shm, "runc-root");
    const devnull = fs.openSync("/dev/null", "r+");
    try {
        const settingsPath = path.join(work, "runc-wrapper.json");
        const wrapper = buildTestWrapper(work, settingsPath);
        const runc = spawnSync("sh", ["-c", "command -v runc"], { encoding: "utf8" }).stdout.trim();
        const rootfs = path.join(work, "rootfs");
        makeBusyboxRootfs(rootfs);
        const template = makeBundle(path.join(shm, "template"), rootfs, ["/bin/true"], ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"]);
        const plainSpec = fs.readFileSync(path.join(template, "config.json"));
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
        const lifecycle = (bin: string, spec: Buffer): number => {
            const id = `gwb${process.pid}-${++n}`;
            const bundle = path.join(shm, id);
            fs.mkdirSync(bundle);
            fs.writeFileSync(path.join(bundle, "config.json"), spec);
            const t0 = process.hrtime.bigint();
            call(bin, ["create", "--bundle", bundle, "--pid-file", path.join(bundle, "init.pid"), id]);
            const pid = Number(fs.readFileSync(path.join(bundle, "init.pid"), "utf8"));
            call(bin, ["start", id]);
            while (!exited(pid)) { /* the container runs /bin/true: a few hundred microseconds */ }
            call(bin, ["delete", id]);
            const ms = Number(process.hrtime.bigint() - t0) / 1e6;
            fs.rmSync(bundle, { recursive: true, force: true });
            return ms;
        };

        console.log(`runc wrapper benchmark: create + start + wait + delete of /bin/true, ${iterations} lifecycles per side and folder count, interleaved`);
        console.log(`bundles on ${shm} (tmpfs); runc ${spawnSync(runc, ["--version"], { encoding: "utf8" }).stdout.split("\n")[0]}`);
        const rows: string[][] = [["folders", "bare ms", "bare+mounts ms", "wrapper ms", "wrapper/bare+mounts", "wrapper/bare", "target"]];
        for (const count of FOLDER_COUNTS) {
            const root = path.join(work, `datasets-${count}`);
            fs.mkdirSync(root);
            for (let i = 0; i < count; i++) fs.mkdirSync(path.join(root, i % 5 === 0 ? `set-${i}_rw` : `set-${i}`));
            writeSettings(settingsPath, renderWrapperConfig({
                plan: { env: { NVIDIA_VISIBLE_DEVICES: "0", NVIDIA_DRIVER_CAPABILITIES: "compute,utility" }, unsetEnv: ["AMD_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"], deviceNodes: [] },
                datasets: { root, writableSuffixes: ["_writable", "_rw"] },
                realRuntime: runc,
                logPath: path.join(work, "wrapper.log"),
            }));
            // The spec exactly as the wrapper leaves it: bare runc then does the same mounts.
            const probe = path.join(shm, "probe");
            fs.mkdirSync(probe);
            fs.writeFileSync(path.join(probe, "config.json"), plainSpec);
            call(wrapper, ["create", "--bundle", probe, `gwb-probe-${count}`]);
            call(runc, ["delete", "--force", `gwb-probe-${count}`]);
            const editedSpec = fs.readFileSync(path.join(probe, "config.json"));
            fs.rmSync(probe, { recursive: true, force: true });
            const mounts = JSON.parse(editedSpec.toString()).mounts.filter((m: { destination: string }) => m.destination.startsWith(root)).length;
            if (mounts !== count) throw new Error(`expected ${count} dataset mounts in the edited spec, got ${mounts}`);

            const times: Record<Side, number[]> = { "bare": [], "bare+mounts": [], "wrapper": [] };
            const sides: [Side, string, Buffer][] = [["bare", runc, plainSpec], ["bare+mounts", runc, editedSpec], ["wrapper", wrapper, plainSpec]];
            for (let i = 0; i < 3; i++) for (const [, bin, spec] of sides) lifecycle(bin, spec); // warm up
            for (let i = 0; i < iterations; i++) {
                // Rotate the order each round so no side always runs first.
                for (let k = 0; k < sides.length; k++) {
                    const [side, bin, spec] = sides[(i + k) % sides.length];
                    times[side].push(lifecycle(bin, spec));
                }
            }
            const bare = median(times.bare);
            const bareMounts = median(times["bare+mounts"]);
            const wrapped = median(times.wrapper);
            const ratio = wrapped / bareMounts;
            const target = TARGETS[count];
            rows.push([String(count), bare.toFixed(1), bareMounts.toFixed(1), wrapped.toFixed(1), ratio.toFixed(3), (wrapped / bare).toFixed(3),
                target === undefined ? "-" : `${ratio <= target ? "PASS" : "MISS"} (<= ${target})`]);
        }
        const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
        for (const r of rows) console.log(r.map((cell, c) => cell.padStart(widths[c])).join("  "));
    } finally {
        fs.closeSync(devnull);
        fs.rmSync(shm, { recursive: true, force: true });
        fs.rmSync(work, { recursive: true, force: true });
    }
}

main();
