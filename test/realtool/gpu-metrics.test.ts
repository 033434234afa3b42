/**
 * host/gpu-metrics.sh through a real node exporter: the stand-in nvidia-smi or xpu-smi answers
 * with a fixture's recorded output, the script writes the textfile, and the exporter's /metrics,
 * scraped over HTTP, carries each selected GPU's values, the build labels of the containers
 * holding it (the runc wrapper's records) and the health watcher's state where it has one.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Family, promtextBinary } from "../support/promtext";
import { collect, fakeNvidiaSmi, fakeXpuSmi, METRICS_SCRIPT, pick, readMetrics, samplesOf, TestNodeExporter } from "./metrics-support";
import { tempDir } from "./wrapper-support";

const MIB = 1048576;

describe("GPU metrics through a real node exporter", function () {
    this.timeout(60_000);
    let dir: string;
    let textfiles: string;
    let jobs: string;
    let health: string;
    let exporter: TestNodeExporter;

    before(async function () {
        this.timeout(300_000); // the parser's first build may fetch its modules
        dir = tempDir("gw-metrics-");
        textfiles = path.join(dir, "textfile");
        fs.mkdirSync(textfiles);
        exporter = new TestNodeExporter(textfiles);
        await exporter.start();
        promtextBinary();
    });

    after(async () => {
        await exporter?.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    beforeEach(() => {
        jobs = path.join(dir, `jobs-${Math.random().toString(36).slice(2)}`);
        health = path.join(dir, `health-${Math.random().toString(36).slice(2)}`);
        fs.mkdirSync(jobs);
    });

    function record(gpu: number, container: string, labels: Record<string, string>): void {
        fs.mkdirSync(path.join(jobs, String(gpu)), { recursive: true });
        const lines = ["container=" + container, ...["team", "pipeline", "job", "build", "build_id"].map((k) => `${k}=${labels[k] ?? ""}`)];
        fs.writeFileSync(path.join(jobs, String(gpu), container), lines.join("\n") + "\n");
    }

    /** Collects, and returns the file's families as Prometheus's parser reads them (readMetrics). */
    async function familiesAfter(fixture: string, gpus: string, vendor = "nvidia"): Promise<Family[]> {
        const r = collect(fakeNvidiaSmi(path.join(dir, fixture), fixture), [
            "--vendor",
            vendor,
            "--gpus",
            gpus,
            "--textfile-dir",
            textfiles,
            "--jobs-dir",
            jobs,
            "--health-dir",
            health,
        ]);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(fs.readdirSync(textfiles), ["gpu_workers.prom"], "one file, no temp file left");
        assert.strictEqual(fs.statSync(path.join(textfiles, "gpu_workers.prom")).mode & 0o777, 0o644);
        return readMetrics(textfiles, exporter);
    }

    const scrapeAfter = async (fixture: string, gpus: string, vendor = "nvidia") => samplesOf(await familiesAfter(fixture, gpus, vendor));

    it("H100 (recorded -q values): each metric with its value, labelled with the GPU; no health without the watcher", async () => {
        const s = await scrapeAfter("h100-vm-1x", "0");
        const gpu = { gpu: "0", bus_id: "00000000:00:06.0", uuid: "GPU-deb69b9f-716f-67d5-8533-708877fae1c4" };
        const value = (name: string) => pick(s, name, gpu).map((x) => x.value);
        assert.deepStrictEqual(value("gpu_workers_gpu_utilization_percent"), [0]);
        assert.deepStrictEqual(value("gpu_workers_gpu_memory_used_bytes"), [0]);
        assert.deepStrictEqual(value("gpu_workers_gpu_memory_total_bytes"), [81559 * MIB]);
        assert.deepStrictEqual(value("gpu_workers_gpu_temperature_celsius"), [48]);
        assert.deepStrictEqual(value("gpu_workers_gpu_power_watts"), [76.37]);
        assert.deepStrictEqual(value("gpu_workers_tool_success"), []);
        assert.deepStrictEqual(
            pick(s, "gpu_workers_tool_success", { vendor: "nvidia" }).map((x) => x.value),
            [1],
        );
        assert.strictEqual(pick(s, "gpu_workers_gpu_healthy").length, 0);
        assert.strictEqual(pick(s, "gpu_workers_worker_health").length, 0);
        assert.strictEqual(pick(s, "gpu_workers_gpu_temperature_celsius")[0].labels.container ?? "", "", "no container holds the GPU");
    });

    it("HGX, GPUs 2 and 5 selected: only those; the build's labels on the held GPU; the watcher's health", async () => {
        record(2, "4f1c-handle", { team: 'ml "core"', pipeline: "train", job: "fit", build: "12", build_id: "3456" });
        fs.mkdirSync(health);
        fs.writeFileSync(path.join(health, "gpus.tsv"), "2\t00000000:0F:00.0\t1\t0\t\t\n5\t00000000:12:00.0\t0\t2\t79\tfell off the bus\n");
        fs.writeFileSync(path.join(health, "status"), "landed\n");
        const s = await scrapeAfter("hgx-h100-8x", "2,5");
        const temps = pick(s, "gpu_workers_gpu_temperature_celsius");
        assert.deepStrictEqual(temps.map((t) => [t.labels.gpu, t.value]).sort(), [
            ["2", 31],
            ["5", 30],
        ]);
        const held = pick(s, "gpu_workers_gpu_utilization_percent", { gpu: "2" });
        assert.strictEqual(held.length, 1);
        assert.deepStrictEqual(
            {
                container: held[0].labels.container,
                team: held[0].labels.team,
                pipeline: held[0].labels.pipeline,
                job: held[0].labels.job,
                build: held[0].labels.build,
            },
            { container: "4f1c-handle", team: 'ml "core"', pipeline: "train", job: "fit", build: "12" },
        );
        assert.strictEqual(pick(s, "gpu_workers_gpu_power_watts", { gpu: "5" })[0].labels.container ?? "", "");
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_healthy")
                .map((x) => [x.labels.gpu, x.value])
                .sort(),
            [
                ["2", 1],
                ["5", 0],
            ],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_xid_count", { gpu: "5" }).map((x) => x.value),
            [2],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_last_xid").map((x) => [x.labels.gpu, x.value]),
            [["5", 79]],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_worker_health", { status: "landed" }).map((x) => x.value),
            [1],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_worker_health", { status: "healthy" }).map((x) => x.value),
            [0],
        );
    });

    it("two containers on one GPU: one series each, like dcgm-exporter's hpc_job", async () => {
        record(0, "handle-a", {});
        record(0, "handle-b", { team: "main" });
        const s = await scrapeAfter("h100-vm-1x", "0");
        const used = pick(s, "gpu_workers_gpu_memory_total_bytes");
        assert.deepStrictEqual(used.map((u) => u.labels.container).sort(), ["handle-a", "handle-b"]);
        assert.deepStrictEqual(
            used.map((u) => u.value),
            [81559 * MIB, 81559 * MIB],
        );
    });

    const H100_GPU = { gpu: "0", bus_id: "00000000:00:06.0", uuid: "GPU-deb69b9f-716f-67d5-8533-708877fae1c4" };
    const PER_GPU = [
        "gpu_workers_gpu_memory_total_bytes",
        "gpu_workers_gpu_memory_used_bytes",
        "gpu_workers_gpu_power_watts",
        "gpu_workers_gpu_temperature_celsius",
        "gpu_workers_gpu_utilization_percent",
    ];

    /** One container's record on the H100's GPU 0: every per-GPU family has one series, labelled exactly so; nothing else appears. */
    async function assertHeldExactly(container: string, build: Record<string, string>): Promise<void> {
        const families = await familiesAfter("h100-vm-1x", "0");
        assert.deepStrictEqual(families.map((f) => f.name).sort(), [...PER_GPU, "gpu_workers_tool_success"], "no metric but the script's");
        const labels = { ...H100_GPU, container, team: "", pipeline: "", job: "", build: "", build_id: "", ...build };
        for (const f of families.filter((f) => PER_GPU.includes(f.name))) {
            assert.deepStrictEqual(
                f.metrics.map((m) => m.labels),
                [labels],
                `${f.name}: one series, each label value as the record holds it`,
            );
        }
        assert.deepStrictEqual(families.find((f) => f.name === "gpu_workers_tool_success")?.metrics, [{ labels: { vendor: "nvidia" }, value: 1 }]);
    }

    it("backslashes alone (no quote, no line break) come back exactly: the script doubles them", async () => {
        // Each would be read as another value, or refused, were a backslash written as it is: `a\b` is no escape, `a\"` runs on.
        const build = { team: "a\\b", pipeline: "a\\", job: "\\\\", build: "\\n", build_id: "c:\\x\\" };
        record(0, "backslash-handle", build);
        await assertHeldExactly("backslash-handle", build);
    });

    it("hostile label values in a record (quotes, backslashes, a forged metric line) come back exactly and add no metric or sample", async () => {
        const build = {
            team: 'x"} 1 gpu_workers_gpu_healthy{gpu="0"} 0 #',
            pipeline: 'ml "core"',
            job: '\\"',
            build: 'a=b,c="d"}',
            build_id: "# HELP x y",
        };
        record(0, "hostile-handle", build);
        await assertHeldExactly("hostile-handle", build);
    });

    it("a line break never reaches a label: the record is read a line at a time, and a forged line after it is no key of a record", async () => {
        // The wrapper drops control characters (wrapper/gpujobs.go labelValue); a record written by anything else is read so too.
        const forged = 'x"}\ngpu_workers_gpu_healthy{gpu="0"} 0\nteam=forged';
        record(0, "break-handle", { team: forged });
        await assertHeldExactly("break-handle", { team: 'x"}' });
    });

    it("RTX A500: a power reading of [N/A] gives no power series, the rest stay", async () => {
        const s = await scrapeAfter("rtx-a500-laptop", "0");
        assert.strictEqual(pick(s, "gpu_workers_gpu_power_watts").length, 0);
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_memory_used_bytes").map((x) => x.value),
            [6 * MIB],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_temperature_celsius").map((x) => x.value),
            [41],
        );
    });

    it("nvidia-smi failing: tool_success 0, and the health metrics still come", async () => {
        fs.mkdirSync(health);
        fs.writeFileSync(path.join(health, "gpus.tsv"), "0\t00000000:00:06.0\t0\t1\t79\tfell off the bus\n");
        // This fixture has no capture of the metrics query: its stand-in fails as the real tool would.
        const s = await scrapeAfter("a100-80gb-mig", "0");
        assert.deepStrictEqual(
            pick(s, "gpu_workers_tool_success").map((x) => x.value),
            [0],
        );
        assert.strictEqual(pick(s, "gpu_workers_gpu_temperature_celsius").length, 0);
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_healthy", { gpu: "0", bus_id: "00000000:00:06.0" }).map((x) => x.value),
            [0],
        );
    });

    /** Collects for Intel GPUs with the stand-in xpu-smi of `fixture` (or none at all: `bin` alone), and scrapes. */
    async function intelAfter(fixture: string | undefined, gpus: string, busIds: string): Promise<ReturnType<typeof samplesOf>> {
        const bin = fixture ? fakeXpuSmi(path.join(dir, `xpu-${Math.random().toString(36).slice(2)}`), fixture) : fs.mkdtempSync(path.join(dir, "no-xpu-"));
        const r = collect(bin, [
            "--vendor",
            "intel",
            "--gpus",
            gpus,
            "--bus-ids",
            busIds,
            "--textfile-dir",
            textfiles,
            "--jobs-dir",
            jobs,
            "--health-dir",
            health,
        ]);
        assert.strictEqual(r.status, 0, r.stderr);
        return samplesOf(await readMetrics(textfiles, exporter));
    }

    const FLEX_0 = { gpu: "0", bus_id: "0000:4d:00.0", uuid: "00000000-0000-004d-0000-000056c08086" };
    const FLEX_PAIR = "0000:4d:00.0,0000:5e:00.0";
    const values = (s: ReturnType<typeof samplesOf>, name: string, match: Record<string, string> = {}) =>
        pick(s, name, match)
            .map((x) => [x.labels.gpu, x.value])
            .sort();

    it("Intel Flex 170 pair (xpu-smi): each GPU's values by its PCI address, N/A and blank values give no sample", async () => {
        const s = await intelAfter("flex-170-x2", "0,1", FLEX_PAIR);
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_utilization_percent", FLEX_0), [["0", 0]]);
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_utilization_percent"), [["0", 0]], "GPU 1's N/A gives no sample");
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_power_watts"), [
            ["0", 43.72],
            ["1", 43.74],
        ]);
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_temperature_celsius", FLEX_0), [["0", 41.5]]);
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_temperature_celsius"), [["0", 41.5]], "GPU 1's blank gives no sample");
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_memory_used_bytes"), [
            ["0", Math.round(17.52 * MIB)],
            ["1", Math.round(49.21 * MIB)],
        ]);
        assert.deepStrictEqual(values(s, "gpu_workers_gpu_memory_total_bytes"), [
            ["0", 16288 * MIB],
            ["1", 16288 * MIB],
        ]);
        assert.deepStrictEqual(
            pick(s, "gpu_workers_gpu_power_watts", { gpu: "1" }).map((x) => [x.labels.bus_id, x.labels.uuid, x.labels.container]),
            [["0000:5e:00.0", "00000000-0000-005e-0000-000056c08086", ""]],
        );
        assert.deepStrictEqual(
            pick(s, "gpu_workers_tool_success").map((x) => [x.labels.vendor, x.value]),
            [["intel", 1]],
        );
    });

    it("Intel: our index and xpu-smi's device id differ; the PCI address decides, and only the selected GPU is asked for", async () => {
        record(0, "flex-handle", { pipeline: "render" });
        // Index 0 is the card at 5e (xpu-smi's device 1): the script asks `dump -d 1,0` and labels each by address.
        const swapped = await intelAfter("flex-170-x2", "0,1", "0000:5e:00.0,0000:4d:00.0");
        assert.deepStrictEqual(values(swapped, "gpu_workers_gpu_power_watts"), [
            ["0", 43.74],
            ["1", 43.72],
        ]);
        assert.deepStrictEqual(
            pick(swapped, "gpu_workers_gpu_temperature_celsius").map((x) => [x.labels.gpu, x.labels.bus_id, x.value]),
            [["1", "0000:4d:00.0", 41.5]],
        );
        assert.deepStrictEqual(
            pick(swapped, "gpu_workers_gpu_power_watts", { gpu: "0" }).map((x) => [x.labels.container, x.labels.pipeline]),
            [["flex-handle", "render"]],
        );
        // GPU 1 alone (upper-case address as a user may write it): `dump -d 1`, nothing of GPU 0.
        const one = await intelAfter("flex-170-x2", "1", "0000:5E:00.0");
        assert.deepStrictEqual(values(one, "gpu_workers_gpu_power_watts"), [["1", 43.74]]);
        assert.deepStrictEqual(
            pick(one, "gpu_workers_tool_success", { vendor: "intel" }).map((x) => x.value),
            [1],
        );
    });

    it("Intel: xpu-smi failing (an error on stdout with exit 0, a non-zero exit, a GPU it does not know) gives tool_success 0, no values, health still", async () => {
        fs.mkdirSync(health);
        fs.writeFileSync(path.join(health, "gpus.tsv"), "0\t0000:4d:00.0\t1\t0\t\t\n");
        const cases: [string | undefined, string][] = [
            ["flex-170-x2", "0000:4d:00.0"], // the recorded dump for device 0 is an error, printed on stdout (exit 0)
            ["no-such-capture", "0000:4d:00.0"], // nothing recorded: the stand-in exits 98
            ["flex-170-x2", "0000:99:00.0"], // an address xpu-smi does not list: nothing to ask
        ];
        for (const [fixture, address] of cases) {
            const s = await intelAfter(fixture, "0", address);
            assert.deepStrictEqual(
                pick(s, "gpu_workers_tool_success", { vendor: "intel" }).map((x) => x.value),
                [0],
                `${fixture} ${address}`,
            );
            for (const name of [
                "gpu_workers_gpu_utilization_percent",
                "gpu_workers_gpu_power_watts",
                "gpu_workers_gpu_memory_total_bytes",
                "gpu_workers_gpu_memory_used_bytes",
            ])
                assert.strictEqual(pick(s, name).length, 0, `${name}: ${fixture} ${address}`);
            assert.deepStrictEqual(
                pick(s, "gpu_workers_gpu_healthy", { gpu: "0" }).map((x) => [x.labels.bus_id, x.value]),
                [[address, 1]],
            );
        }
    });

    it("Intel: no xpu-smi installed gives tool_success 0; --bus-ids must name one address per GPU", async () => {
        assert.notStrictEqual(spawnSync("sh", ["-c", "command -v xpu-smi"]).status, 0, "this test needs a machine without xpu-smi");
        const s = await intelAfter(undefined, "0,1", FLEX_PAIR);
        assert.deepStrictEqual(
            pick(s, "gpu_workers_tool_success").map((x) => [x.labels.vendor, x.value]),
            [["intel", 0]],
        );
        assert.strictEqual(s.filter((x) => x.name.startsWith("gpu_workers_gpu_")).length, 0);
        for (const [busIds, message] of [
            ["0000:4d:00.0", /--bus-ids: expected one PCI address for each of --gpus 0,1/],
            ["0000:4d:00.0,4d:00.0", /--bus-ids: expected a PCI address such as 0000:4d:00.0 \(got '4d:00.0'\)/],
        ] as const) {
            const r = collect(dir, ["--vendor", "intel", "--gpus", "0,1", "--bus-ids", busIds, "--textfile-dir", textfiles]);
            assert.notStrictEqual(r.status, 0);
            assert.match(r.stderr, message);
        }
    });

    it("ensure starts the timer and the node exporter; remove stops the timer, takes the file away and puts the exporter back as it was", () => {
        const calls = path.join(dir, "systemctl.calls");
        const bin = path.join(dir, "systemctl-bin");
        fs.mkdirSync(bin);
        // systemd is not PID 1 here: a stand-in records what the scripts ask of it; the exporter was disabled and stopped.
        fs.writeFileSync(
            path.join(bin, "systemctl"),
            `#!/bin/sh\necho "$*" >> ${calls}\ncase "$1" in is-enabled) echo disabled; exit 1 ;; is-active) echo inactive; exit 3 ;; esac\n`,
            { mode: 0o755 },
        );
        const run = (action: string) =>
            spawnSync("bash", [METRICS_SCRIPT, action, "--unit", "gpu-workers-metrics", "--textfile-dir", textfiles], {
                env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, GPU_WORKERS_STATE_DIR: path.join(dir, "state") },
                encoding: "utf8",
            });
        fs.writeFileSync(path.join(textfiles, "gpu_workers.prom"), "");
        assert.strictEqual(run("ensure").status, 0);
        assert.strictEqual(run("remove").status, 0);
        assert.deepStrictEqual(fs.readFileSync(calls, "utf8").trim().split("\n"), [
            "daemon-reload",
            "enable --now gpu-workers-metrics.timer",
            "is-enabled prometheus-node-exporter",
            "is-active prometheus-node-exporter",
            "enable --now prometheus-node-exporter",
            "disable --now gpu-workers-metrics.timer",
            // put back as it was: disabled and stopped
            "disable prometheus-node-exporter",
            "stop prometheus-node-exporter",
        ]);
        assert.ok(!fs.existsSync(path.join(textfiles, "gpu_workers.prom")));
        const bad = spawnSync("bash", [METRICS_SCRIPT, "ensure", "--unit", "../x", "--textfile-dir", textfiles], { encoding: "utf8" });
        assert.notStrictEqual(bad.status, 0);
        assert.match(bad.stderr, /--unit: expected a unit name/);
    });
});
