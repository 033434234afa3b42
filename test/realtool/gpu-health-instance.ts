/**
 * A Debian 12 LXD container with systemd for the GPU health watcher's tests: privileged, with a
 * folder of the test's (the seam: kernel records the test writes, which the watcher's unit reads
 * through a drop-in's GPU_WORKERS_KMSG, and the stand-in nvidia-smi's answers), the watcher's
 * rendered files and step, and a stand-in nvidia-smi answering with a real capture.
 */
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { HEALTH_UNIT, renderGpuHealth } from "../../components/lib/links/gpu-health/render";
import { CONCOURSE_UNIT } from "../../components/lib/links/concourse-worker/render";
import { ensureLxdTools, TestDaemon } from "./lxd-support";
import { KmsgSeam, putAnswers, SEAM_IN_INSTANCE, STANDIN_NVIDIA_SMI, waitFor } from "./gpu-health-support";

export class HealthInstance {
    /** The seam's folder here, mounted at SEAM_IN_INSTANCE there. */
    private readonly seam: string;
    private kmsg?: KmsgSeam;

    private constructor(
        readonly d: TestDaemon,
        readonly name: string,
    ) {
        this.seam = path.join(d.dir, "seam");
        fs.mkdirSync(path.join(this.seam, "answers"), { recursive: true });
    }

    /** A started container `name` on a daemon of its own, systemd up; extra config keys as `lxc init -c` takes them. */
    static async start(name: string, config: string[] = []): Promise<HealthInstance> {
        ensureLxdTools();
        const d = TestDaemon.start();
        const inst = new HealthInstance(d, name);
        try {
            d.importImage("debian-12");
            d.lxc("init", "gpu-workers/debian-12", name, "-c", "security.privileged=true", ...config.flatMap((c) => ["-c", c]));
            inst.kmsg = new KmsgSeam(inst.seam);
            d.lxc("config", "device", "add", name, "seam", "disk", `source=${inst.seam}`, `path=${SEAM_IN_INSTANCE}`);
            d.lxc("start", name);
            await inst.until(
                () => /^(running|degraded)$/.test(d.lxcResult("exec", name, "--", "systemctl", "is-system-running").stdout.trim()),
                120_000,
                "systemd to boot",
            );
        } catch (e) {
            inst.stop();
            throw e;
        }
        return inst;
    }

    exec(cmd: string): string {
        return this.d.lxc("exec", this.name, "--", "sh", "-c", cmd);
    }

    status(cmd: string): number | null {
        return this.d.lxcResult("exec", this.name, "--", "sh", "-c", cmd).status;
    }

    /** Places `content` at `target` in the container, with `mode`. */
    put(target: string, content: string | Buffer, mode: string): void {
        const local = path.join(this.d.dir, "push.tmp");
        fs.writeFileSync(local, content);
        this.d.lxc("file", "push", "--create-dirs", "--mode", mode, local, `${this.name}${target}`);
    }

    journal(): string {
        return this.exec(`journalctl -u ${HEALTH_UNIT} --no-pager`);
    }

    async until(ok: () => boolean, ms: number, what: string): Promise<number> {
        const journal = () => this.d.lxcResult("exec", this.name, "--", "journalctl", "-u", HEALTH_UNIT, "--no-pager", "-n", "20").stdout;
        return waitFor(ok, ms, what, () => `the watcher's journal:\n${journal()}`, 250);
    }

    /** A driver's line, as a kernel record the watcher reads. */
    kernel(line: string): void {
        this.kmsg!.record(line);
    }

    /** What the stand-in nvidia-smi answers, from a `-q` capture (and its exit code). */
    answer(q: string, exit = 0): void {
        putAnswers(path.join(this.seam, "answers"), q, exit);
    }

    /** The stand-in nvidia-smi, answering from the `-q` capture `q`, and the watcher as the chain renders and installs it for the GPU at `bus`. */
    async installWatcher(bus: string, q: string): Promise<void> {
        this.put("/usr/local/bin/nvidia-smi", STANDIN_NVIDIA_SMI, "0755");
        this.answer(q);
        const rendered = renderGpuHealth(
            planGpuHealth({
                inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: bus }] }),
                workerUnit: CONCOURSE_UNIT,
                health: { pollSeconds: 1, settleSeconds: 3 },
            })!,
        );
        for (const f of rendered.files) this.put(f.path, f.content, f.mode);
        this.put(`/etc/systemd/system/${HEALTH_UNIT}.d/kmsg-seam.conf`, `[Service]\nEnvironment=GPU_WORKERS_KMSG=${SEAM_IN_INSTANCE}/kmsg\n`, "0644");
        this.exec(rendered.steps[0].create);
        if (this.status(rendered.steps[0].check!) !== 0) throw new Error("the watcher's step check fails right after the step");
        await this.until(() => this.journal().includes("gpu-health: watching"), 30_000, "the watcher to start");
    }

    stop(): void {
        this.d.lxcResult("delete", "--force", this.name);
        this.kmsg?.close();
        this.d.stop();
    }
}
