/**
 * The GPU health watcher (host/gpu-health-watch.sh) as a host runs it, with the config the chain
 * renders: recorded driver lines reach it as the kernel's own records (the record format of
 * /dev/kmsg, through a FIFO: only the kernel writes facility 0 there), with PCI addresses unique
 * to this run. nvidia-smi, systemd and the Concourse worker are stand-ins (gpu-health-support.ts):
 * no GPU here, and no systemd. What a task can write to the real kernel log: gpu-health-forgery.test.ts.
 * Under real systemd: gpu-health-systemd.test.ts; with a real Concourse worker: gpu-health-concourse.test.ts.
 */
import * as assert from "assert";
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import { GpuInventoryInput } from "../../components/lib/gpu/inventory";
import { XID_TABLE } from "../../components/lib/gpu/xids";
import { INTEL_FLEX_170_X2 } from "../fixtures/stacks/inventories";
import { capture, fallenOff, forgedNames, kernelLine, segfaultLine, uniqueDomain, WatcherRun, withDomain, xpuAnswer } from "./gpu-health-support";

const FAST = { pollSeconds: 1, settleSeconds: 3, dirtyGraceSeconds: 2 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The HGX capture's GPUs (0D..14 in PCI order), in the run's domain, with its four NVSwitches. */
function hgx(domain: string): GpuInventoryInput {
    return {
        vendor: "nvidia",
        nvswitches: 4,
        gpus: ["0D", "0E", "0F", "10", "11", "12", "13", "14"].map((b, index) => ({
            index,
            model: "NVIDIA H100 80GB HBM3",
            memoryMiB: 81559,
            pciBusId: withDomain(`00000000:${b}:00.0`, domain),
        })),
    };
}

/** The single H100 of the h100-vm-1x capture (00:06.0), in the run's domain. */
function h100(domain: string): GpuInventoryInput {
    return { vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: withDomain("00000000:00:06.0", domain) }] };
}

/** INTEL_FLEX_170_X2's GPUs (0000:4d:00.0, 0000:5e:00.0) in the run's domain, on `driver`. */
function flex(domain: string, driver: "i915" | "xe" = "i915"): GpuInventoryInput {
    return { vendor: "intel", gpus: INTEL_FLEX_170_X2.gpus!.map((g) => ({ ...g, driver, pciBusId: withDomain(g.pciBusId!, domain) })) };
}

/** Each GPU's PCI device in the watcher's sysfs, with its drm folder (what the driver makes when bound); returns the device folders. */
function pciDevices(root: string, domain: string): string[] {
    return ["4d", "5e"].map((b, i) => {
        const dev = `${root}/sys/bus/pci/devices/${domain}:${b}:00.0`;
        fs.mkdirSync(`${dev}/drm/card${i}`, { recursive: true });
        return dev;
    });
}

