/**
 * A Debian 12 LXD container with systemd for the GPU health watcher's tests: privileged, with
 * the host's /dev/kmsg (so the watcher reads the kernel lines the test writes), the watcher's
 * rendered files and step, and a stand-in nvidia-smi answering with a real capture.
 */
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { HEALTH_UNIT, renderGpuHealth } from "../../components/lib/links/gpu-health/render";
import { CONCOURSE_UNIT } from "../../components/lib/links/concourse-worker/render";
import { ensureLxdTools, TestDaemon } from "./lxd-support";
import { ANSWERS_IN_INSTANCE, kmsgProblem, STANDIN_NVIDIA_SMI, waitFor } from "./gpu-health-support";

export class HealthInstance {
    private constructor(
        readonly d: TestDaemon,
        readonly name: string,
    ) {}

    /** A started container `name` on a daemon of its own, systemd up; extra config keys as `lxc init -c` takes them. */
    static async start(name: string, config: string[] = []): Promise<HealthInstance> {
        const problem = kmsgProblem();
        if (problem) throw new Error(`the watcher's test writes the kernel log: ${problem}`);
        ensureLxdTools();
        const d = TestDaemon.start();
        const inst = new HealthInstance(d, name);
        try {
            d.importImage("debian-12");
            d.lxc("init", "gpu-workers/debian-12", name, "-c", "security.privileged=true", ...config.flatMap((c) => ["-c", c]));
            d.lxc("config", "device", "add", name, "kmsg", "unix-char", "source=/dev/kmsg", "path=/dev/kmsg");
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

    /** The stand-in nvidia-smi, answering `-q` with `q`, and the watcher as the chain renders and installs it for the GPU at `bus`. */
    async installWatcher(bus: string, q: string): Promise<void> {
        this.put("/usr/local/bin/nvidia-smi", STANDIN_NVIDIA_SMI, "0755");
        this.put(`${ANSWERS_IN_INSTANCE}/q.txt`, q, "0644");
        this.put(`${ANSWERS_IN_INSTANCE}/apps.txt`, "", "0644");
        const rendered = renderGpuHealth(
            planGpuHealth({
                inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: bus }] }),
                workerUnit: CONCOURSE_UNIT,
                health: { pollSeconds: 1, settleSeconds: 3 },
            })!,
        );
        for (const f of rendered.files) this.put(f.path, f.content, f.mode);
        this.exec(rendered.steps[0].create);
        if (this.status(rendered.steps[0].check!) !== 0) throw new Error("the watcher's step check fails right after the step");
        await this.until(() => this.journal().includes("gpu-health: watching"), 30_000, "the watcher to start");
    }

    stop(): void {
        this.d.lxcResult("delete", "--force", this.name);
        this.d.stop();
    }
}
