/**
 * The MPS control daemons under real systemd: one privileged Debian 12 LXD container (the image
 * the LXD tests build) for the whole suite receives the files the link renders, and its step
 * runs there as on a host. No GPU: nvidia-smi and nvidia-cuda-mps-control are stand-ins
 * (test/fixtures/gpu-mps/) that behave as the real ones where the script uses them: the daemon
 * forks, listens on a control pipe in its pipe folder, serves and logs commands, and exits on
 * quit; the client fails when none runs; nvidia-smi keeps each GPU's compute mode and answers
 * its queries from it. The daemon also records its environment and the /dev/shm it sees.
 *
 * The kernel's fs.protected_* settings are global, not the container's: setting one there would
 * change this machine's. The script reads them under GPU_WORKERS_SYSCTL_DIR here (a folder of
 * the test's, given to the step and, by a drop-in, to the unit), which holds 1s, and 0 for the
 * refusal's case.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { mpsLogDir, mpsPipeDir, mpsShmDir, mpsUnit, MPS_LOG_ROOT, MPS_RUN_ROOT, MPS_UNIT_TEMPLATE } from "../../components/lib/gpu/mps";
import { CONCOURSE_UNIT } from "../../components/lib/links/concourse-worker/render";
import { planGpuMps } from "../../components/lib/links/gpu-mps/plan";
import { renderGpuMps } from "../../components/lib/links/gpu-mps/render";
import { RenderedComponent } from "../../components/lib/host/steps";
import { waitFor } from "./gpu-health-support";
import { ensureLxdTools, REPO, TestDaemon } from "./lxd-support";

const STANDINS = path.join(REPO, "test", "fixtures", "gpu-mps");
/** The stand-in nvidia-smi's GPUs (one folder each: compute_mode, memory.total). */
const SMI_STATE = "/var/lib/standin-nvidia-smi";
const SYSCTL_SEAM = "/var/lib/gpu-mps-seam/sys";
const RECORDS = "/var/lib/gpu-workers/mps";
const MIB = 81559;

/** Eight GPUs of 81559 MiB: what the stand-in nvidia-smi knows; the stack selects some. */
const H100_8X = inventorySchema.parse({
    vendor: "nvidia",
    gpus: [0, 1, 2, 3, 4, 5, 6, 7].map((index) => ({ index, model: "NVIDIA H100 80GB HBM3", memoryMiB: MIB })),
});

class MpsInstance {
    private constructor(
        readonly d: TestDaemon,
        readonly name: string,
    ) {}

    static async start(name: string): Promise<MpsInstance> {
        ensureLxdTools();
        const d = TestDaemon.start();
        const inst = new MpsInstance(d, name);
        try {
            d.importImage("debian-12");
            d.lxc("init", "gpu-workers/debian-12", name, "-c", "security.privileged=true");
            d.lxc("start", name);
            await inst.until(() => /^(running|degraded)$/.test(inst.run("systemctl is-system-running").out.trim()), 120_000, "systemd to boot");
        } catch (e) {
            inst.stop();
            throw e;
        }
        return inst;
    }

    /** Runs `cmd` by sh in the container: its status and its output (stdout, then stderr). */
    run(cmd: string): { status: number | null; out: string } {
        const r = this.d.lxcResult("exec", this.name, "--", "sh", "-c", cmd);
        return { status: r.status, out: r.stdout + r.stderr };
    }

    exec(cmd: string): string {
        const r = this.run(cmd);
        if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}):\n${r.out}`);
        return r.out;
    }

    put(target: string, content: string | Buffer, mode: string): void {
        const local = path.join(this.d.dir, "push.tmp");
        fs.writeFileSync(local, content);
        this.d.lxc("file", "push", "--create-dirs", "--mode", mode, local, `${this.name}${target}`);
    }

    async until(ok: () => boolean, ms: number, what: string): Promise<number> {
        const journal = () => this.d.lxcResult("exec", this.name, "--", "journalctl", "-u", "gpu-workers-mps@*", "--no-pager", "-n", "30").stdout;
        return waitFor(ok, ms, what, () => `the daemons' journal:\n${journal()}`, 250);
    }

    stop(): void {
        this.d.lxcResult("delete", "--force", this.name);
        this.d.stop();
    }
}

