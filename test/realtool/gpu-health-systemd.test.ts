/**
 * The GPU health watcher under real systemd: a Debian 12 LXD container (the image the LXD tests
 * build) receives the files the chain renders for the watcher, and its installer's step runs
 * there as on a host; the Concourse worker's unit is the one the chain renders, its binary a
 * stand-in that lands on SIGUSR1 and exits 0 as Concourse's does (so the unit's own
 * Restart=on-failure decides what happens next), and nvidia-smi a stand-in answering with a
 * real capture. Xid lines reach the watcher as kernel records through the test's seam
 * (gpu-health-instance.ts).
 */
import * as assert from "assert";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { CONCOURSE_PATHS, ConcourseWorkerSettings, CONCOURSE_UNIT, renderWorkerUnit } from "../../components/lib/links/concourse-worker/render";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { HEALTH_UNIT, renderGpuHealth } from "../../components/lib/links/gpu-health/render";
import { capture, fallenOff, kernelLine, standinWorker, uniqueDomain, withDomain } from "./gpu-health-support";
import { HealthInstance } from "./gpu-health-instance";

const WORKER_STATE = "/run/concourse-standin.state";

describe("GPU health watcher under real systemd (LXD container; stand-in worker binary and nvidia-smi)", function () {
    this.timeout(600_000);
    let inst: HealthInstance | undefined;
    const domain = uniqueDomain();
    const bus = withDomain("00000000:00:06.0", domain);
    const exec = (cmd: string) => inst!.exec(cmd);
    const workerState = () => inst!.d.lxcResult("exec", inst!.name, "--", "cat", WORKER_STATE).stdout.trim();
    const until = (ok: () => boolean, ms: number, what: string) => inst!.until(ok, ms, what);

    before(async function () {
        this.timeout(1_200_000);
        inst = await HealthInstance.start("t-health");
        // The worker: the unit the chain renders, its binary a stand-in.
        inst.put(CONCOURSE_PATHS.unit, renderWorkerUnit({ tags: ["gpu", "gpu-count=1"], inUserNamespace: false } as ConcourseWorkerSettings), "0644");
        inst.put(CONCOURSE_PATHS.env, "", "0644");
        inst.put(CONCOURSE_PATHS.binary, standinWorker(WORKER_STATE), "0755");
        exec(`systemctl daemon-reload && systemctl enable --now ${CONCOURSE_UNIT}`);
        await until(() => workerState() === "running", 20_000, "the worker to run");
        await inst.installWatcher(bus, capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
    });

    after(function () {
        this.timeout(300_000);
        inst?.stop();
    });

    it("Xid 13 changes nothing; Xid 79 lands the worker within 10 s (the unit stays down) and the journal says why", async () => {
        inst!.kernel(kernelLine("xid-13", bus));
        await until(() => exec("cat /run/gpu-workers/health/gpus.tsv").split("\t")[3] === "1", 10_000, "the Xid 13 to be counted");
        assert.strictEqual(workerState(), "running");
        // The GPU is lost from then on: it does not settle, so nothing starts the worker.
        inst!.answer(fallenOff(bus), 15);
        inst!.kernel(kernelLine("xid-79", bus));
        const took = await until(() => workerState() === "landed", 10_000, "the worker to land");
        console.log(`      (landed ${took} ms after the Xid)`);
        await until(() => inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`) !== 0, 5000, "the worker's unit to stop");
        assert.match(inst!.journal(), new RegExp(`GPU 0 \\(${domain}:00:06\\.0\\) unhealthy: Xid 79: GPU has fallen off the bus`));
        assert.strictEqual(exec("cat /run/gpu-workers/health/status").trim(), "landed");
        assert.match(exec(`systemctl show -p Result,ExecMainStatus ${CONCOURSE_UNIT}`), /ExecMainStatus=0/);
    });

    it("healthy past the settle time, the watcher starts the worker's unit again", async () => {
        await new Promise((r) => setTimeout(r, 4000));
        assert.notStrictEqual(inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`), 0, "still lost: the worker stays down");
        inst!.answer(capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
        await until(
            () => inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`) === 0 && workerState() === "running",
            15_000,
            "the worker to run again",
        );
        assert.strictEqual(exec("cat /run/gpu-workers/health/status").trim(), "healthy");
        assert.match(inst!.journal(), /started concourse-worker\.service again/);
    });

    it("the step's remove stops the watcher and takes its status folder", () => {
        const rendered = renderGpuHealth(
            planGpuHealth({ inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "x", memoryMiB: 1, pciBusId: bus }] }) })!,
        );
        exec(rendered.steps[0].remove!);
        assert.notStrictEqual(inst!.status(`systemctl is-active --quiet ${HEALTH_UNIT}`), 0);
        assert.notStrictEqual(inst!.status("test -e /run/gpu-workers/health"), 0);
        assert.strictEqual(inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`), 0, "the worker is not the watcher's to stop");
    });
});