describe("GPU health watcher (recorded kernel records; stand-in nvidia-smi, systemd and worker)", function () {
    this.timeout(120_000);
    let run: WatcherRun;
    let domain: string;

    beforeEach(() => {
        run = new WatcherRun();
        domain = uniqueDomain();
    });
    afterEach(async () => {
        const unexpected = run.unexpected();
        await run.stop();
        assert.strictEqual(unexpected, "", "a stand-in was asked what no capture answers");
    });

    it("Xid 13, and an Xid on a GPU not selected, change nothing; Xid 79 lands the worker within 10 s and says why; healthy past the settle time, it runs again", async () => {
        const healthy = capture("hgx-h100-8x", "nvidia-smi-q.txt", domain);
        run.answer(healthy);
        run.startWorker();
        await run.start(hgx(domain), { selection: [0, 1], health: FAST });
        const [gpu0, gpu1, gpu2] = [0, 1, 2].map((i) => hgx(domain).gpus![i].pciBusId!);

        run.kernel(kernelLine("xid-13", gpu0));
        run.kernel(kernelLine("xid-79", gpu2));
        await run.until(() => run.rows()[0][3] === "1", 5000, "the Xid 13 to be counted");
        await sleep(3000);
        assert.strictEqual(run.workerState(), "running");
        assert.strictEqual(run.status(), "healthy");
        assert.deepStrictEqual(run.rows(), [
            ["0", `${domain}:0d:00.0`, "1", "1", "13", ""],
            ["1", `${domain}:0e:00.0`, "1", "0", "", ""],
        ]);
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\): Xid 13 \(Graphics Engine Exception.*\), ignored/);
        assert.doesNotMatch(run.logText(), /unhealthy|0f:00/);

        run.kernel(kernelLine("xid-79", gpu1));
        const took = await run.until(() => ["landing", "landed"].includes(run.workerState()), 10_000, "the worker to land");
        assert.ok(took < 10_000);
        assert.match(run.logText(), new RegExp(`GPU 1 \\(${domain}:0e:00\\.0\\) unhealthy: Xid 79: GPU has fallen off the bus`));
        await run.until(() => /land concourse-worker\.service \(SIGUSR1\)/.test(run.logText()), 2000, "the watcher to say it landed the worker");
        await run.until(() => run.status() === "landed", 2000, "the status to say landed");
        assert.deepStrictEqual(run.rows()[1], ["1", `${domain}:0e:00.0`, "0", "1", "79", "Xid 79: GPU has fallen off the bus"]);

        // Still lost past the settle time: the worker stays landed.
        run.answer(fallenOff(gpu1), 15);
        await run.until(() => /GPU 1 \([0-9a-f:.]+\) (still )?unhealthy: lost/.test(run.logText()), 5000, "the poll to find GPU 1 lost");
        await run.until(() => run.workerState() === "landed", 10_000, "the landing worker to exit landed");
        await sleep(4500);
        assert.strictEqual(run.workerState(), "landed");
        assert.strictEqual(run.status(), "landed");

        run.answer(healthy);
        await run.until(() => run.workerState() === "running", 10_000, "the worker to run again");
        await run.until(() => run.status() === "healthy", 3000, "the status to say healthy");
        assert.match(run.logText(), /every GPU healthy for 3s: started concourse-worker\.service again/);
        assert.deepStrictEqual(
            run.rows().map((r) => r[2]),
            ["1", "1"],
        );
    });

    it("retire: Xid 48 retires the worker while the GPU reports uncorrectable ECC errors; Xid 31 is ignored", async () => {
        const healthy = capture("h100-vm-1x", "nvidia-smi-q.txt", domain);
        const dbe = healthy.replace(/(Volatile[\s\S]*?DRAM Uncorrectable\s+:) 0/, "$1 2");
        assert.notStrictEqual(dbe, healthy);
        run.answer(healthy);
        run.startWorker();
        await run.start(h100(domain), { health: { ...FAST, onFatal: "retire" } });
        const gpu = h100(domain).gpus![0].pciBusId!;

        run.kernel(kernelLine("xid-31", gpu));
        await run.until(() => run.rows()[0][4] === "31", 5000, "the Xid 31 to be counted");
        assert.strictEqual(run.workerState(), "running");

        run.kernel(kernelLine("xid-48", gpu));
        await run.until(() => run.workerState() === "retired", 10_000, "the worker to retire");
        run.answer(dbe);
        assert.strictEqual(run.status(), "retired");
        assert.match(run.logText(), /unhealthy: Xid 48: Double Bit ECC Error/);
        await run.until(() => /retire concourse-worker\.service \(SIGUSR2\)/.test(run.logText()), 2000, "the watcher to say it retired the worker");
        await sleep(4500);
        assert.strictEqual(run.workerState(), "retired", "the ECC count keeps the GPU unhealthy");
        assert.match(run.logText(), /uncorrectable ECC errors \(2 since the driver loaded\)/);

        run.answer(healthy);
        await run.until(() => run.workerState() === "running", 10_000, "the worker to run again");
    });

    it("the poll alone: a row-remap failure lands the worker with no kernel line", async () => {
        const healthy = capture("h100-vm-1x", "nvidia-smi-q.txt", domain);
        const remap = healthy.replace(/(Remapping Failure Occurred\s+:) No/, "$1 Yes");
        assert.notStrictEqual(remap, healthy);
        run.answer(remap);
        run.startWorker();
        await run.start(h100(domain), { health: FAST });
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\) unhealthy: row-remap failure/);
    });

    it("fatalXids takes Xid 13 from the ignore list, and then it lands the worker", async () => {
        run.answer(capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(h100(domain), { health: { ...FAST, fatalXids: [13] } });
        run.kernel(kernelLine("xid-13", h100(domain).gpus![0].pciBusId!));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
    });

    it("SXid: a non-fatal one is noted, a fatal one on the board's NVSwitch lands the worker", async () => {
        run.answer(capture("hgx-h100-8x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(hgx(domain), { selection: [0, 1, 2, 3], health: FAST });
        const nvswitch = withDomain("00000000:0b:00.0", domain);
        run.kernel(kernelLine("sxid-nonfatal", nvswitch));
        await run.until(() => run.logText().includes("non-fatal SXid 12028"), 5000, "the SXid to be noted");
        await sleep(1500);
        assert.strictEqual(run.workerState(), "running");
        run.kernel(kernelLine("sxid-fatal", nvswitch));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
        assert.match(run.logText(), new RegExp(`unhealthy: fatal SXid 20034 on NVSwitch ${domain}:0b:00\\.0`));
    });

    it("amdgpu: an all-clear RAS line changes nothing; a GPU reset lands the worker; so do uncorrectable RAS errors", async () => {
        const bus = withDomain("0000:03:00.0", domain);
        const device = `${run.root}/sys/bus/pci/devices/${domain}:03:00.0`;
        spawnSync("mkdir", ["-p", `${device}/ras`, `${run.root}/sys/class/drm/renderD128`]);
        // No bus id declared: the watcher finds it from the render node's device link.
        spawnSync("ln", ["-s", `../../../bus/pci/devices/${domain}:03:00.0`, `${run.root}/sys/class/drm/renderD128/device`]);
        spawnSync("sh", ["-c", 'printf "ue: 0\\nce: 0\\n" > "$1"', "sh", `${device}/ras/umc_err_count`]);
        run.startWorker();
        await run.start({ vendor: "amd", gpus: [{ index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a" }] }, { health: FAST });
        run.kernel(kernelLine("amdgpu-ras-clear", bus));
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        run.kernel(kernelLine("amdgpu-reset", bus));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
        assert.match(run.logText(), /unhealthy: amdgpu GPU reset/);
        await run.until(() => run.workerState() === "running", 10_000, "the worker to run again");
        run.kernel(kernelLine("amdgpu-ras", bus));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land again");
        assert.match(run.logText(), /amdgpu RAS: 2 uncorrectable errors in the umc block/);
    });

    it("dirty: a process of a container's pid namespace holds the GPU unnoticed; one of none lands the worker after the grace", async () => {
        const healthy = capture("h100-vm-1x", "nvidia-smi-q.txt", domain);
        const gpu = h100(domain).gpus![0].pciBusId!;
        const children: ChildProcess[] = [];
        try {
            const contained = spawn("unshare", ["--pid", "--fork", "--mount-proc", "sleep", "60"], { stdio: "ignore" });
            children.push(contained);
            await sleep(300);
            const inner = spawnSync("pgrep", ["-P", String(contained.pid)], { encoding: "utf8" }).stdout.trim();
            assert.match(inner, /^[0-9]+$/, "the contained process");
            run.answer(healthy, 0, `${gpu}, ${inner}\n`);
            run.startWorker();
            await run.start(h100(domain), { health: FAST });
            await sleep(4000);
            assert.strictEqual(run.workerState(), "running");
            assert.doesNotMatch(run.logText(), /no running container/);

            const stray = spawn("sleep", ["60"], { stdio: "ignore" });
            children.push(stray);
            run.answer(healthy, 0, `${gpu}, ${inner}\n${gpu}, ${stray.pid}\n`);
            await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
            assert.match(run.logText(), new RegExp(`unhealthy: dirty: compute processes of no running container \\(pid ${stray.pid}\\) for 2s`));
            run.answer(healthy);
            await run.until(() => run.workerState() === "running", 10_000, "the worker to run again");
        } finally {
            for (const c of children) c.kill("SIGKILL");
        }
    });

    it("only the kernel's records count: the driver's own Xid 79 line in any other facility (where a process's write to /dev/kmsg lands) changes nothing", async () => {
        run.answer(capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(h100(domain), { health: FAST });
        const line = kernelLine("xid-79", h100(domain).gpus![0].pciBusId!);
        for (const facility of [1, 3, 23]) run.kmsg!.record(line, facility);
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        assert.deepStrictEqual(run.rows()[0].slice(2), ["1", "0", "", ""], "not even counted");
        run.kernel(line);
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land on the kernel's own record");
    });

    it("the driver's layout from the message's start: the kernel's segfault lines of programs named as driver lines change nothing, line breaks and all", async () => {
        run.answer(capture("hgx-h100-8x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(hgx(domain), { selection: [0, 1], health: FAST });
        const gpu0 = hgx(domain).gpus![0].pciBusId!;
        const nvrm = kernelLine("xid-79", gpu0).match(/PCI:([^)]+)\)/)![1];
        for (const name of forgedNames(nvrm, `${domain}:0b:00.0`)) run.kernel(segfaultLine(name));
        // The same text behind any prefix of the kernel's: never the driver's line.
        run.kernel(`traps: ${kernelLine("xid-79", gpu0)}`);
        run.kernel(` ${kernelLine("sxid-fatal", withDomain("0000:0b:00.0", domain))}`);
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        assert.doesNotMatch(run.logText(), /unhealthy|SXid/);
        assert.deepStrictEqual(run.rows()[0].slice(2), ["1", "0", "", ""]);
        run.kernel(kernelLine("sxid-fatal", withDomain("0000:0b:00.0", domain)));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land on the driver's own line");
    });

    it("amdgpu's layout from the message's start: segfault lines of programs named as its reset and RAS lines change nothing", async () => {
        const bus = withDomain("0000:03:00.0", domain);
        fs.mkdirSync(`${run.root}/sys/bus/pci/devices/${domain}:03:00.0`, { recursive: true });
        run.startWorker();
        await run.start(
            { vendor: "amd", gpus: [{ index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a", pciBusId: bus }] },
            { health: FAST },
        );
        for (const name of forgedNames(`${domain}:03:00`, `${domain}:03:00.0`)) run.kernel(segfaultLine(name));
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        assert.doesNotMatch(run.logText(), /unhealthy/);
        run.kernel(kernelLine("amdgpu-ras", bus));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land on the driver's own line");
    });

    it("an Xid the watcher's table does not know is fatal", async () => {
        const unknown = 157;
        assert.ok(!XID_TABLE.some((x) => x.code === unknown), "the test needs an Xid outside the table");
        run.answer(capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(h100(domain), { health: FAST });
        run.kernel(kernelLine("xid-79", h100(domain).gpus![0].pciBusId!).replace("): 79, ", `): ${unknown}, `));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
        assert.match(run.logText(), new RegExp(`unhealthy: Xid ${unknown}: not in the watcher's table`));
    });

    it("a record the read's timeout cut in two is read as one: its second half is never a record of its own", async () => {
        run.answer(capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
        run.startWorker();
        await run.start(h100(domain), { health: FAST });
        const line = kernelLine("xid-79", h100(domain).gpus![0].pciBusId!);
        // A message whose rest, read alone, would be a kernel record holding the driver's line.
        run.kmsg!.write(`6,900,1,-;a process wrote `);
        await sleep(1500);
        run.kmsg!.write(`4,901,2,-;${line}\n`);
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        // The driver's own line, cut by the timeout: it lands the worker once whole.
        const cut = line.indexOf("79,");
        run.kmsg!.write(`4,902,3,-;${line.slice(0, cut)}`);
        await sleep(1500);
        run.kmsg!.write(`${line.slice(cut)}\n`);
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land");
    });

    it("pool: Xid 79 on GPU 1 of two takes GPU 1 out of the pool and the worker keeps running; with GPU 0 lost too it lands; a GPU settled brings it back", async () => {
        const healthy = capture("hgx-h100-8x", "nvidia-smi-q.txt", domain);
        run.answer(healthy);
        run.startWorker();
        await run.start(hgx(domain), { selection: [0, 1], health: FAST, pool: true });
        const [gpu0, gpu1] = [0, 1].map((i) => hgx(domain).gpus![i].pciBusId!);

        run.kernel(kernelLine("xid-79", gpu1));
        await run.until(() => run.rows()[1][2] === "0" && run.status() === "degraded", 5000, "GPU 1 to leave the pool");
        assert.match(run.logText(), /GPU 1 is out of the pool: new containers get other GPUs/);
        await sleep(1500);
        assert.strictEqual(run.workerState(), "running", "one healthy GPU left: the worker serves");
        assert.deepStrictEqual(run.rows()[0].slice(2, 4), ["1", "0"]);

        run.answer(fallenOff(gpu0), 15);
        await run.until(() => ["landing", "landed"].includes(run.workerState()), 10_000, "the worker to land once no GPU is healthy");
        await run.until(() => run.workerState() === "landed", 10_000, "the landing worker to exit");

        run.answer(healthy);
        await run.until(() => run.workerState() === "running", 15_000, "the worker to run again once a GPU has settled");
        assert.match(run.logText(), /a GPU healthy for 3s: started concourse-worker\.service again/);
        await run.until(() => run.status() === "healthy", 10_000, "both GPUs back in the pool");
        assert.match(run.logText(), /GPU 1 \([0-9a-f:.]+\) healthy again: back in the pool/);
    });
    it("Intel i915 with xpu-smi: a hang, an engine and a chip reset are counted and noted; a critical component lands the worker; a failed reset wedges the GPU until the driver is bound again", async () => {
        const inventory = flex(domain);
        const [dev0] = pciDevices(run.root, domain);
        const discovery = xpuAnswer("discovery-flex-170-x2.json", domain);
        const healthy = xpuAnswer("health-flex-170-x2.json", domain);
        // Device 0's memory (the first in the answer) critical.
        const critical = healthy.replace(/("memory": \{\s+"description": "[^"]*",\s+"status": )"OK"/, '$1"Critical"');
        assert.notStrictEqual(critical, healthy);
        run.xpuSmi({ discovery, health: healthy });
        run.startWorker();
        await run.start(inventory, { health: FAST });
        const [gpu0, gpu1] = inventory.gpus!.map((g) => g.pciBusId!);

        for (const name of ["i915-hang", "i915-engine-reset", "i915-chip-reset", "i915-chip-reset-6.1"]) run.kernel(kernelLine(name, gpu1));
        await run.until(() => run.rows()[1][3] === "4", 5000, "the four events to be counted");
        await sleep(1500);
        assert.strictEqual(run.workerState(), "running");
        assert.strictEqual(run.status(), "healthy");
        assert.deepStrictEqual(run.rows(), [
            ["0", `${domain}:4d:00.0`, "1", "0", "", ""],
            ["1", `${domain}:5e:00.0`, "1", "4", "", ""],
        ]);
        const said = run.logText();
        assert.match(said, new RegExp(`GPU 1 \\(${domain}:5e:00\\.0\\): i915 GPU hang \\(a job's context\\), noted`));
        assert.match(said, /GPU 1 \([0-9a-f:.]+\): i915 reset engine rcs0, noted/);
        assert.strictEqual(said.match(/i915 reset the whole GPU, noted/g)?.length, 2);
        assert.doesNotMatch(said, /unhealthy|xpu-smi is not installed/);

        run.xpuSmi({ discovery, health: critical });
        await run.until(() => ["landing", "landed"].includes(run.workerState()), 10_000, "the worker to land on the critical component");
        assert.match(run.logText(), new RegExp(`GPU 0 \\(${domain}:4d:00\\.0\\) unhealthy: xpu-smi health: critical \\(memory\\)`));
        run.xpuSmi({ discovery, health: healthy });
        await run.until(() => run.workerState() === "running", 15_000, "the worker to run again once GPU 0 polls healthy");

        run.kernel(kernelLine("i915-reset-failed", gpu0));
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land on the failed reset");
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\) unhealthy: i915: the GPU reset failed \(the driver wedged the GPU\)/);
        await sleep(4500);
        assert.strictEqual(run.workerState(), "landed", "a wedged GPU never settles by polls alone");
        assert.strictEqual(run.status(), "landed");
        // A watcher restarted (systemd's Restart=always) keeps the wedge.
        await run.restart();
        await sleep(4500);
        assert.strictEqual(run.workerState(), "landed", "the restarted watcher still counts the GPU wedged");
        assert.match(run.rows()[0][5], /i915: the GPU reset failed/);

        // The driver bound again: its drm folder made anew.
        fs.renameSync(`${dev0}/drm`, `${dev0}/drm.before`);
        fs.mkdirSync(`${dev0}/drm/card0`, { recursive: true });
        await run.until(() => run.workerState() === "running", 15_000, "the worker to run again once the driver is bound again");
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\): the driver is bound to it again; it no longer counts as wedged/);
    });

    it("Intel xe without xpu-smi: it says so once; an engine and a GT reset are noted; look-alikes change nothing; the wedged line lands the worker; a GPU gone from sysfs is lost", async () => {
        const inventory = flex(domain, "xe");
        const [, dev1] = pciDevices(run.root, domain);
        run.startWorker();
        await run.start(inventory, { health: FAST });
        const [gpu0] = inventory.gpus!.map((g) => g.pciBusId!);
        const bus0 = `${domain}:4d:00.0`;
        assert.strictEqual(
            run.logText().match(/xpu-smi is not installed: Intel GPUs are watched by the kernel's lines and their sysfs presence alone/g)?.length,
            1,
        );

        run.kernel(kernelLine("xe-engine-reset", gpu0));
        run.kernel(kernelLine("xe-gt-reset", gpu0));
        await run.until(() => run.rows()[0][3] === "2", 5000, "the two resets to be counted");
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\): xe reset a ccs engine, noted/);
        assert.match(run.logText(), /GPU 0 \([0-9a-f:.]+\): xe reset the GT, noted/);

        const wedged = kernelLine("xe-wedged", gpu0);
        // i915's line on an xe GPU; the wedge of another device; a GPU not watched, and another function of the watched one's slot;
        // the wedge in other facilities; behind a prefix; without [drm]; a program named as it.
        run.kernel(kernelLine("i915-reset-failed", gpu0));
        run.kernel(wedged.replace(`declared device ${bus0} as`, `declared device ${domain}:77:00.0 as`));
        run.kernel(kernelLine("xe-reset-failed", withDomain("0000:77:00.0", domain)));
        run.kernel(kernelLine("xe-reset-failed", withDomain("0000:4d:00.1", domain)));
        for (const facility of [1, 3, 23]) run.kmsg!.record(wedged, facility);
        run.kernel(`traps: ${wedged}`);
        run.kernel(kernelLine("xe-reset-failed", gpu0).replace(" [drm] ", " "));
        for (const name of forgedNames(`${domain}:4d:00`, bus0)) run.kernel(segfaultLine(name));
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running");
        assert.strictEqual(run.status(), "healthy");
        assert.doesNotMatch(run.logText(), /unhealthy/);
        assert.deepStrictEqual(run.rows()[0].slice(2), ["1", "2", "", ""], "none of them counted");

        run.kernel(wedged);
        await run.until(() => run.workerState() === "landed", 10_000, "the worker to land on the driver's own wedged line");
        assert.match(run.logText(), new RegExp(`GPU 0 \\(${domain}:4d:00\\.0\\) unhealthy: xe declared the GPU wedged`));

        fs.rmSync(dev1, { recursive: true });
        await run.until(
            () =>
                new RegExp(`GPU 1 \\(${domain}:5e:00\\.0\\) unhealthy: lost: its PCI device \\(/sys/bus/pci/devices/${domain}:5e:00\\.0\\) is gone`).test(
                    run.logText(),
                ),
            5000,
            "the poll to find GPU 1 lost",
        );
    });

    it("Intel pool: a failed xe reset on GPU 1 takes it out of the pool and the worker serves on GPU 0; an xpu-smi that answers no device list is said once", async () => {
        const inventory = flex(domain, "xe");
        pciDevices(run.root, domain);
        run.xpuSmi({
            discovery: xpuAnswer("discovery-flex-170-x2.json", domain),
            health: '{\n    "errno": 3,\n    "error": "Level Zero Initialization Error"\n}\n',
        });
        run.startWorker();
        await run.start(inventory, { health: FAST, pool: true });
        run.kernel(kernelLine("xe-reset-failed", inventory.gpus![1].pciBusId!));
        await run.until(() => run.rows()[1][2] === "0" && run.status() === "degraded", 5000, "GPU 1 to leave the pool");
        assert.match(run.logText(), /GPU 1 \([0-9a-f:.]+\) unhealthy: xe: the GT reset failed/);
        assert.match(run.logText(), /GPU 1 is out of the pool: new containers get other GPUs/);
        await sleep(2500);
        assert.strictEqual(run.workerState(), "running", "GPU 0 is healthy: the worker serves");
        assert.deepStrictEqual(run.rows()[0].slice(2), ["1", "0", "", ""]);
        assert.strictEqual(run.logText().match(/xpu-smi gave no health answer: this poll has sysfs presence alone/g)?.length, 1);
    });
});
