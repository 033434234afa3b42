/**
 * GPUs handed out per task (issue 41) through a real Concourse worker (the supplied release;
 * pending without it): web and worker in a Debian 12 LXD container with systemd; the RuncWrapper
 * and ConcourseWorker components rendered as the chain renders them for a 2-GPU NVIDIA host in
 * mode exclusive, their files placed and their steps run there (the wrapper in the place of the
 * host's runc and of Concourse's own). The wrapper hands containers to the host's runc, so the GPU
 * variables it sets reach the task as they are (no GPU is there: nvidia-container-runtime would
 * act on them). Two tasks at once get one GPU each, never the same; a check, the image's get and
 * a task that asks 0 run while both are held; an ask above the worker's capacity fails at once
 * with its reason in fly's output; a task that asks while both are held runs once one is free.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { allocationTags } from "../../components/lib/gpu/allocation";
import { renderConcourseContainerdConfig } from "../../components/lib/links/containerd/render";
import { CONCOURSE_UNIT, renderConcourseWorker } from "../../components/lib/links/concourse-worker/render";
import { planRuncWrapper } from "../../components/lib/links/runc-wrapper/plan";
import { renderRuncWrapperComponent, WRAPPER_BUILD_OUTPUT, WRAPPER_PATH, WRAPPER_STATE_DIR } from "../../components/lib/links/runc-wrapper/render";
import { containerGpus } from "../../components/lib/links/terms";
import { RenderedComponent } from "../../components/lib/host/steps";
import { Fly } from "../support/concourse";
import { pendingWithout, release } from "../support/supplied";
import { startWebIn, TSA_PORT } from "./concourse-instance";
import { HealthInstance } from "./gpu-health-instance";

const WORKER = "gpu-alloc-w";
const PASSWORD = "gpu-alloc-test";
const TAG = "gpu-alloc";
const DATASETS = "/srv/datasets";

const sha256 = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

describe("GPUs handed out per task through a real Concourse worker", function () {
    this.timeout(900_000);
    let inst: HealthInstance | undefined;
    let fly: Fly | undefined;
    let root: string;
    const inventory = inventorySchema.parse({
        vendor: "nvidia",
        gpus: [0, 1].map((index) => ({ index, model: "NVIDIA L4", memoryMiB: 23034 })),
    });
    const allocation = { mode: "exclusive" as const, waitSeconds: 120 };

    /** Places a rendered component's files and runs its steps in order, as `up` does; a key that `up` makes is already there (made by the web's setup). */
    function apply(rendered: RenderedComponent): void {
        for (const f of rendered.files) {
            if (f.secret || f.generated) {
                assert.strictEqual(inst!.status(`test -s ${f.path}`), 0, `${f.path} (made by up) is there`);
                continue;
            }
            inst!.put(f.path, f.artifact ? fs.readFileSync(f.artifact.path) : f.content, f.mode);
        }
        for (const step of rendered.steps) {
            const r = inst!.d.lxcResult("exec", inst!.name, "--", "sh", "-c", step.create);
            assert.strictEqual(r.status, 0, `step ${step.name}: ${r.stdout}${r.stderr}`);
            if (step.check) assert.strictEqual(inst!.status(step.check), 0, `step ${step.name}'s check right after it`);
        }
    }

    /** A one-off task tagged for the worker: prints its GPU variables, then runs `then`. */
    function taskFile(name: string, params: Record<string, string>, then: string): string {
        const file = path.join(root, `${name}.yml`);
        const task = {
            platform: "linux",
            image_resource: { type: "mock", source: { mirror_self: true } },
            params,
            run: { path: "sh", args: ["-ec", `echo "visible=[\${NVIDIA_VISIBLE_DEVICES-unset}] caps=[\${NVIDIA_DRIVER_CAPABILITIES-unset}]"; ${then}`] },
        };
        fs.writeFileSync(file, JSON.stringify(task));
        return file;
    }

    const execute = (name: string, params: Record<string, string>, then = "true") => fly!.start(["execute", "-c", taskFile(name, params, then), "--tag", TAG]);
    const visible = (output: string) => /visible=\[([^\]]*)\]/.exec(output)?.[1];

    async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
        const end = Date.now() + ms;
        while (!ok()) {
            if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
            await new Promise((r) => setTimeout(r, 500));
        }
    }

    before(async function () {
        pendingWithout(this, "concourse");
        this.timeout(1_500_000);
        const r = release();
        root = fs.mkdtempSync(path.join(process.env.TMPDIR ?? "/tmp", "gw-alloc-cc-"));
        inst = await HealthInstance.start("t-alloc-cc", ["security.nesting=true"]);
        fly = await startWebIn(inst, r, "gpu-alloc", PASSWORD);
        inst.exec(`mkdir -p ${DATASETS}`);
        const wrapperBinary = { path: WRAPPER_BUILD_OUTPUT, sha256: sha256(WRAPPER_BUILD_OUTPUT) };
        const terms = { inventory, selection: [0, 1], cdi: false, runtime: "runc" as const, datasets: { root: DATASETS }, allocation, wrapperBinary };
        apply(renderRuncWrapperComponent(planRuncWrapper(terms)));
        const plan = containerGpus(inventory, [0, 1], false, planRuncWrapper(terms).allocation);
        apply(
            renderConcourseWorker({
                name: WORKER,
                version: r.version,
                tsaHost: "127.0.0.1",
                tsaPort: TSA_PORT,
                tags: [TAG, ...allocationTags(plan.allocation)],
                workDir: "/opt/concourse/worker",
                binary: { path: r.tarball, sha256: sha256(r.tarball) },
                containerdConfig: renderConcourseContainerdConfig(),
                networkMtu: 1500,
                privilegedMode: "ignore",
                inUserNamespace: false,
                wrapRunc: { wrapper: WRAPPER_PATH, sha256: wrapperBinary.sha256, runcCves: "warn" },
            }),
        );
        await until("fly workers to show the worker running", () => fly!.workers().find((w) => w.name === WORKER)?.state === "running", 180_000);
    });

    after(function () {
        this.timeout(300_000);
        fly?.cleanup();
        inst?.stop();
        if (root) fs.rmSync(root, { recursive: true, force: true });
    });

    it("the worker shows its capacity tags (gpu-share=exclusive, gpu-slots=2)", () => {
        const w = fly!.workers().find((x) => x.name === WORKER)!;
        assert.deepStrictEqual(w.tags, [TAG, "gpu-share=exclusive", "gpu-slots=2"]);
    });

    it("two tasks at once get one GPU each, never the same; meanwhile a check, an image's get and a task that asks 0 hold none and wait for none; a third ask runs once a GPU is free", async () => {
        const a = execute("a", { GPU_WORKERS_GPUS: "1" }, "sleep 40; echo step-finished");
        const b = execute("b", {}, "sleep 40; echo step-finished"); // perTask: 1
        await until("both tasks to print their GPUs", () => visible(a.output()) !== undefined && visible(b.output()) !== undefined, 240_000);
        const seen = [visible(a.output()), visible(b.output())].sort();
        assert.deepStrictEqual(seen, ["0", "1"], `a: ${a.output()}\nb: ${b.output()}`);
        assert.match(a.output(), /caps=\[compute,utility\]/);

        // Both GPUs are held: a task that asks 0 (its image's check and get first) runs at once, with no GPU variable.
        const t0 = Date.now();
        const none = await execute("none", { GPU_WORKERS_GPUS: "0" }).done;
        assert.strictEqual(none.status, 0, none.output);
        assert.strictEqual(visible(none.output), "unset", none.output);
        assert.ok(Date.now() - t0 < 30_000, `the task that asks 0 waited ${Date.now() - t0} ms`);

        // A resource's check, on the same worker, while both are held.
        const pipeline = path.join(root, "pipeline.yml");
        fs.writeFileSync(
            pipeline,
            JSON.stringify({
                resources: [{ name: "r", type: "mock", tags: [TAG], source: { initial_version: "v1" } }],
                jobs: [{ name: "j", plan: [{ get: "r", tags: [TAG] }] }],
            }),
        );
        fly!.ok(["set-pipeline", "-n", "-p", "alloc", "-c", pipeline]);
        fly!.ok(["unpause-pipeline", "-p", "alloc"]);
        const check = fly!.run(["check-resource", "-r", "alloc/r"], 60_000);
        assert.strictEqual(check.status, 0, `${check.stdout}${check.stderr}`);
        assert.match(check.stdout, /succeeded/);

        // A third ask waits for a free GPU: it starts only once the step of a or b has ended.
        const c = execute("c", { GPU_WORKERS_GPUS: "1" });
        await until("the third task to print its GPU", () => visible(c.output()) !== undefined, 240_000);
        assert.ok(/step-finished/.test(a.output() + b.output()), `the third task started while both GPUs were held: ${c.output()}`);
        const [ra, rb, rc] = await Promise.all([a.done, b.done, c.done]);
        assert.strictEqual(ra.status, 0, ra.output);
        assert.strictEqual(rb.status, 0, rb.output);
        assert.strictEqual(rc.status, 0, rc.output);
        assert.match(visible(rc.output) ?? "", /^[01]$/, rc.output);
    });

    it("an ask above the worker's capacity fails at once, and fly's output names the ask and the capacity", async () => {
        const t0 = Date.now();
        const r = await execute("big", { GPU_WORKERS_GPUS: "3" }).done;
        assert.notStrictEqual(r.status, 0, r.output);
        assert.match(r.output, /GPU_WORKERS_GPUS=3 asks more GPUs than this worker has \(2\)/);
        assert.ok(Date.now() - t0 < 60_000, `the refused ask took ${Date.now() - t0} ms`);
    });

    it("once their steps have ended, the tasks' GPUs are free though Concourse keeps their containers: an ask of both runs at once", async () => {
        const holds = `${WRAPPER_STATE_DIR}/gpu-holds`;
        // A one-off build's containers stay for 5 minutes (--gc-one-off-grace-period), and with them the holds' records.
        const kept = Number(inst!.exec(`find ${holds} -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l`).trim());
        assert.ok(kept >= 2, `the finished tasks' containers are still there (${kept} records)`);
        const t0 = Date.now();
        const both = await execute("both", { GPU_WORKERS_GPUS: "2" }).done;
        assert.strictEqual(both.status, 0, both.output);
        assert.strictEqual(visible(both.output), "0,1", both.output);
        assert.ok(Date.now() - t0 < 60_000, `the ask of both waited (${Date.now() - t0} ms)`);
        assert.strictEqual(inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`), 0);
    });
});