describe("MPS control daemons under real systemd (LXD container; stand-in nvidia-smi and nvidia-cuda-mps-control)", function () {
    this.timeout(300_000);
    let inst: MpsInstance;
    let rendered: RenderedComponent;
    const run = (cmd: string) => inst.run(cmd);
    const exec = (cmd: string) => inst.exec(cmd);
    const until = (ok: () => boolean, ms: number, what: string) => inst.until(ok, ms, what);
    const mode = (gpu: number) => exec(`nvidia-smi -i ${gpu} --query-gpu=compute_mode --format=csv,noheader`).trim();
    const active = (gpu: number) => run(`systemctl is-active --quiet ${mpsUnit(gpu)}`).status === 0;
    const mainPid = (gpu: number) => exec(`systemctl show -p MainPID --value ${mpsUnit(gpu)}`).trim();
    /** Never 0: `kill -9 0` from lxc exec reaches the process group it shares with the LXD daemon. */
    const daemonPid = (gpu: number) => {
        const pid = mainPid(gpu);
        assert.match(pid, /^[1-9]\d*$/, `${mpsUnit(gpu)} has a main process`);
        return pid;
    };
    /** The daemon's control.log since it last started: its records and the commands it got. */
    const lastStart = (gpu: number) => {
        const log = exec(`cat ${mpsLogDir(gpu)}/control.log`);
        return log.slice(log.lastIndexOf("started pid "));
    };
    const sysctls = (symlinks: number, regular: number, fifos: number) =>
        exec(
            `mkdir -p ${SYSCTL_SEAM}/fs && cd ${SYSCTL_SEAM}/fs && echo ${symlinks} >protected_symlinks && echo ${regular} >protected_regular && echo ${fifos} >protected_fifos`,
        );

    /** The link's files for these settings, placed as the chain places them; then its step's create (or `action` of the same). */
    const converge = (gpus: number[], replicas: number) => {
        rendered = renderGpuMps(planGpuMps({ inventory: H100_8X, selection: gpus, replicas, workerUnit: CONCOURSE_UNIT }));
        for (const f of rendered.files) inst.put(f.path, f.content, f.mode);
        return step("create");
    };
    const step = (which: "create" | "check" | "remove") => run(`GPU_WORKERS_SYSCTL_DIR=${SYSCTL_SEAM} ${rendered.steps[0][which]!}`);

    before(async function () {
        this.timeout(1_200_000);
        inst = await MpsInstance.start("t-mps");
        inst.put("/usr/local/bin/nvidia-smi", fs.readFileSync(path.join(STANDINS, "nvidia-smi")), "0755");
        inst.put("/usr/local/bin/nvidia-cuda-mps-control", fs.readFileSync(path.join(STANDINS, "nvidia-cuda-mps-control")), "0755");
        // GPU 1 starts Prohibited: what the host had, and what remove puts back.
        for (let gpu = 0; gpu < 4; gpu++) {
            inst.put(`${SMI_STATE}/${gpu}/compute_mode`, `${gpu === 1 ? "Prohibited" : "Default"}\n`, "0644");
            inst.put(`${SMI_STATE}/${gpu}/memory.total`, `${MIB}\n`, "0644");
        }
        sysctls(1, 2, 1);
        inst.put(`/etc/systemd/system/${MPS_UNIT_TEMPLATE}.d/sysctl-seam.conf`, `[Service]\nEnvironment=GPU_WORKERS_SYSCTL_DIR=${SYSCTL_SEAM}\n`, "0644");
    });

    after(function () {
        this.timeout(300_000);
        inst?.stop();
    });

    it("two GPUs, replicas 2: each daemon runs with its GPU alone, its own shm, and the limits; EXCLUSIVE_PROCESS; the folders root's", () => {
        const first = converge([0, 1], 2);
        assert.strictEqual(first.status, 0, first.out);
        assert.match(first.out, /^restarted gpu-workers-mps@0\.service$/m);
        assert.match(first.out, /^restarted gpu-workers-mps@1\.service$/m);
        for (const gpu of [0, 1]) {
            assert.ok(active(gpu), `${mpsUnit(gpu)} runs`);
            assert.strictEqual(mode(gpu), "Exclusive_Process");
            const log = lastStart(gpu);
            assert.match(
                log,
                new RegExp(
                    `^env CUDA_VISIBLE_DEVICES=${gpu} CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_MPS_PIPE_DIRECTORY=${mpsPipeDir(gpu)} CUDA_MPS_LOG_DIRECTORY=${mpsLogDir(gpu)}$`,
                    "m",
                ),
            );
            assert.deepStrictEqual(
                log.split("\n").filter((l) => l.startsWith("command set_")),
                ["command set_default_device_pinned_mem_limit 0 40779M", "command set_default_active_thread_percentage 50"],
            );
            // Its /dev/shm is the GPU's own tmpfs: the host's shm folder, not the container's /dev/shm.
            const seen = /^shm (\S+)$/m.exec(log)![1];
            assert.strictEqual(seen, exec(`stat -c '%d:%i' ${mpsShmDir(gpu)}`).trim());
            assert.notStrictEqual(seen, exec("stat -c '%d:%i' /dev/shm").trim());
            assert.match(exec(`ls ${mpsShmDir(gpu)}`), /^standin-mps\.\d+$/m);
            assert.match(exec(`findmnt -no FSTYPE,OPTIONS ${mpsShmDir(gpu)}`), /^tmpfs +rw,nosuid,nodev,noexec\b/);
            assert.strictEqual(exec(`stat -c '%a %U' ${mpsShmDir(gpu)}`).trim(), "1777 root");
            // In the daemon's own mount namespace: the same tmpfs on /dev/shm, with the same options; the host's /dev/shm is untouched.
            // (findmnt lists the container's own /dev/shm first, under it.)
            const onTop = exec(`findmnt --task ${daemonPid(gpu)} -no FSTYPE,OPTIONS /dev/shm`)
                .trim()
                .split("\n")
                .pop()!;
            assert.match(onTop, /^tmpfs +rw,nosuid,nodev,noexec\b/);
            assert.strictEqual(exec(`stat -c '%a %U %G %F' ${mpsPipeDir(gpu)}`).trim(), "1777 root root directory");
            assert.strictEqual(exec(`stat -c '%a %U %G' ${mpsLogDir(gpu)} ${MPS_LOG_ROOT}`).trim(), "700 root root\n700 root root");
            assert.strictEqual(mainPid(gpu), exec(`cat ${mpsPipeDir(gpu)}/nvidia-cuda-mps-control.pid`).trim(), "systemd's main process is the daemon");
        }
        assert.notStrictEqual(lastStart(0).match(/^shm .*$/m)![0], lastStart(1).match(/^shm .*$/m)![0], "each GPU its own shm");
        assert.deepStrictEqual(exec(`cat ${RECORDS}/0.compute-mode ${RECORDS}/1.compute-mode`).split("\n"), ["DEFAULT", "PROHIBITED", ""]);
        const check = step("check");
        assert.strictEqual(check.status, 0, check.out);
        assert.ok(exec(`systemctl show -p Before --value ${mpsUnit(0)}`).includes(CONCOURSE_UNIT));
    });

    it("a second ensure changes nothing; check fails for a stopped daemon, and ensure starts it again with a fresh pipe folder", () => {
        const pids = [mainPid(0), mainPid(1)];
        const again = step("create");
        assert.strictEqual(again.status, 0, again.out);
        assert.strictEqual(again.out, "");
        assert.deepStrictEqual([mainPid(0), mainPid(1)], pids);
        exec(`touch ${mpsPipeDir(0)}/left-by-a-task && systemctl stop ${mpsUnit(0)}`);
        // Its stop put the mode back, and took its pipe folder: the wrapper hands GPU 0 to no new container.
        assert.strictEqual(mode(0), "Default");
        assert.strictEqual(run(`test -e ${mpsPipeDir(0)}`).status, 1, "a stopped daemon's pipe folder is gone");
        const check = step("check");
        assert.notStrictEqual(check.status, 0);
        assert.match(check.out, /gpu-workers-mps@0\.service is not running/);
        const ensure = step("create");
        assert.strictEqual(ensure.status, 0, ensure.out);
        assert.strictEqual(ensure.out.trim(), "restarted gpu-workers-mps@0.service");
        assert.strictEqual(run(`test -e ${mpsPipeDir(0)}/left-by-a-task`).status, 1, "the pipe folder is made afresh");
        assert.strictEqual(mode(0), "Exclusive_Process");
        assert.strictEqual(mainPid(1), pids[1], "GPU 1's daemon is left alone");
    });

    it("replicas 2 -> 4 reaches the running daemons: 25 % and a quarter of the memory", () => {
        const changed = converge([0, 1], 4);
        assert.strictEqual(changed.status, 0, changed.out);
        for (const gpu of [0, 1]) {
            assert.match(changed.out, new RegExp(`^restarted gpu-workers-mps@${gpu}\\.service$`, "m"));
            assert.deepStrictEqual(
                lastStart(gpu)
                    .split("\n")
                    .filter((l) => l.startsWith("command set_")),
                ["command set_default_device_pinned_mem_limit 0 20389M", "command set_default_active_thread_percentage 25"],
            );
            assert.strictEqual(
                exec(`CUDA_MPS_PIPE_DIRECTORY=${mpsPipeDir(gpu)} sh -c 'echo get_default_active_thread_percentage | nvidia-cuda-mps-control'`).trim(),
                "25.0",
            );
        }
        assert.strictEqual(step("check").status, 0);
    });

    it("a daemon killed with SIGKILL is started again by systemd, limits and all", async () => {
        const before = daemonPid(1);
        exec(`kill -9 ${before}`);
        const took = await until(() => active(1) && mainPid(1) !== before && mainPid(1) !== "0", 30_000, "GPU 1's daemon to run again");
        console.log(`      (running again ${took} ms after the kill)`);
        assert.match(lastStart(1), /^command set_default_active_thread_percentage 25$/m);
        assert.strictEqual(mode(1), "Exclusive_Process");
        // The record still holds what the host had, not the mode we set.
        assert.strictEqual(exec(`cat ${RECORDS}/1.compute-mode`).trim(), "PROHIBITED");
        const check = step("check");
        assert.strictEqual(check.status, 0, check.out);
    });

    it("a GPU dropped from the config: its daemon stops, its mode goes back, its folders go; one added starts; the other is left alone", () => {
        const kept = mainPid(0);
        const changed = converge([0, 2], 4);
        assert.strictEqual(changed.status, 0, changed.out);
        assert.strictEqual(changed.out.trim(), "restarted gpu-workers-mps@2.service");
        assert.strictEqual(mainPid(0), kept, "only the GPU list changed: GPU 0's daemon keeps running");
        assert.ok(!active(1));
        assert.notStrictEqual(run(`systemctl is-enabled --quiet ${mpsUnit(1)}`).status, 0);
        assert.strictEqual(mode(1), "Prohibited");
        for (const gone of [`${MPS_RUN_ROOT}/1`, mpsLogDir(1), `${RECORDS}/1.compute-mode`, `${RECORDS}/1.sha256`])
            assert.strictEqual(run(`test -e ${gone}`).status, 1, `${gone} is gone`);
        assert.ok(active(2));
        assert.strictEqual(mode(2), "Exclusive_Process");
        assert.strictEqual(step("check").status, 0);
    });

    it("refused while fs.protected_symlinks is 0 (or protected_regular, protected_fifos): the step and the unit's start both say why", async () => {
        sysctls(0, 1, 0);
        const refused = step("create");
        assert.notStrictEqual(refused.status, 0);
        assert.match(refused.out, /gpu-mps: refused: fs\.protected_symlinks is 0 \(needs 1\); fs\.protected_fifos is 0 \(needs at least 1\)\./);
        assert.match(refused.out, /planted link/);
        assert.notStrictEqual(run(`systemctl restart ${mpsUnit(0)}`).status, 0, "the unit does not start either");
        assert.match(exec(`journalctl -u ${mpsUnit(0)} --no-pager -n 40`), /gpu-mps: refused: fs\.protected_symlinks is 0/);
        assert.strictEqual(mode(0), "Default", "the failed start put the mode back");
        sysctls(1, 0, 1);
        assert.match(step("create").out, /fs\.protected_regular is 0 \(needs at least 1\)/);
        sysctls(1, 1, 1);
        const ensure = step("create");
        assert.strictEqual(ensure.status, 0, ensure.out);
        await until(() => active(0), 10_000, "GPU 0's daemon to run");
        assert.strictEqual(step("check").status, 0);
    });

    it("remove stops every daemon, puts back each GPU's mode as the host had it, and leaves no unit, folder or record; a second remove is fine", () => {
        const removed = step("remove");
        assert.strictEqual(removed.status, 0, removed.out);
        assert.deepStrictEqual([0, 1, 2, 3].map(mode), ["Default", "Prohibited", "Default", "Default"]);
        const again = step("remove");
        assert.strictEqual(again.status, 0, again.out);
        // Then the files go with their own resources.
        for (const f of rendered.files) exec(`rm -f ${f.path}`);
        exec(`rm -rf /etc/systemd/system/${MPS_UNIT_TEMPLATE}.d && systemctl daemon-reload`);
        assert.strictEqual(exec("systemctl list-units --all --plain --no-legend 'gpu-workers-mps@*'").trim(), "");
        assert.strictEqual(run("ls /etc/systemd/system/*.wants/ | grep gpu-workers-mps").status, 1, "no instance is enabled");
        for (const gone of [MPS_RUN_ROOT, "/run/gpu-workers", MPS_LOG_ROOT, RECORDS]) assert.strictEqual(run(`test -e ${gone}`).status, 1, `${gone} is gone`);
        assert.strictEqual(run(`findmnt -rn | grep ${MPS_RUN_ROOT}`).status, 1, "no shm tmpfs is left mounted");
        assert.strictEqual(run("grep -ls -- 'standin-serv[e]' /proc/[0-9]*/cmdline").status, 1, "no daemon is left");
    });
});
