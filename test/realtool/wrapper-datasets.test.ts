/**
 * What a task can do to the datasets, seen from inside containers that real runc starts
 * through the wrapper (`runc run`): a symlink never opens a read-only dataset for writing,
 * and read-only reaches mounts nested inside a dataset (recursive read-only, "rro") where
 * the runtime and kernel have it, with a logged fallback to read-only at the top where
 * they do not (crun 1.8, which cannot say what it supports).
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/render/runc-wrapper";
import { ensureCommands } from "../support/tools";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, tempDir, writeSettings } from "./wrapper-support";

describe("runc wrapper datasets (real runc, real mounts)", function () {
    this.timeout(300_000);
    let dir: string;
    let settingsPath: string;
    let wrapper: string;
    let rootfs: string;
    let datasets: string;
    let log: string;
    let nested: string;
    let counter = 0;
    const runcRoot = () => path.join(dir, "runc-root");
    const runc = () => sh("sh", ["-c", "command -v runc"]).trim();

    function settings(realRuntime: string): void {
        writeSettings(settingsPath, renderWrapperConfig({
            plan: { env: {}, unsetEnv: [], deviceNodes: [] },
            datasets: { root: datasets, writableSuffixes: ["_rw"] },
            realRuntime,
            logPath: log,
        }));
    }

    /** Runs `script` in a new container through the wrapper (behind `prefix`, a command that execs it); its output, exit status and spec. */
    function run(script: string, globals = ["--root", runcRoot()], prefix: string[] = []): { status: number | null; out: string; spec: { mounts: { destination: string; options: string[] }[] } } {
        const id = `ds${process.pid}-${++counter}`;
        const bundle = makeBundle(path.join(dir, "bundles", id), rootfs, ["sh", "-c", script]);
        const outFile = path.join(dir, `${id}.out`);
        const out = fs.openSync(outFile, "w");
        const argv = [...prefix, wrapper, ...globals, "run", "--bundle", bundle, id];
        const r = spawnSync(argv[0], argv.slice(1), { stdio: ["ignore", out, out], timeout: 60_000 });
        fs.closeSync(out);
        return { status: r.status, out: fs.readFileSync(outFile, "utf8"), spec: JSON.parse(fs.readFileSync(path.join(bundle, "config.json"), "utf8")) };
    }

    const optionsOf = (spec: ReturnType<typeof run>["spec"], name: string) => spec.mounts.find((m) => m.destination === path.join(datasets, name))?.options.join(",");

    before(() => {
        ensureWrapperTools();
        ensureCommands(["crun"], ["crun"]);
        dir = tempDir("gw-ds-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        log = path.join(dir, "wrapper.log");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        datasets = path.join(dir, "srv");
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.writeFileSync(path.join(datasets, "models", "weights.bin"), "w");
        fs.mkdirSync(path.join(datasets, "results_rw"));
        // A link whose name asks for read-write, to a read-only dataset.
        fs.symlinkSync("models", path.join(datasets, "scratch_rw"));
        // A mount nested inside the read-only dataset, read-write on the host.
        nested = path.join(datasets, "models", "nested");
        fs.mkdirSync(nested);
        sh("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0777", "gw-nested", nested]);
        fs.writeFileSync(path.join(nested, "cache.bin"), "c");
    });

    after(() => {
        if (nested) spawnSync("umount", [nested], { stdio: "ignore" });
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("a writable dataset is writable, a read-only one is not (the baseline)", () => {
        settings(runc());
        const r = run(`touch ${datasets}/results_rw/ok && echo wrote; touch ${datasets}/models/x 2>&1; echo "status $?"`);
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /^wrote\n.*Read-only file system\nstatus 1\n$/s);
        assert.ok(fs.existsSync(path.join(datasets, "results_rw", "ok")));
    });

    it("a symlink named as writable to a read-only dataset mounts it read-only, and says so in the log", () => {
        settings(runc());
        const r = run(`touch ${datasets}/scratch_rw/planted 2>&1; echo "status $?"; cat ${datasets}/scratch_rw/weights.bin`);
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /Read-only file system\nstatus 1\nw$/);
        assert.ok(!fs.existsSync(path.join(datasets, "models", "planted")), "the task wrote into the read-only dataset models");
        assert.strictEqual(optionsOf(r.spec, "scratch_rw"), "rbind,ro,rro");
        assert.match(fs.readFileSync(log, "utf8"), new RegExp(`run: dataset "${datasets}/scratch_rw" mounted read-only although its name ends with a writable suffix: it is a symlink to ${fs.realpathSync(datasets)}/models, which lies in the read-only dataset "models"`));
    });

    it("a mount nested inside a read-only dataset is read-only inside too (rro), and stays writable on the host", () => {
        settings(runc());
        const r = run(`cat ${nested}/cache.bin; echo; touch ${nested}/planted 2>&1; echo "status $?"; touch ${datasets}/scratch_rw/nested/planted2 2>&1; echo "status $?"`);
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /^c\n.*Read-only file system\nstatus 1\n.*Read-only file system\nstatus 1\n$/s);
        assert.ok(!fs.existsSync(path.join(nested, "planted")) && !fs.existsSync(path.join(nested, "planted2")));
        assert.strictEqual(optionsOf(r.spec, "models"), "rbind,ro,rro");
        fs.writeFileSync(path.join(nested, "host-write"), "h"); // the host's own mount keeps its mode
    });

    it("a runtime that cannot say whether it has rro (crun 1.8): read-only at the top only, logged once", () => {
        const crun = sh("sh", ["-c", "command -v crun"]).trim();
        settings(crun);
        const before = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
        const crunGlobals = ["--root", path.join(dir, "crun-root")];
        // crun refuses a cgroup v2 hierarchy with controllers beside v1 ones (this machine's hybrid
        // layout): it runs in a mount namespace of its own without that hierarchy.
        const hybrid = ["unshare", "-m", "--propagation", "private", "sh", "-c", "umount /sys/fs/cgroup/unified 2>/dev/null; exec \"$0\" \"$@\""];
        const r = run(`touch ${datasets}/models/x 2>&1; echo "status $?"; touch ${nested}/fallback && echo "nested writable"`, crunGlobals, hybrid);
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /Read-only file system\nstatus 1\nnested writable\n$/);
        assert.strictEqual(optionsOf(r.spec, "models"), "rbind,ro");
        const again = run("true", crunGlobals, hybrid);
        assert.strictEqual(again.status, 0, again.out);
        const added = fs.readFileSync(log, "utf8").slice(before.length).split("\n").filter((l) => l.includes("read-only at their top only"));
        assert.strictEqual(added.length, 1, `one fallback line for two containers, got:\n${added.join("\n")}`);
        assert.match(added[0], new RegExp(`run: read-only datasets are read-only at their top only, a mount nested inside one keeps its own mode: the runtime ${crun} cannot say what it supports`));
    });
});
