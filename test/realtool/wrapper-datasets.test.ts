/**
 * What a task sees of the datasets, from inside containers that real runc starts through
 * the wrapper (`runc run`): the root mounted once, read-only all the way down, with a
 * read-write mount per writable folder; links resolved inside the container, with the mode
 * of what they lead to; host mounts nested inside a read-only dataset read-only too, with
 * recursive read-only ("rro") where the runtime and kernel have it, and with a read-only
 * mount of their own where they do not (crun 1.8, which cannot say what it supports); and a
 * host mount made below the root while a container runs stays out of it (its mounts are private).
 */
import * as assert from "assert";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { ensureCommands } from "../support/tools";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, mountsBelow, sh, tempDir, writeSettings } from "./wrapper-support";

interface Mount {
    destination: string;
    type: string;
    source: string;
    options?: string[];
}

describe("runc wrapper datasets (real runc, real mounts)", function () {
    this.timeout(300_000);
    let dir: string;
    let settingsPath: string;
    let wrapper: string;
    let rootfs: string;
    let datasets: string;
    let log: string;
    const hostMounts: string[] = [];
    let counter = 0;
    const runcRoot = () => path.join(dir, "runc-root");
    const runc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const crunGlobals = () => ["--root", path.join(dir, "crun-root")];
    // crun refuses a cgroup v2 hierarchy with controllers beside v1 ones (this machine's hybrid
    // layout): it runs in a mount namespace of its own without that hierarchy.
    const hybrid = ["unshare", "-m", "--propagation", "private", "sh", "-c", 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$0" "$@"'];

    function settings(realRuntime: string): void {
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                datasets: { root: datasets, writableSuffixes: ["_rw"] },
                realRuntime,
                logPath: log,
            }),
        );
    }

    /** Runs `script` in a new container through the wrapper (behind `prefix`, a command that execs it); its output, exit status and spec. */
    function run(
        script: string,
        opts: { globals?: string[]; prefix?: string[]; mounts?: Mount[] } = {},
    ): { status: number | null; out: string; spec: { mounts: Mount[] } } {
        const id = `ds${process.pid}-${++counter}`;
        const bundle = makeBundle(path.join(dir, "bundles", id), rootfs, ["sh", "-c", script], ["PATH=/bin", `R=${datasets}`]);
        if (opts.mounts) {
            const specPath = path.join(bundle, "config.json");
            const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
            spec.mounts.push(...opts.mounts);
            fs.writeFileSync(specPath, JSON.stringify(spec));
        }
        const outFile = path.join(dir, `${id}.out`);
        const out = fs.openSync(outFile, "w");
        const argv = [...(opts.prefix ?? []), wrapper, ...(opts.globals ?? ["--root", runcRoot()]), "run", "--bundle", bundle, id];
        const r = spawnSync(argv[0], argv.slice(1), { stdio: ["ignore", out, out], timeout: 60_000 });
        fs.closeSync(out);
        return { status: r.status, out: fs.readFileSync(outFile, "utf8"), spec: JSON.parse(fs.readFileSync(path.join(bundle, "config.json"), "utf8")) };
    }

    const datasetMounts = (spec: { mounts: Mount[] }) => spec.mounts.filter((m) => m.destination === datasets || m.destination.startsWith(`${datasets}/`));
    /** A write probe for each path: "probe NAME rw", "probe NAME ro" or "probe NAME missing". */
    const probe = (names: string[]) =>
        names
            .map(
                (n) =>
                    `if [ ! -e "$R/${n}" ]; then echo "probe ${n} missing"; elif touch "$R/${n}/.probe" 2>/dev/null; then rm -f "$R/${n}/.probe"; echo "probe ${n} rw"; else echo "probe ${n} ro"; fi`,
            )
            .join("; ");
    const modes = (out: string) =>
        new Map(
            out
                .split("\n")
                .filter((l) => l.startsWith("probe "))
                .map((l) => [l.slice(6, l.lastIndexOf(" ")), l.slice(l.lastIndexOf(" ") + 1)]),
        );

    function tmpfs(at: string): void {
        fs.mkdirSync(at, { recursive: true });
        sh("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0755", "gw-nested", at]);
        hostMounts.unshift(at);
    }

    before(() => {
        ensureWrapperTools();
        ensureCommands(["crun"], ["crun"]);
        dir = tempDir("gw-ds-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        log = path.join(dir, "wrapper.log");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        fs.writeFileSync(path.join(rootfs, "etc", "container-only"), "the container's own /etc\n");
        datasets = path.join(dir, "srv");
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.writeFileSync(path.join(datasets, "models", "weights.bin"), "w");
        fs.mkdirSync(path.join(datasets, "results_rw"));
        fs.mkdirSync(path.join(datasets, "scratch_rw", "team"), { recursive: true });
        fs.writeFileSync(path.join(datasets, "README"), "a file at the top of the root\n");
        // Links: each resolves inside the container, to what it names there.
        fs.symlinkSync("/etc", path.join(datasets, "etc_rw"));
        fs.symlinkSync("models", path.join(datasets, "alias_rw"));
        fs.symlinkSync("scratch_rw/team", path.join(datasets, "team_rw"));
        fs.symlinkSync("results_rw", path.join(datasets, "results"));
        // Host mounts inside the root: in a read-only dataset (two deep), in a writable one, and a dataset that is a mount of its own.
        tmpfs(path.join(datasets, "models", "nested"));
        tmpfs(path.join(datasets, "models", "nested", "deeper"));
        tmpfs(path.join(datasets, "results_rw", "cache"));
        tmpfs(path.join(datasets, "disk"));
    });

    after(() => {
        for (const m of hostMounts) spawnSync("umount", [m], { stdio: "ignore" });
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("the root once, read-only all the way down (rro), and each writable folder read-write: three mounts here, whatever the number of folders", () => {
        settings(runc());
        const r = run(
            `${probe(["", "models", "models/nested", "models/nested/deeper", "results_rw", "results_rw/cache", "scratch_rw", "scratch_rw/team", "disk"])}; cat "$R/README"; cat "$R/models/weights.bin"; echo; touch "$R/models/x" 2>&1; cat /proc/self/mountinfo`,
        );
        assert.strictEqual(r.status, 0, r.out);
        // A host mount nested in a read-only dataset (or that is one) is read-only inside; one in a writable dataset keeps its mode.
        assert.deepStrictEqual(
            modes(r.out),
            new Map([
                ["", "ro"],
                ["models", "ro"],
                ["models/nested", "ro"],
                ["models/nested/deeper", "ro"],
                ["results_rw", "rw"],
                ["results_rw/cache", "rw"],
                ["scratch_rw", "rw"],
                ["scratch_rw/team", "rw"],
                ["disk", "ro"],
            ]),
            r.out,
        );
        assert.match(
            r.out,
            /\na file at the top of the root\nw\ntouch: [^\n]*models\/x: Read-only file system\n/,
            "files under the root are visible, a read-only dataset refuses a write",
        );
        assert.ok(!fs.existsSync(path.join(datasets, "models", "x")));
        assert.deepStrictEqual(datasetMounts(r.spec), [
            { destination: datasets, type: "bind", source: fs.realpathSync(datasets), options: ["rbind", "ro", "rro", "rprivate"] },
            { destination: `${datasets}/results_rw`, type: "bind", source: `${fs.realpathSync(datasets)}/results_rw`, options: ["rbind", "rw", "rprivate"] },
            { destination: `${datasets}/scratch_rw`, type: "bind", source: `${fs.realpathSync(datasets)}/scratch_rw`, options: ["rbind", "rw", "rprivate"] },
        ]);
        const inside = mountsBelow(r.out, path.dirname(datasets));
        assert.strictEqual(inside.get(datasets)?.mode, "ro", r.out);
        // The host's own mounts keep their modes.
        fs.writeFileSync(path.join(datasets, "models", "nested", "host-write"), "h");
        fs.writeFileSync(path.join(datasets, "disk", "host-write"), "h");
    });

    it("links resolve inside the container and have the mode of what they lead to", () => {
        settings(runc());
        const r = run(
            [
                probe(["etc_rw", "alias_rw", "team_rw", "results"]),
                `cat "$R/etc_rw/container-only"`,
                `test -e "$R/etc_rw/os-release" && echo "HOST /etc" || echo "no host /etc"`,
                `cat "$R/alias_rw/weights.bin"; echo`,
                `touch "$R/alias_rw/planted" 2>&1`,
                `echo t > "$R/team_rw/from-task" && echo team-written`,
                `echo r > "$R/results/via-link" && echo results-written`,
            ].join("; "),
        );
        assert.strictEqual(r.status, 0, r.out);
        // etc_rw -> /etc is the container's own /etc (the image's, read-only as its root is).
        assert.deepStrictEqual(
            modes(r.out),
            new Map([
                ["etc_rw", "ro"],
                ["alias_rw", "ro"],
                ["team_rw", "rw"],
                ["results", "rw"],
            ]),
            r.out,
        );
        assert.match(
            r.out,
            /\nthe container's own \/etc\nno host \/etc\nw\ntouch: [^\n]*alias_rw\/planted: Read-only file system\nteam-written\nresults-written\n$/,
        );
        assert.ok(!fs.existsSync(path.join(datasets, "models", "planted")), "the task wrote into the read-only dataset models");
        assert.strictEqual(fs.readFileSync(path.join(datasets, "scratch_rw", "team", "from-task"), "utf8"), "t\n");
        assert.strictEqual(fs.readFileSync(path.join(datasets, "results_rw", "via-link"), "utf8"), "r\n");
        assert.ok(!fs.existsSync(log) || !fs.readFileSync(log, "utf8").includes("link"), "links are not the wrapper's business: nothing to log");
    });

    it("a runtime without rro (crun 1.8, which cannot say what it supports): each host mount in a read-only dataset gets a read-only mount of its own, logged once", () => {
        const crun = sh("sh", ["-c", "command -v crun"]).trim();
        settings(crun);
        const before = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
        const r = run(`${probe(["", "models", "models/nested", "models/nested/deeper", "results_rw", "results_rw/cache", "disk", "team_rw", "results"])}`, {
            globals: crunGlobals(),
            prefix: hybrid,
        });
        assert.strictEqual(r.status, 0, r.out);
        assert.deepStrictEqual(
            modes(r.out),
            new Map([
                ["", "ro"],
                ["models", "ro"],
                ["models/nested", "ro"],
                ["models/nested/deeper", "ro"],
                ["results_rw", "rw"],
                ["results_rw/cache", "rw"],
                ["disk", "ro"],
                ["team_rw", "rw"],
                ["results", "rw"],
            ]),
            r.out,
        );
        const source = fs.realpathSync(datasets);
        assert.deepStrictEqual(
            datasetMounts(r.spec).map((m) => `${m.destination.slice(datasets.length)} ${m.source.slice(source.length)} ${m.options?.join(",")}`),
            [
                "  rbind,ro,rprivate",
                "/disk /disk rbind,ro,rprivate",
                "/models/nested /models/nested rbind,ro,rprivate",
                "/models/nested/deeper /models/nested/deeper rbind,ro,rprivate",
                "/results_rw /results_rw rbind,rw,rprivate",
                "/scratch_rw /scratch_rw rbind,rw,rprivate",
            ],
        );
        const again = run("true", { globals: crunGlobals(), prefix: hybrid });
        assert.strictEqual(again.status, 0, again.out);
        const added = fs
            .readFileSync(log, "utf8")
            .slice(before.length)
            .split("\n")
            .filter((l) => l.includes("mount by mount"));
        assert.strictEqual(added.length, 1, `one fallback line for two containers, got:\n${added.join("\n")}`);
        assert.match(
            added[0],
            new RegExp(
                `run: read-only datasets are made read-only mount by mount, as the runtime cannot make the root read-only all the way down: the runtime ${crun} cannot say what it supports`,
            ),
        );
    });

    it("the spec's own mounts inside the root go on top of it; a destination the spec mounts is left to the spec", () => {
        settings(runc());
        const r = run(`${probe(["models/nested", "results_rw"])}; cat /proc/self/mountinfo`, {
            mounts: [
                { destination: `${datasets}/models/nested`, type: "tmpfs", source: "spec-tmpfs-a", options: ["rw"] },
                { destination: `${datasets}/results_rw`, type: "tmpfs", source: "spec-tmpfs-b", options: ["rw"] },
            ],
        });
        assert.strictEqual(r.status, 0, r.out);
        assert.deepStrictEqual(
            modes(r.out),
            new Map([
                ["models/nested", "rw"],
                ["results_rw", "rw"],
            ]),
            r.out,
        );
        const inside = mountsBelow(r.out, datasets);
        assert.strictEqual(inside.get(`${datasets}/models/nested`)?.fstype, "tmpfs");
        assert.strictEqual(r.out.split("\n").filter((l) => l.split(" ")[4] === `${datasets}/results_rw`).length, 1, "results_rw is the spec's tmpfs alone");
        const destinations = datasetMounts(r.spec).map((m) => `${m.destination.slice(datasets.length)} ${m.type}`);
        assert.deepStrictEqual(destinations, [" bind", "/scratch_rw bind", "/models/nested tmpfs", "/results_rw tmpfs"]);
        assert.ok(!fs.existsSync(path.join(datasets, "results_rw", ".probe")));
    });

    it("a spec that mounts the root itself keeps it: no dataset mounts, and the log says so", () => {
        settings(runc());
        const r = run(`ls "$R"`, { mounts: [{ destination: datasets, type: "tmpfs", source: "spec-root", options: ["rw"] }] });
        assert.strictEqual(r.status, 0, r.out);
        assert.strictEqual(r.out, "", "the spec's empty tmpfs, not the datasets");
        assert.deepStrictEqual(
            datasetMounts(r.spec).map((m) => m.type),
            ["tmpfs"],
        );
        assert.match(
            fs.readFileSync(log, "utf8"),
            new RegExp(
                `run: dataset root ${datasets}: the container's spec already mounts it \\(from "spec-root"\\), so it is left to the spec and no dataset mounts are added`,
            ),
        );
    });

    it("a host mount made below a read-only dataset while a container runs never shows inside it: the dataset mounts are private", async () => {
        // A root that is a shared mount, as / is under systemd: a slave of it would receive what the host mounts later.
        const shared = path.join(dir, "shared-srv");
        fs.mkdirSync(path.join(shared, "models", "late"), { recursive: true });
        fs.mkdirSync(path.join(shared, "signal_rw"), { mode: 0o777 });
        sh("mount", ["--bind", shared, shared]);
        hostMounts.unshift(shared);
        sh("mount", ["--make-shared", shared]);
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                datasets: { root: shared, writableSuffixes: ["_rw"] },
                realRuntime: runc(),
                logPath: log,
            }),
        );
        const id = `ds${process.pid}-late`;
        const script = `touch "$R/signal_rw/started"; sleep 3; grep -c " $R/models/late " /proc/self/mountinfo; ls "$R/models/late"; touch "$R/models/late/from-task" 2>&1 || true`;
        const bundle = makeBundle(path.join(dir, "bundles", id), rootfs, ["sh", "-c", script], ["PATH=/bin", `R=${shared}`]);
        let out = "";
        const child = spawn(wrapper, ["--root", runcRoot(), "run", "--bundle", bundle, id], { stdio: ["ignore", "pipe", "pipe"] });
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr.on("data", (d: Buffer) => (out += d.toString()));
        const done = new Promise<number | null>((resolve) => child.on("close", resolve));
        // Once the container runs (it made a file in its writable dataset), the host mounts a tmpfs below the read-only one.
        for (let i = 0; i < 100 && !fs.existsSync(path.join(shared, "signal_rw", "started")); i++) await new Promise((r) => setTimeout(r, 50));
        assert.ok(fs.existsSync(path.join(shared, "signal_rw", "started")), `the container started:\n${out}`);
        const late = path.join(shared, "models", "late");
        sh("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0777", "gw-late", late]);
        hostMounts.unshift(late);
        fs.writeFileSync(path.join(late, "host-file"), "made by the host after the container started\n");
        const status = await done;
        assert.strictEqual(status, 0, out);
        assert.match(out, /^0\n/, `the host's later mount is not in the container's mount table:\n${out}`);
        assert.doesNotMatch(out, /host-file/, "nor are its files");
        assert.ok(!fs.existsSync(path.join(late, "from-task")), "the task wrote nothing through it");
        assert.match(out, /from-task: Read-only file system/, "the dataset stays read-only");
    });
});
