/**
 * The runc wrapper's GPU job records with the real runc: `create` writes, for each GPU of the
 * worker, the container's record and dcgm-exporter's mapping file; `delete`, which the C front
 * passes to runc without starting Go or reading the settings, removes them, keeping the lines
 * of another container on the same GPU. The records then label the GPU metrics a real node
 * exporter serves.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { promtextBinary } from "../support/promtext";
import { collect, fakeNvidiaSmi, pick, readMetrics, samplesOf, TestNodeExporter } from "./metrics-support";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, tempDir, writeSettings } from "./wrapper-support";

describe("runc wrapper: GPU job records (real runc)", function () {
    this.timeout(300_000);
    let dir: string;
    let wrapper: string;
    let rootfs: string;
    let settingsPath: string;
    let settingsJson: string;
    const realRunc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const runcRoot = () => path.join(dir, "runc-root");
    const records = () => path.join(dir, "run", "gpu-jobs");
    // Two levels, both made by the wrapper, so that a link can be planted at each.
    const mapping = () => path.join(dir, "dcgm", "jobs");
    const created: string[] = [];

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-gpu-jobs-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        // Two GPUs' device nodes, stand-ins with /dev/null's numbers, as the other wrapper tests make them.
        const nodes = [0, 1].map((i) => path.join(dir, "dev", `nvidia${i}`));
        fs.mkdirSync(path.join(dir, "dev"));
        for (const node of nodes) sh("mknod", ["-m", "0666", node, "c", "1", "3"]);
        fs.mkdirSync(path.join(dir, "datasets"));
        settingsJson = renderWrapperConfig({
            plan: { env: { NVIDIA_VISIBLE_DEVICES: "0,1" }, unsetEnv: [], deviceNodes: nodes },
            datasets: { root: path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
            realRuntime: realRunc(),
            logPath: path.join(dir, "wrapper.log"),
            gpuJobs: { gpus: [0, 1], mappingDir: mapping() },
        });
        writeSettings(settingsPath, settingsJson);
        promtextBinary();
    });

    after(() => {
        for (const id of created) spawnSync(realRunc(), ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" });
        fs.rmSync(dir, { recursive: true, force: true });
    });

    function wrapped(args: string[]): void {
        // Into a file, not a pipe: a created container's init holds its stdio open until it runs.
        const out = path.join(dir, "wrapped.out");
        const fd = fs.openSync(out, "w");
        try {
            const r = spawnSync(wrapper, ["--root", runcRoot(), ...args], { stdio: ["ignore", fd, fd], timeout: 60_000 });
            assert.strictEqual(r.status, 0, `wrapper ${args.join(" ")}: ${fs.readFileSync(out, "utf8")}`);
        } finally {
            fs.closeSync(fd);
        }
    }

    function create(id: string, env: string[]): void {
        const bundle = makeBundle(path.join(dir, `bundle-${id}`), rootfs, ["sleep", "30"], env);
        wrapped(["create", "--bundle", bundle, id]);
        created.push(id);
    }

    const read = (file: string) => fs.readFileSync(file, "utf8");

    it("create: a record per GPU and dcgm-exporter's mapping; a second container on the same GPUs adds its line", () => {
        // What Concourse gives a get step's container; a task's carries no BUILD_* (docs/gpu-metrics.md).
        create("jobs-get", ["PATH=/bin", "BUILD_TEAM_NAME=main", "BUILD_PIPELINE_NAME=train", "BUILD_JOB_NAME=fit", "BUILD_NAME=7", "BUILD_ID=42"]);
        create("jobs-task", ["PATH=/bin"]);
        for (const gpu of ["0", "1"]) {
            assert.strictEqual(
                read(path.join(records(), gpu, "jobs-get")),
                `container=jobs-get\nteam=main\npipeline=train\njob=fit\nbuild=7\nbuild_id=42\nrunc_root=${runcRoot()}\n`,
            );
            assert.strictEqual(
                read(path.join(records(), gpu, "jobs-task")),
                `container=jobs-task\nteam=\npipeline=\njob=\nbuild=\nbuild_id=\nrunc_root=${runcRoot()}\n`,
            );
            assert.strictEqual(read(path.join(mapping(), gpu)), "jobs-get\njobs-task\n");
        }
        assert.deepStrictEqual(fs.readdirSync(mapping()).sort(), ["0", "1"], "no temp file left in the mapping folder");
        const state = JSON.parse(sh(realRunc(), ["--root", runcRoot(), "state", "jobs-task"]));
        assert.strictEqual(state.status, "created");
    });

    /** Runs the metrics script over the records with a real node exporter; the file's families (readMetrics). */
    async function metricsNow() {
        const textfiles = path.join(dir, `textfile-${Math.random().toString(36).slice(2)}`);
        fs.mkdirSync(textfiles);
        const exporter = new TestNodeExporter(textfiles);
        await exporter.start();
        try {
            const bin = fakeNvidiaSmi(path.join(dir, "fake"), "hgx-h100-8x");
            const r = collect(bin, [
                "--vendor",
                "nvidia",
                "--gpus",
                "0,1",
                "--textfile-dir",
                textfiles,
                "--jobs-dir",
                records(),
                "--health-dir",
                path.join(dir, "none"),
            ]);
            assert.strictEqual(r.status, 0, r.stderr);
            return await readMetrics(textfiles, exporter);
        } finally {
            await exporter.stop();
            fs.rmSync(textfiles, { recursive: true, force: true });
        }
    }

    it("the records label the metrics a real node exporter serves while the containers hold the GPUs", async () => {
        const s = samplesOf(await metricsNow());
        const held = pick(s, "gpu_workers_gpu_temperature_celsius", { gpu: "0", container: "jobs-get" });
        assert.deepStrictEqual(
            held.map((x) => [x.labels.team, x.labels.pipeline, x.labels.job, x.labels.build, x.value]),
            [["main", "train", "fit", "7", 29]],
        );
        assert.strictEqual(pick(s, "gpu_workers_gpu_temperature_celsius", { gpu: "1" }).length, 2, "both containers hold GPU 1");
    });

    it("hostile build values: the wrapper drops their line breaks, and each label reads back exactly as the record holds it, with no sample added", async () => {
        const env = {
            BUILD_TEAM_NAME: 'x"} 1\ngpu_workers_gpu_healthy{gpu="0"} 0 #',
            BUILD_PIPELINE_NAME: "a\\b",
            BUILD_JOB_NAME: "a\\",
            BUILD_NAME: 'say "hi"\r\n',
            BUILD_ID: '\\"\t}',
        };
        create("jobs-hostile", ["PATH=/bin", ...Object.entries(env).map(([k, v]) => `${k}=${v}`)]);
        try {
            const record = read(path.join(records(), "0", "jobs-hostile"));
            assert.strictEqual(
                record,
                `container=jobs-hostile\nteam=x"} 1gpu_workers_gpu_healthy{gpu="0"} 0 #\npipeline=a\\b\njob=a\\\nbuild=say "hi"\nbuild_id=\\"}\nrunc_root=${runcRoot()}\n`,
                "control characters dropped, backslashes and quotes kept",
            );
            const held = Object.fromEntries(
                record
                    .trimEnd()
                    .split("\n")
                    .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
                    .filter(([key]) => key !== "runc_root"),
            );
            const families = await metricsNow();
            const perGpu = families.filter((f) => f.name !== "gpu_workers_tool_success");
            assert.deepStrictEqual(
                perGpu.map((f) => f.name),
                [
                    "gpu_workers_gpu_memory_total_bytes",
                    "gpu_workers_gpu_memory_used_bytes",
                    "gpu_workers_gpu_power_watts",
                    "gpu_workers_gpu_temperature_celsius",
                    "gpu_workers_gpu_utilization_percent",
                ],
                "no metric but the script's",
            );
            for (const f of perGpu) {
                const series = f.metrics.map((m) => `${m.labels.gpu}/${m.labels.container}`).sort();
                assert.deepStrictEqual(
                    series,
                    ["0/jobs-get", "0/jobs-hostile", "0/jobs-task", "1/jobs-get", "1/jobs-hostile", "1/jobs-task"],
                    `${f.name}: one series per GPU and holder`,
                );
                for (const m of f.metrics.filter((m) => m.labels.container === "jobs-hostile")) {
                    const { gpu, bus_id, uuid, ...build } = m.labels;
                    assert.deepStrictEqual(build, held, `${f.name} on GPU ${gpu} (${bus_id}, ${uuid}): each label as the record holds it`);
                }
            }
        } finally {
            wrapped(["delete", "--force", "jobs-hostile"]);
            created.splice(created.indexOf("jobs-hostile"), 1);
        }
    });

    it("delete: the C front removes the container's records and its mapping lines, without reading the settings", () => {
        // Settings Go would refuse: delete must not need them (the front never starts Go for it).
        writeSettings(settingsPath, "not json\n");
        try {
            wrapped(["delete", "--force", "jobs-get"]);
        } finally {
            writeSettings(settingsPath, settingsJson);
        }
        for (const gpu of ["0", "1"]) {
            assert.deepStrictEqual(fs.readdirSync(path.join(records(), gpu)), ["jobs-task"]);
            assert.strictEqual(read(path.join(mapping(), gpu)), "jobs-task\n", "the other container's line stays");
        }
        wrapped(["delete", "--force", "jobs-task"]);
        for (const gpu of ["0", "1"]) assert.deepStrictEqual(fs.readdirSync(path.join(records(), gpu)), []);
        assert.deepStrictEqual(fs.readdirSync(mapping()), [], "no GPU held: no mapping file");
        const gone = spawnSync(realRunc(), ["--root", runcRoot(), "state", "jobs-task"], { encoding: "utf8" });
        assert.notStrictEqual(gone.status, 0, "runc deleted the container too");
    });

    it("a records' folder others can write is left alone: delete removes nothing through it", () => {
        create("jobs-kept", ["PATH=/bin"]);
        fs.chmodSync(records(), 0o777);
        try {
            wrapped(["delete", "--force", "jobs-kept"]);
            assert.ok(fs.existsSync(path.join(records(), "0", "jobs-kept")), "the front refused the folder");
        } finally {
            fs.chmodSync(records(), 0o755);
        }
    });

    /** Every file and folder below top, with each file's content. */
    function snapshot(top: string): Record<string, string> {
        const out: Record<string, string> = {};
        for (const name of fs.readdirSync(top, { recursive: true }) as string[]) {
            const p = path.join(top, name);
            out[name] = fs.lstatSync(p).isDirectory() ? "(folder)" : read(p);
        }
        return out;
    }

    /**
     * Replaces the folder `component` by a link to a copy of it (so that following the link would
     * work), runs `action`, puts the folder back, and checks that nothing changed in the copy.
     */
    function throughLinkAt(component: string, action: () => void): void {
        const outside = fs.mkdtempSync(path.join(dir, "outside-"));
        fs.cpSync(component, outside, { recursive: true });
        fs.writeFileSync(path.join(outside, "not-the-wrappers"), "stays\n");
        const before = snapshot(outside);
        fs.renameSync(component, `${component}.real`);
        fs.symlinkSync(outside, component);
        try {
            action();
        } finally {
            fs.unlinkSync(component);
            fs.renameSync(`${component}.real`, component);
        }
        assert.deepStrictEqual(snapshot(outside), before, `root wrote through a link at ${path.relative(dir, component)}`);
        fs.rmSync(outside, { recursive: true });
    }

    it("create (Go) and delete (the C front) follow no link planted at any level of the mapping and records' folders", () => {
        const levels = [path.join(dir, "dcgm"), mapping(), path.join(dir, "run"), records()];
        levels.forEach((component, i) => {
            const id = `jobs-link-${i}`;
            // Create writes nothing through the link; the container is created all the same. (The
            // state folder itself, dir/run, holds the wrapper's other caches, written by path; its
            // create is left to the Go tests.)
            if (component !== path.join(dir, "run")) throughLinkAt(component, () => create(id, ["PATH=/bin"]));
            else create(id, ["PATH=/bin"]);
            create(`${id}-other`, ["PATH=/bin"]);
            // The records and mapping of both are in place; delete one through the link.
            assert.match(read(path.join(mapping(), "0")), new RegExp(`^${id}-other$`, "m"));
            throughLinkAt(component, () => wrapped(["delete", "--force", id]));
        });
    });

    it("delete writes no mapping through a folder others could change: sticky only above the mapping folder, root's all the way", () => {
        const above = path.join(dir, "dcgm");
        const cases: { name: string; folder: string; mode: number; owner?: number; rewritten: boolean }[] = [
            { name: "the mapping folder writable by all, sticky", folder: mapping(), mode: 0o1777, rewritten: false },
            { name: "a folder above writable by its group", folder: above, mode: 0o775, rewritten: false },
            { name: "a folder above owned by nobody", folder: above, mode: 0o755, owner: 65534, rewritten: false },
            { name: "a folder above writable by all, sticky (as /tmp)", folder: above, mode: 0o1777, rewritten: true },
        ];
        cases.forEach((c, i) => {
            const id = `jobs-mode-${i}`;
            create(id, ["PATH=/bin"]);
            assert.match(read(path.join(mapping(), "0")), new RegExp(`^${id}$`, "m"));
            fs.chmodSync(c.folder, c.mode);
            if (c.owner !== undefined) fs.chownSync(c.folder, c.owner, c.owner);
            try {
                wrapped(["delete", "--force", id]);
            } finally {
                fs.chownSync(c.folder, 0, 0);
                fs.chmodSync(c.folder, 0o755);
            }
            const listed = new RegExp(`^${id}$`, "m").test(read(path.join(mapping(), "0")));
            assert.strictEqual(listed, !c.rewritten, `${c.name}: the mapping was ${listed ? "not " : ""}written again`);
        });
    });
});
