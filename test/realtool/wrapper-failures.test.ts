/**
 * The wrapper when it cannot do its job: it stops before touching the bundle, says why in
 * one line on stderr (what containerd shows) and in its log, and never loops. Calls the
 * wrapper the way the shim does, with the real runc behind it.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/render/runc-wrapper";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, sha256, tempDir, writeSettings } from "./wrapper-support";

describe("runc wrapper failures (real runc)", function () {
    this.timeout(300_000);
    let dir: string;
    let settingsPath: string;
    let wrapper: string;
    let rootfs: string;
    let log: string;
    const realRunc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const runcRoot = () => path.join(dir, "runc-root");

    function settings(over: { realRuntime?: string; deviceNodes?: string[]; datasetRoot?: string } = {}): void {
        writeSettings(settingsPath, renderWrapperConfig({
            plan: { env: { NVIDIA_VISIBLE_DEVICES: "0" }, unsetEnv: ["AMD_VISIBLE_DEVICES"], deviceNodes: over.deviceNodes ?? [] },
            datasets: { root: over.datasetRoot ?? path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
            realRuntime: over.realRuntime ?? realRunc(),
            logPath: log,
        }));
    }

    /** The shim's call: runc --root R --log L --log-format json create --bundle B --pid-file P ID */
    // Output goes to files: a created container's init holds its stdio open until it starts.
    function create(bundle: string, id: string) {
        const outFile = path.join(dir, `${id}.out`);
        const errFile = path.join(dir, `${id}.err`);
        const out = fs.openSync(outFile, "w");
        const err = fs.openSync(errFile, "w");
        const r = spawnSync(wrapper, ["--root", runcRoot(), "--log", path.join(dir, `${id}.log.json`), "--log-format", "json", "create", "--bundle", bundle, "--pid-file", path.join(dir, `${id}.pid`), id], { stdio: ["ignore", out, err], timeout: 60_000 });
        fs.closeSync(out);
        fs.closeSync(err);
        return { status: r.status, stderr: fs.readFileSync(errFile, "utf8"), stdout: fs.readFileSync(outFile, "utf8") };
    }

    function cleanup(id: string): void {
        spawnSync(realRunc(), ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" });
    }

    function bundleSums(bundle: string): string {
        return fs.readdirSync(bundle).sort().map((f) => `${f}:${sha256(path.join(bundle, f))}`).join(" ");
    }

    function assertOneLine(stderr: string, pattern: RegExp): void {
        const lines = stderr.trim().split("\n");
        assert.strictEqual(lines.length, 1, `one line on stderr, got: ${stderr}`);
        assert.match(lines[0], pattern);
        assert.ok(fs.readFileSync(log, "utf8").includes(lines[0]), "the same line is in the log");
    }

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-fail-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        log = path.join(dir, "log", "wrapper.log");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        fs.mkdirSync(path.join(dir, "datasets", "d1"), { recursive: true });
    });

    after(() => {
        for (const id of ["ok1", "bad1", "missing1", "loop1", "loop2", "loop3", "dev1", "root1"]) cleanup(id);
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("works when nothing is wrong (the baseline the failures differ from)", () => {
        settings();
        const bundle = makeBundle(path.join(dir, "ok"), rootfs, ["true"], ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all", "AMD_VISIBLE_DEVICES=1"]);
        const r = create(bundle, "ok1");
        cleanup("ok1");
        assert.strictEqual(r.status, 0, r.stderr);
        const spec = JSON.parse(fs.readFileSync(path.join(bundle, "config.json"), "utf8"));
        assert.deepStrictEqual(spec.process.env, ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=0"]);
        assert.ok(spec.mounts.some((m: { destination: string; options: string[] }) => m.destination === path.join(dir, "datasets", "d1") && m.options.join(",") === "rbind,ro"));
    });

    it("invalid config.json: create fails with the reason in one line, the bundle is unchanged", () => {
        settings();
        const bundle = makeBundle(path.join(dir, "bad"), rootfs, ["true"]);
        fs.writeFileSync(path.join(bundle, "config.json"), '{"ociVersion": "1.0.2", "process": ');
        const before = bundleSums(bundle);
        const r = create(bundle, "bad1");
        assert.notStrictEqual(r.status, 0);
        assertOneLine(r.stderr, new RegExp(`^gpu-workers runc wrapper: create: cannot edit ${bundle}/config.json: not a JSON object: unexpected end of JSON input$`));
        assert.strictEqual(bundleSums(bundle), before);
        fs.rmSync(path.join(bundle, "config.json"));
        const missing = create(bundle, "bad1");
        assertOneLine(missing.stderr, new RegExp(`^gpu-workers runc wrapper: create: cannot read ${bundle}/config.json: .*no such file or directory$`));
    });

    it("a device node missing on the host: create fails naming it, the bundle is unchanged", () => {
        settings({ deviceNodes: ["/dev/gpu-workers-no-such-device"] });
        const bundle = makeBundle(path.join(dir, "dev"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const r = create(bundle, "dev1");
        assertOneLine(r.stderr, /^gpu-workers runc wrapper: create: device node \/dev\/gpu-workers-no-such-device: .*no such file or directory$/);
        assert.strictEqual(bundleSums(bundle), before);
    });

    it("a dataset root that exists but cannot be listed: create fails naming it, rather than start without datasets", () => {
        const notADir = path.join(dir, "datasets-file");
        fs.writeFileSync(notADir, "");
        settings({ datasetRoot: notADir });
        const bundle = makeBundle(path.join(dir, "root"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const r = create(bundle, "root1");
        assertOneLine(r.stderr, new RegExp(`^gpu-workers runc wrapper: create: dataset root ${notADir} cannot be listed: .*not a directory$`));
        assert.strictEqual(bundleSums(bundle), before);
    });

    it("the real runtime is missing: a clear error, for create and for every other call", () => {
        settings({ realRuntime: path.join(dir, "no-such-runc") });
        const bundle = makeBundle(path.join(dir, "missing"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const r = create(bundle, "missing1");
        assertOneLine(r.stderr, new RegExp(`^gpu-workers runc wrapper: create: real runtime ${dir}/no-such-runc is missing: `));
        assert.strictEqual(bundleSums(bundle), before);
        const state = spawnSync(wrapper, ["--root", runcRoot(), "state", "missing1"], { encoding: "utf8" });
        assert.notStrictEqual(state.status, 0);
        assert.match(state.stderr, /^gpu-workers runc wrapper: state: real runtime .* is missing/);
    });

    it("realRuntime pointing at the wrapper itself (directly or through a symlink) is refused", () => {
        settings({ realRuntime: wrapper });
        const bundle = makeBundle(path.join(dir, "loop"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const r = create(bundle, "loop1");
        assertOneLine(r.stderr, /^gpu-workers runc wrapper: create: refusing to run: the real runtime .* is this wrapper itself \(a loop\)/);
        assert.strictEqual(bundleSums(bundle), before);
        const link = path.join(dir, "runc-link");
        fs.symlinkSync(wrapper, link);
        settings({ realRuntime: link });
        assertOneLine(create(bundle, "loop2").stderr, /is this wrapper itself \(a loop\)/);
    });

    it("a runtime that calls the wrapper again (a misconfigured nvidia-container-runtime) is stopped by the marker", () => {
        const relay = path.join(dir, "relay-runtime");
        fs.writeFileSync(relay, `#!/bin/sh\nexec ${wrapper} "$@"\n`, { mode: 0o755 });
        settings({ realRuntime: relay });
        const bundle = makeBundle(path.join(dir, "loop3"), rootfs, ["true"]);
        const r = spawnSync(wrapper, ["create", "--bundle", bundle, "loop3"], { encoding: "utf8", timeout: 30_000 });
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr.trim(), /^gpu-workers runc wrapper: create: refusing to run: GPU_WORKERS_WRAPPER_ACTIVE is set, so the real runtime called this wrapper again \(a loop\)/);
        const direct = spawnSync(wrapper, ["state", "x"], { encoding: "utf8", env: { ...process.env, GPU_WORKERS_WRAPPER_ACTIVE: "1" } });
        assert.notStrictEqual(direct.status, 0);
        assert.match(direct.stderr, /refusing to run: GPU_WORKERS_WRAPPER_ACTIVE is set/);
    });

    it("settings that anyone could write are refused (they choose what runs as root)", () => {
        settings();
        fs.chmodSync(settingsPath, 0o666);
        const r = spawnSync(wrapper, ["state", "x"], { encoding: "utf8" });
        fs.chmodSync(settingsPath, 0o644);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /must not be writable by group or others \(mode 0666\)/);
    });

    it("calls other than create pass straight through, untouched", () => {
        settings();
        const r = spawnSync(wrapper, ["--version"], { encoding: "utf8" });
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(r.stdout, sh(realRunc(), ["--version"]));
        const list = spawnSync(wrapper, ["--root", runcRoot(), "list", "--format", "json"], { encoding: "utf8" });
        assert.strictEqual(list.status, 0, list.stderr);
    });
});
