/**
 * The validator step with real containerd, the real runc wrapper and real runc, on a worker
 * of vendor none (this machine has no GPU): it starts containers through the wrapper with the
 * host's root read-only as their root file system and checks, from inside, the environment,
 * the datasets and a device node. Each check is also made to fail: a wrapper settings file
 * that injects the wrong selection, a dataset in the wrong mode, a node a non-root user
 * cannot open. The script is the one rendered for hosts (host/validate-worker.sh), run with
 * the arguments the renderer gives it.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { spawn, spawnSync } from "child_process";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planWorkerGpus, WorkerGpuPlan } from "../../components/lib/gpu/plan";
import { renderConcourseContainerdConfig } from "../../components/lib/links/containerd/render";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { validatorArgs, WorkerValidatorSettings } from "../../components/lib/links/worker-validator/render";
import { NO_GPU } from "../fixtures/stacks/inventories";
import { buildTestWrapper, ensureWrapperTools, HOST_DIR, sh, TestContainerd, tempDir, writeSettings } from "./wrapper-support";

const SCRIPT = path.join(HOST_DIR, "validate-worker.sh");

describe("validator step (real containerd, runc wrapper, runc; vendor none)", function () {
    this.timeout(600_000);
    let dir: string;
    let settingsPath: string;
    let wrapper: string;
    let realRunc: string;
    let datasets: string;
    let device: string;
    let containerd: TestContainerd;
    const plan = planWorkerGpus(inventorySchema.parse(NO_GPU), {
        selection: "all",
        cdi: false,
        fabricManager: { mode: "auto", partitions: [] },
        extraTags: [],
    });

    /** The wrapper's settings as the chain renders them, with `change` applied to the plan or datasets. */
    function wrapperSettings(change: { plan?: Partial<WorkerGpuPlan>; writableSuffixes?: string[] } = {}): void {
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { ...plan, deviceNodes: [device], ...change.plan },
                datasets: { root: datasets, writableSuffixes: change.writableSuffixes ?? ["_writable", "_rw"] },
                realRuntime: realRunc,
                logPath: path.join(dir, "wrapper.log"),
            }),
        );
    }

    function validator(): WorkerValidatorSettings {
        return {
            vendor: "none",
            gpus: [],
            selected: [],
            wrapper,
            socket: containerd.socket,
            env: plan.env,
            unsetEnv: plan.unsetEnv,
            deviceNodes: [device],
            datasets: { root: datasets, writableSuffixes: ["_writable", "_rw"] },
            cdiSpec: path.join(dir, "spec.json"),
        };
    }

    /** Runs the validator; `launcher` execs it (into another mount namespace). */
    function validate(action: "ensure" | "check", s = validator(), launcher: string[] = []) {
        const [command, ...args] = [...launcher, "bash", SCRIPT, action, ...validatorArgs(s)];
        const r = spawnSync(command, args, {
            encoding: "utf8",
            env: { ...process.env, GPU_WORKERS_STATE_DIR: path.join(dir, "state") },
            timeout: 300_000,
        });
        return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
    }

    before(async () => {
        ensureWrapperTools();
        dir = tempDir("gw-validate-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        realRunc = sh("sh", ["-c", "command -v runc"]).trim();
        datasets = path.join(dir, "datasets");
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.mkdirSync(path.join(datasets, "scratch_rw"));
        // Links have the mode of what they lead to, whatever their names say: not judged by name.
        fs.symlinkSync("scratch_rw", path.join(datasets, "results"));
        fs.symlinkSync("models", path.join(datasets, "alias_rw"));
        // A node like /dev/kfd: root-owned, reachable through its group only (the numbers of /dev/null).
        device = path.join(dir, "dev", "kfd-test");
        fs.mkdirSync(path.dirname(device));
        sh("mknod", ["-m", "0660", device, "c", "1", "3"]);
        sh("chgrp", ["44", device]);
        // Like /dev: a task's user may pass through the folders above the node.
        fs.chmodSync(dir, 0o755);
        fs.chmodSync(path.dirname(device), 0o755);
        fs.writeFileSync(path.join(dir, "spec.json"), "{}\n");
        wrapperSettings();
        const config = path.join(dir, "containerd.toml");
        fs.writeFileSync(config, renderConcourseContainerdConfig());
        containerd = new TestContainerd(dir, config);
        await containerd.start();
    });

    after(async () => {
        await containerd?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
        fs.rmSync("/run/containerd/runc/gpu-workers-validate", { recursive: true, force: true });
    });

    it("passes when the wrapper gives containers what the plan says, and records what it validated", () => {
        wrapperSettings();
        const r = validate("ensure");
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /ok env: NVIDIA_VISIBLE_DEVICES unset/, "a worker without GPUs gives containers no GPU variable");
        assert.match(r.out, new RegExp(`ok datasets: ${datasets}/models is read-only`));
        assert.match(r.out, new RegExp(`ok datasets: ${datasets}/scratch_rw is read-write`));
        assert.match(r.out, new RegExp(`ok devices: ${device} opens for a non-root user in group 44`));
        assert.match(r.out, /the worker gives containers what its plan says/);
        assert.strictEqual(validate("check").status, 0, "a refresh right after finds nothing changed");
    });

    it("fails, expected against found, when the wrapper injects the wrong selection", () => {
        wrapperSettings({ plan: { env: { NVIDIA_VISIBLE_DEVICES: "all" }, unsetEnv: plan.unsetEnv.filter((v) => v !== "NVIDIA_VISIBLE_DEVICES") } });
        const r = validate("ensure");
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /FAILED env: expected NVIDIA_VISIBLE_DEVICES unset, found NVIDIA_VISIBLE_DEVICES=all/);
        assert.match(r.out, /check\(s\) failed/);
    });

    it("fails when a task's own NVIDIA_VISIBLE_DEVICES=all gets through", () => {
        // A wrapper that forgets the variable: the task's own value reaches the runtime.
        wrapperSettings({ plan: { env: {}, unsetEnv: plan.unsetEnv.filter((v) => v !== "NVIDIA_VISIBLE_DEVICES") } });
        const r = validate("ensure");
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /FAILED env: expected NVIDIA_VISIBLE_DEVICES unset, found NVIDIA_VISIBLE_DEVICES=all/);
        assert.match(r.out, /found NVIDIA_VISIBLE_DEVICES=all/, "the container that asks for all is the one caught");
    });

    it("fails when a dataset has the wrong mode", () => {
        wrapperSettings({ writableSuffixes: [] });
        const r = validate("ensure");
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, new RegExp(`FAILED datasets: expected ${datasets}/scratch_rw read-write, found it read-only`));
    });

    it("fails when a non-root user cannot open a device node through its group", () => {
        wrapperSettings();
        fs.chmodSync(device, 0o600);
        try {
            const r = validate("ensure");
            assert.notStrictEqual(r.status, 0, r.out);
            assert.match(r.out, new RegExp(`FAILED devices: expected ${device} to open for a non-root user in its group 44`));
        } finally {
            fs.chmodSync(device, 0o660);
        }
    });

    it("a refresh notices a changed CDI spec (the next up validates again)", () => {
        wrapperSettings();
        assert.strictEqual(validate("ensure").status, 0);
        fs.writeFileSync(path.join(dir, "spec.json"), '{"changed":true}\n');
        const r = validate("check");
        assert.strictEqual(r.status, 1, r.out);
        assert.match(r.out, /validated with 'driver=\S* toolkit=\S* cdi=[0-9a-f]{64}', now/);
    });

    it("a link a task planted in a writable dataset gets nothing written through it, and a folder there fails nothing", () => {
        wrapperSettings();
        // On a mount of its own, as /boot or /var often is: ctr's read-only root covered only the top mount.
        const own = path.join(dir, "own-mount");
        fs.mkdirSync(own);
        sh("mount", ["-t", "tmpfs", "-o", "size=1m", "gw-validate-own", own]);
        const victim = path.join(own, "victim");
        fs.writeFileSync(victim, "the host's own file\n");
        // The names the probe had (its pid in the container is 1), and a few more.
        for (const n of [1, 2, 3]) fs.symlinkSync(victim, path.join(datasets, "scratch_rw", `.gpu-workers-validate.${n}`));
        fs.mkdirSync(path.join(datasets, "scratch_rw", ".gpu-workers-validate.4"));
        try {
            const r = validate("ensure");
            assert.strictEqual(r.status, 0, r.out);
            assert.match(r.out, new RegExp(`ok datasets: ${datasets}/scratch_rw is read-write`));
            assert.strictEqual(fs.readFileSync(victim, "utf8"), "the host's own file\n", "nothing was written through the links");
            assert.deepStrictEqual(
                fs.readdirSync(path.join(datasets, "scratch_rw")).sort(),
                [".gpu-workers-validate.1", ".gpu-workers-validate.2", ".gpu-workers-validate.3", ".gpu-workers-validate.4"],
                "the probe left nothing behind",
            );
        } finally {
            for (const n of [1, 2, 3, 4]) fs.rmSync(path.join(datasets, "scratch_rw", `.gpu-workers-validate.${n}`), { recursive: true, force: true });
            spawnSync("umount", [own]);
        }
    });

    it("datasets each on a mount of their own (as LXD attaches them): the writable one is read-write where it stacks on the read-only root's copy", () => {
        wrapperSettings();
        const folders = ["models", "scratch_rw"].map((f) => path.join(datasets, f));
        for (const f of folders) sh("mount", ["--bind", f, f]);
        try {
            const r = validate("ensure");
            assert.strictEqual(r.status, 0, r.out);
            assert.match(r.out, new RegExp(`ok datasets: ${datasets}/models is read-only`));
            assert.match(r.out, new RegExp(`ok datasets: ${datasets}/scratch_rw is read-write`));
        } finally {
            for (const f of folders.reverse()) spawnSync("umount", [f]);
        }
    });

    it("the containers' root is the host's, read-only all the way down: a writable mount of the host's is read-only inside", () => {
        wrapperSettings();
        const mount = path.join(dir, "host-mount");
        fs.mkdirSync(mount);
        sh("mount", ["-t", "tmpfs", "-o", "size=1m", "gw-validate-rw", mount]);
        try {
            const r = validate("ensure");
            assert.strictEqual(r.status, 0, r.out);
            assert.match(r.out, /ok root: the host's root is read-only inside, all the way down/);
            assert.deepStrictEqual(fs.readdirSync(mount), [], "nothing was written there");
        } finally {
            spawnSync("umount", [mount]);
        }
    });

    it("containerd in a mount namespace of its own (as the worker's unit gives it): the containers' root is read-only all the way down there too", async () => {
        wrapperSettings();
        // The host: a namespace whose mounts reach others (/ shared, as systemd makes it). The
        // runtime: a namespace that receives them (a slave, as a unit's TemporaryFileSystem= makes).
        const host = spawn("unshare", ["--mount", "--propagation", "shared", "sleep", "infinity"], { stdio: "ignore" });
        const own = path.join(dir, "own-namespace");
        fs.mkdirSync(own);
        let runtime: TestContainerd | undefined;
        try {
            const ourNamespace = fs.readlinkSync("/proc/self/ns/mnt");
            for (let i = 0; i < 100 && fs.readlinkSync(`/proc/${host.pid}/ns/mnt`) === ourNamespace; i++) await new Promise((r) => setTimeout(r, 50));
            const inHost = ["nsenter", `--mount=/proc/${host.pid}/ns/mnt`];
            const mount = path.join(own, "host-mount");
            fs.mkdirSync(mount);
            sh(inHost[0], [...inHost.slice(1), "mount", "-t", "tmpfs", "-o", "size=1m", "gw-validate-rw", mount]);
            runtime = new TestContainerd(own, path.join(dir, "containerd.toml"), process.env, [...inHost, "unshare", "--mount", "--propagation", "slave"]);
            await runtime.start();
            const r = validate("ensure", { ...validator(), socket: runtime.socket }, inHost);
            assert.strictEqual(r.status, 0, r.out);
            assert.match(r.out, /ok root: the host's root is read-only inside, all the way down/);
            const left = sh("sh", ["-c", `cat /proc/${host.pid}/mountinfo /proc/${runtime.pid}/mountinfo | grep -c gpu-workers-validate || true`]).trim();
            assert.strictEqual(left, "0", "the validator left no mount behind, in either namespace");
        } finally {
            await runtime?.stop();
            host.kill();
        }
    });
});
