/**
 * The GPU health watcher under real systemd: a Debian 12 LXD container (the image the LXD tests
 * build) receives the files the chain renders for the watcher, and its installer's step runs
 * there as on a host; the Concourse worker's unit is the one the chain renders, its binary a
 * stand-in that lands on SIGUSR1 and exits 0 as Concourse's does (so the unit's own
 * Restart=on-failure decides what happens next), and nvidia-smi a stand-in answering with a
 * real capture. Xid lines go into the host's kernel log, which the container reads through
 * /dev/kmsg (a privileged container, with the device).
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { CONCOURSE_PATHS, ConcourseWorkerSettings, CONCOURSE_UNIT, renderWorkerUnit } from "../../components/lib/links/concourse-worker/render";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { HEALTH_UNIT, renderGpuHealth } from "../../components/lib/links/gpu-health/render";
import { ensureLxdTools, TestDaemon } from "./lxd-support";
import {
    ANSWERS_IN_INSTANCE,
    capture,
    kernelLine,
    kmsgProblem,
    STANDIN_NVIDIA_SMI,
    standinWorker,
    uniqueDomain,
    withDomain,
    writeKmsg,
} from "./gpu-health-support";

const NAME = "t-health";
const WORKER_STATE = "/run/concourse-standin.state";

describe("GPU health watcher under real systemd (LXD container; stand-in worker binary and nvidia-smi)", function () {
    this.timeout(600_000);
    let d: TestDaemon | undefined;
    const domain = uniqueDomain();
    const bus = withDomain("00000000:00:06.0", domain);
    const healthy = capture("h100-vm-1x", "nvidia-smi-q.txt", domain);

    const exec = (cmd: string) => d!.lxc("exec", NAME, "--", "sh", "-c", cmd);
    const execStatus = (cmd: string) => d!.lxcResult("exec", NAME, "--", "sh", "-c", cmd).status;
    /** Places `content` at `target` in the container, with `mode`. */
    function put(target: string, content: string, mode: string): void {
        const local = path.join(d!.dir, "push.tmp");
        fs.writeFileSync(local, content);
        d!.lxc("file", "push", "--create-dirs", "--mode", mode, local, `${NAME}${target}`);
    }
    const workerState = () => d!.lxcResult("exec", NAME, "--", "cat", WORKER_STATE).stdout.trim();
    async function until(ok: () => boolean, ms: number, what: string): Promise<number> {
        const start = Date.now();
        while (!ok()) {
            if (Date.now() - start > ms)
                throw new Error(`waited ${ms} ms for ${what}; the watcher's journal:\n${exec(`journalctl -u ${HEALTH_UNIT} --no-pager | tail -n 20`)}`);
            await new Promise((r) => setTimeout(r, 250));
        }
        return Date.now() - start;
    }

    before(async function () {
        this.timeout(1_200_000);
        const problem = kmsgProblem();
        if (problem) throw new Error(`the watcher's test writes the kernel log: ${problem}`);
        ensureLxdTools();
        d = TestDaemon.start();
        d.importImage("debian-12");
        d.lxc("init", "gpu-workers/debian-12", NAME, "-c", "security.privileged=true");
        d.lxc("config", "device", "add", NAME, "kmsg", "unix-char", "source=/dev/kmsg", "path=/dev/kmsg");
        d.lxc("start", NAME);
        await until(
            () => /^(running|degraded)$/.test(d!.lxcResult("exec", NAME, "--", "systemctl", "is-system-running").stdout.trim()),
            120_000,
            "systemd to boot",
        );

        // The worker: the unit the chain renders, its binary a stand-in.
        put(CONCOURSE_PATHS.unit, renderWorkerUnit({ tags: ["gpu", "gpu-count=1"], inUserNamespace: false } as ConcourseWorkerSettings), "0644");
        put(CONCOURSE_PATHS.env, "", "0644");
        put(CONCOURSE_PATHS.binary, standinWorker(WORKER_STATE), "0755");
        exec(`systemctl daemon-reload && systemctl enable --now ${CONCOURSE_UNIT}`);
        await until(() => workerState() === "running", 20_000, "the worker to run");

        put("/usr/local/bin/nvidia-smi", STANDIN_NVIDIA_SMI, "0755");
        put(`${ANSWERS_IN_INSTANCE}/q.txt`, healthy, "0644");
        put(`${ANSWERS_IN_INSTANCE}/apps.txt`, "", "0644");

        // The watcher: every file the chain renders for it, then its step as the chain runs it.
        const settings = planGpuHealth({
            inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: bus }] }),
            workerUnit: CONCOURSE_UNIT,
            health: { pollSeconds: 1, settleSeconds: 3 },
        })!;
        const rendered = renderGpuHealth(settings);
        for (const f of rendered.files) put(f.path, f.content, f.mode);
        exec(rendered.steps[0].create);
        assert.strictEqual(execStatus(rendered.steps[0].check!), 0, "the step's check passes once it ran");
        await until(() => exec(`journalctl -u ${HEALTH_UNIT} --no-pager`).includes("gpu-health: watching"), 30_000, "the watcher to start");
    });

    after(function () {
        this.timeout(300_000);
        if (d) {
            d.lxcResult("delete", "--force", NAME);
            d.stop();
        }
    });

    it("Xid 13 changes nothing; Xid 79 lands the worker within 10 s (the unit stays down) and the journal says why", async () => {
        writeKmsg(kernelLine("xid-13", bus));
        await until(() => exec("cat /run/gpu-workers/health/gpus.tsv").split("\t")[3] === "1", 10_000, "the Xid 13 to be counted");
        assert.strictEqual(workerState(), "running");
        writeKmsg(kernelLine("xid-79", bus));
        const took = await until(() => workerState() === "landed", 10_000, "the worker to land");
        console.log(`      (landed ${took} ms after the Xid)`);
        await until(() => execStatus(`systemctl is-active --quiet ${CONCOURSE_UNIT}`) !== 0, 5000, "the worker's unit to stop");
        const journal = exec(`journalctl -u ${HEALTH_UNIT} --no-pager`);
        assert.match(journal, new RegExp(`GPU 0 \\(${domain}:00:06\\.0\\) unhealthy: Xid 79: GPU has fallen off the bus`));
        assert.strictEqual(exec("cat /run/gpu-workers/health/status").trim(), "landed");
        assert.match(exec(`systemctl show -p Result,ExecMainStatus ${CONCOURSE_UNIT}`), /ExecMainStatus=0/);
    });

    it("healthy past the settle time, the watcher starts the worker's unit again", async () => {
        await until(() => execStatus(`systemctl is-active --quiet ${CONCOURSE_UNIT}`) === 0 && workerState() === "running", 15_000, "the worker to run again");
        assert.strictEqual(exec("cat /run/gpu-workers/health/status").trim(), "healthy");
        assert.match(exec(`journalctl -u ${HEALTH_UNIT} --no-pager`), /started concourse-worker\.service again/);
    });

    it("the step's remove stops the watcher and takes its status folder", () => {
        const rendered = renderGpuHealth(
            planGpuHealth({ inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "x", memoryMiB: 1, pciBusId: bus }] }) })!,
        );
        exec(rendered.steps[0].remove!);
        assert.notStrictEqual(execStatus(`systemctl is-active --quiet ${HEALTH_UNIT}`), 0);
        assert.notStrictEqual(execStatus("test -e /run/gpu-workers/health"), 0);
        assert.strictEqual(execStatus(`systemctl is-active --quiet ${CONCOURSE_UNIT}`), 0, "the worker is not the watcher's to stop");
    });
});
