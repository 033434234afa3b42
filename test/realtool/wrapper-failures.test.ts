/**
 * The wrapper when it cannot do its job: it stops before touching the bundle, says why in
 * one line on stderr (what containerd shows) and in its log, and never loops. Calls the
 * wrapper the way the shim does, with the real runc behind it.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { ensureCommands } from "../support/tools";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, sha256, tempDir, variantLog, writeSettings } from "./wrapper-support";

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
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { env: { NVIDIA_VISIBLE_DEVICES: "0" }, unsetEnv: ["AMD_VISIBLE_DEVICES"], deviceNodes: over.deviceNodes ?? [] },
                datasets: { root: over.datasetRoot ?? path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
                realRuntime: over.realRuntime ?? realRunc(),
                logPath: log,
            }),
        );
    }

    /** The shim's call: runc --root R --log L --log-format json create --bundle B --pid-file P ID */
    // Output goes to files: a created container's init holds its stdio open until it starts.
    function create(bundle: string, id: string) {
        const outFile = path.join(dir, `${id}.out`);
        const errFile = path.join(dir, `${id}.err`);
        const out = fs.openSync(outFile, "w");
        const err = fs.openSync(errFile, "w");
        const r = spawnSync(
            wrapper,
            [
                "--root",
                runcRoot(),
                "--log",
                path.join(dir, `${id}.log.json`),
                "--log-format",
                "json",
                "create",
                "--bundle",
                bundle,
                "--pid-file",
                path.join(dir, `${id}.pid`),
                id,
            ],
            { stdio: ["ignore", out, err], timeout: 60_000 },
        );
        fs.closeSync(out);
        fs.closeSync(err);
        return { status: r.status, stderr: fs.readFileSync(errFile, "utf8"), stdout: fs.readFileSync(outFile, "utf8") };
    }

    function cleanup(id: string): void {
        spawnSync(realRunc(), ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" });
    }

    function bundleSums(bundle: string): string {
        return fs
            .readdirSync(bundle)
            .sort()
            .map((f) => `${f}:${sha256(path.join(bundle, f))}`)
            .join(" ");
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
        for (const id of ["ok1", "bad1", "missing1", "loop1", "loop2", "loop3", "dev1", "root1", "root2", "root3", "root4", "open1"]) cleanup(id);
        if (dir) spawnSync("umount", [path.join(dir, "ro-root")], { stdio: "ignore" });
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
        assert.ok(
            spec.mounts.some(
                (m: { destination: string; options: string[] }) =>
                    m.destination === path.join(dir, "datasets") && m.options.join(",") === "rbind,ro,rro,rprivate",
            ),
            "the root, read-only all the way down: runc and the kernel here have rro",
        );
    });

    it("invalid config.json: create fails with the reason in one line, the bundle is unchanged", () => {
        settings();
        const bundle = makeBundle(path.join(dir, "bad"), rootfs, ["true"]);
        fs.writeFileSync(path.join(bundle, "config.json"), '{"ociVersion": "1.0.2", "process": ');
        const before = bundleSums(bundle);
        const r = create(bundle, "bad1");
        assert.notStrictEqual(r.status, 0);
        assertOneLine(
            r.stderr,
            new RegExp(`^gpu-workers runc wrapper: create: cannot edit ${bundle}/config.json: not a JSON object: unexpected end of JSON input$`),
        );
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

    it("a dataset root that others could write, or that root does not own, fails the create: its entries could be swapped under runc", () => {
        const bundle = makeBundle(path.join(dir, "root-mode"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const open = path.join(dir, "open-root");
        fs.mkdirSync(path.join(open, "d_rw"), { recursive: true });
        fs.chmodSync(open, 0o777);
        settings({ datasetRoot: open });
        assertOneLine(
            create(bundle, "root2").stderr,
            new RegExp(
                `^gpu-workers runc wrapper: create: dataset root ${open} must not be writable by group or others \\(mode 0777\\): whoever can write the root could swap a writable folder for a link between this listing and the runtime's mount$`,
            ),
        );
        fs.chmodSync(open, 0o755);
        fs.chownSync(open, 1000, 1000);
        assertOneLine(create(bundle, "root3").stderr, /must be owned by root \(owner uid 1000\): whoever can write the root/);
        assert.strictEqual(bundleSums(bundle), before);
    });

    it("a dataset root on a read-only mount is accepted whoever owns it (an LXD instance's read-only disk): nobody here can change it", () => {
        const roRoot = path.join(dir, "ro-root");
        fs.mkdirSync(path.join(roRoot, "d_rw"), { recursive: true });
        fs.chownSync(roRoot, 1000, 1000);
        fs.chmodSync(roRoot, 0o777);
        sh("mount", ["--bind", roRoot, roRoot]);
        sh("mount", ["-o", "remount,bind,ro", roRoot]);
        settings({ datasetRoot: roRoot });
        const bundle = makeBundle(path.join(dir, "ro-root-bundle"), rootfs, ["true"]);
        const r = create(bundle, "root4");
        cleanup("root4");
        assert.strictEqual(r.status, 0, r.stderr);
        const spec = JSON.parse(fs.readFileSync(path.join(bundle, "config.json"), "utf8"));
        assert.deepStrictEqual(
            spec.mounts.filter((m: { destination: string }) => m.destination.startsWith(roRoot)).map((m: { destination: string }) => m.destination),
            [roRoot, `${roRoot}/d_rw`],
        );
    });

    it("the real runtime is missing: create fails naming it, the bundle is unchanged", () => {
        settings({ realRuntime: path.join(dir, "no-such-runc") });
        const bundle = makeBundle(path.join(dir, "missing"), rootfs, ["true"]);
        const before = bundleSums(bundle);
        const r = create(bundle, "missing1");
        assertOneLine(r.stderr, new RegExp(`^gpu-workers runc wrapper: create: real runtime ${dir}/no-such-runc is missing: `));
        assert.strictEqual(bundleSums(bundle), before);
    });

    it("the real runc that calls pass through to is missing: a clear error in one line, in the variant's log", () => {
        const variantDir = path.join(dir, "no-runc-variant");
        fs.mkdirSync(variantDir);
        const variant = buildTestWrapper(variantDir, path.join(variantDir, "runc-wrapper.json"), { realRunc: path.join(variantDir, "no-such-runc") });
        const state = spawnSync(variant, ["--root", runcRoot(), "state", "missing2"], { encoding: "utf8" });
        assert.notStrictEqual(state.status, 0);
        assert.strictEqual(state.stderr, `gpu-workers runc wrapper: state: cannot exec the real runc ${variantDir}/no-such-runc: No such file or directory\n`);
        assert.match(
            fs.readFileSync(variantLog(path.join(variantDir, "runc-wrapper.json")), "utf8"),
            /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ gpu-workers runc wrapper: state: cannot exec the real runc /,
        );
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
        assert.match(
            r.stderr.trim(),
            /^gpu-workers runc wrapper: create: refusing to run: GPU_WORKERS_WRAPPER_ACTIVE is set, so the real runtime called this wrapper again \(a loop\)/,
        );
        const direct = spawnSync(wrapper, ["state", "x"], { encoding: "utf8", env: { ...process.env, GPU_WORKERS_WRAPPER_ACTIVE: "1" } });
        assert.notStrictEqual(direct.status, 0);
        assert.match(direct.stderr, /refusing to run: GPU_WORKERS_WRAPPER_ACTIVE is set/);
    });

    it("settings that anyone could write are refused (they choose what runs as root), in the variant's own log", () => {
        settings();
        fs.chmodSync(settingsPath, 0o666);
        const bundle = makeBundle(path.join(dir, "open"), rootfs, ["true"]);
        const r = create(bundle, "open1");
        fs.chmodSync(settingsPath, 0o644);
        assert.notStrictEqual(r.status, 0);
        const line = `gpu-workers runc wrapper: create: settings ${settingsPath}: must not be writable by group or others (mode 0666)`;
        assert.strictEqual(r.stderr, `${line}\n`);
        // The settings could not name a log, so the line goes to the variant's own, never the production log.
        assert.ok(fs.readFileSync(variantLog(settingsPath), "utf8").includes(line), "the refusal is in the variant's log");
        const production = "/var/log/gpu-workers/runc-wrapper.log";
        assert.ok(!fs.existsSync(production) || !fs.readFileSync(production, "utf8").includes(settingsPath), `the test variant wrote to ${production}`);
    });

    it("a test variant holds no production path at all", () => {
        const binary = fs.readFileSync(wrapper).toString("latin1");
        for (const p of ["/etc/gpu-workers", "/var/log/gpu-workers", "/usr/local/lib/gpu-workers", "/run/gpu-workers"]) {
            assert.ok(!binary.includes(p), `the variant holds ${p}`);
        }
        assert.ok(binary.includes(settingsPath) && binary.includes(variantLog(settingsPath)), "the variant holds its own paths");
    });

    for (const [damage, how] of [
        ["not JSON", (p: string) => fs.writeFileSync(p, '{"realRuntime": ')],
        ["writable by anyone", (p: string) => fs.chmodSync(p, 0o666)],
        ["owned by another user", (p: string) => fs.chownSync(p, 1000, 1000)],
        ["missing", (p: string) => fs.rmSync(p)],
    ] as const) {
        it(`settings ${damage}: create is refused, but state, kill and delete of a running container still work`, () => {
            settings();
            const id = `keep-${damage.replace(/\W+/g, "-")}`;
            const bundle = makeBundle(path.join(dir, id), rootfs, ["sleep", "60"]);
            const made = create(bundle, id);
            assert.strictEqual(made.status, 0, made.stderr);
            const call = (args: string[]) => spawnSync(wrapper, ["--root", runcRoot(), ...args], { encoding: "utf8", timeout: 60_000 });
            assert.strictEqual(call(["start", id]).status, 0);
            how(settingsPath);
            try {
                const refused = create(makeBundle(path.join(dir, `${id}-new`), rootfs, ["true"]), `${id}-new`);
                assert.notStrictEqual(refused.status, 0, "create needs the settings");
                assert.match(refused.stderr, new RegExp(`^gpu-workers runc wrapper: create: .*settings ${settingsPath}`));
                const state = call(["state", id]);
                assert.strictEqual(state.status, 0, state.stderr);
                assert.strictEqual(JSON.parse(state.stdout).status, "running");
                assert.strictEqual(call(["kill", id, "KILL"]).status, 0);
                for (let i = 0; i < 50 && JSON.parse(call(["state", id]).stdout).status !== "stopped"; i++) spawnSync("sleep", ["0.1"]);
                const deleted = call(["delete", id]);
                assert.strictEqual(deleted.status, 0, deleted.stderr);
                assert.notStrictEqual(call(["state", id]).status, 0, "the container is gone");
            } finally {
                cleanup(id);
            }
        });
    }

    it("calls other than create and run go to the real runc before the Go runtime starts, never reading the settings (strace)", () => {
        ensureCommands(["strace"], ["strace"]);
        settings();
        const trace = (args: string[]) => {
            const out = path.join(dir, "trace.txt");
            // -b execve: stop following at the hand-over (runc's own work, and a created container's init, are not ours).
            spawnSync("strace", ["-f", "-b", "execve", "-o", out, "-e", "trace=execve,clone,clone3,openat", wrapper, "--root", runcRoot(), ...args], {
                stdio: "ignore",
                timeout: 60_000,
            });
            const lines = fs.readFileSync(out, "utf8").split("\n");
            // What the wrapper did before the real runc took over its process.
            const handover = lines.findIndex((l, i) => i > 0 && new RegExp(`execve\\("${realRunc()}"`).test(l));
            assert.ok(handover > 0, `the real runc was not exec'ed:\n${lines.join("\n")}`);
            return lines.slice(0, handover);
        };
        for (const args of [
            ["state", "nothing"],
            ["kill", "nothing", "KILL"],
            ["delete", "--force", "nothing"],
            ["--log-format", "json", "list"],
        ]) {
            const before = trace(args);
            assert.deepStrictEqual(
                before.filter((l) => /clone3?\(/.test(l)),
                [],
                `${args[0]}: threads started (the Go runtime) before the hand-over`,
            );
            assert.ok(!before.some((l) => l.includes(settingsPath)), `${args[0]}: the settings were read`);
        }
        // create is the call that needs the settings (and the Go runtime).
        const bundle = makeBundle(path.join(dir, "traced"), rootfs, ["true"]);
        const created = trace(["create", "--bundle", bundle, "traced1"]);
        cleanup("traced1");
        assert.ok(
            created.some((l) => l.includes(settingsPath)),
            "create reads the settings",
        );
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
