import * as assert from "assert";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { GPU_CONTROL_VARIABLES, modelSlug, PlanError, planWorkerGpus, PlanOptions } from "../../components/lib/gpu/plan";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";

const base: PlanOptions = { selection: "all", cdi: false, fabricManager: { mode: "auto", partitions: [] }, extraTags: [] };
const inv = (x: unknown) => inventorySchema.parse(x);

describe("GPU plan (one source of truth)", () => {
    it("no GPU: no gpu tags, and a task cannot ask the runtime for one", () => {
        const plan = planWorkerGpus(inv(NO_GPU), { ...base, extraTags: ["linux"] });
        assert.deepStrictEqual(plan.tags, ["linux"]);
        assert.deepStrictEqual(plan.env, {}, "no GPU variable at all");
        assert.deepStrictEqual(plan.unsetEnv, GPU_CONTROL_VARIABLES, "every GPU variable a task brings is removed");
        assert.strictEqual(plan.fabricManager.enabled, false);
    });

    it("a privileged mode other than ignore is a tag after the computed ones, before the extra ones", () => {
        assert.deepStrictEqual(planWorkerGpus(inv(NO_GPU), { ...base, extraTags: ["linux"], privilegedMode: "full" }).tags, ["privileged=full", "linux"]);
        const gpu = planWorkerGpus(inv(RTX_A500_LAPTOP), { ...base, privilegedMode: "fuse-only" }).tags;
        assert.deepStrictEqual(gpu.slice(0, 1).concat(gpu.slice(-1)), ["gpu", "privileged=fuse-only"]);
        assert.deepStrictEqual(planWorkerGpus(inv(NO_GPU), { ...base, privilegedMode: "ignore" }).tags, []);
    });

    it("RTX A500 laptop: one GPU, 4 GiB", () => {
        const plan = planWorkerGpus(inv(RTX_A500_LAPTOP), base);
        assert.deepStrictEqual(plan.tags, [
            "gpu",
            "gpu-type=nvidia",
            "gpu-count=1",
            "gpu-devices=0",
            "gpu-model=rtx-a500-laptop-gpu",
            "gpu-memory-gib=4",
            "gpu-family=ampere",
            "gpu-compute=8.6",
            "gpu-driver-major=535",
            "gpu-cuda=12.2",
            "gpu-mig-strategy=none",
            "gpu-count-min=1",
        ]);
        assert.deepStrictEqual(plan.env, { NVIDIA_VISIBLE_DEVICES: "0", NVIDIA_DRIVER_CAPABILITIES: "compute,utility" });
    });

    it("the tags and the injected devices name the same GPUs", () => {
        const plan = planWorkerGpus(inv(HGX_H100_8X), { ...base, selection: [3, 1], cdi: true });
        assert.ok(plan.tags.includes("gpu-devices=1,3"));
        assert.ok(plan.tags.includes("gpu-count=2"));
        assert.strictEqual(plan.env.NVIDIA_VISIBLE_DEVICES, "nvidia.com/gpu=1,nvidia.com/gpu=3");
        assert.deepStrictEqual(plan.cdiDevices, ["nvidia.com/gpu=1", "nvidia.com/gpu=3"]);
        const tagged = plan.tags
            .find((t) => t.startsWith("gpu-devices="))!
            .split("=")[1]
            .split(",");
        assert.deepStrictEqual(
            plan.cdiDevices.map((d) => d.split("=")[1]),
            tagged,
        );
    });

    it("HGX H100 with NVSwitches: fabricmanager on, partitions tagged", () => {
        const plan = planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricManager: { mode: "auto", partitions: [1] } });
        assert.deepStrictEqual(plan.fabricManager, { enabled: true, partitions: [1] });
        assert.ok(plan.tags.includes("gpu-fabric-partition=1"));
        assert.ok(plan.tags.includes("gpu-model=h100-80gb-hbm3"));
        assert.ok(plan.tags.includes("gpu-memory-gib=80"));
        assert.ok(plan.tags.includes("gpu-count=8"));
    });

    it("host is what on meant; service-vm is a board's, never a worker's", () => {
        const host = planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricManager: { mode: "host", partitions: [] } });
        assert.deepStrictEqual(host, planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricManager: { mode: "on", partitions: [] } }));
        assert.strictEqual(host.fabricManager.enabled, true);
        assert.throws(
            () => planWorkerGpus(inv(RTX_A500_LAPTOP), { ...base, fabricManager: { mode: "host", partitions: [] } }),
            /fabricManager.mode: host needs NVSwitches/,
        );
        assert.throws(
            () => planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricManager: { mode: "service-vm", partitions: [] } }),
            (e: unknown) => e instanceof PlanError && /^fabricManager\.mode: service-vm makes the host a board shared by several workers/.test(e.message),
        );
    });

    it("a worker VM of a shared board: tagged with its fabric partition and count, runs no fabricmanager", () => {
        const vm = inv({ vendor: "nvidia", gpus: [0, 1].map((index) => ({ index, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559 })) });
        const plan = planWorkerGpus(vm, { ...base, cdi: true, fabricManager: { mode: "off", partitions: [] }, fabricPartition: 5, extraTags: ["hgx"] });
        assert.deepStrictEqual(plan.tags, [
            "gpu",
            "gpu-type=nvidia",
            "gpu-count=2",
            "gpu-devices=0,1",
            "gpu-model=h100-80gb-hbm3",
            "gpu-memory-gib=80",
            "gpu-fabric-partition=5",
            "gpu-mig-strategy=none",
            "gpu-count-min=1",
            "gpu-count-min=2",
            "hgx",
        ]);
        assert.deepStrictEqual(plan.cdiDevices, ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]);
        assert.strictEqual(plan.env.NVIDIA_VISIBLE_DEVICES, "nvidia.com/gpu=0,nvidia.com/gpu=1");
        assert.deepStrictEqual([plan.fabricManager.enabled, plan.fabricPartition], [false, 5]);
        assert.throws(
            () => planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricPartition: 1 }),
            /a worker on fabric partition 1 runs no fabricmanager of its own/,
        );
    });

    it("fabricmanager never starts without NVSwitches", () => {
        assert.throws(
            () => planWorkerGpus(inv(RTX_A500_LAPTOP), { ...base, fabricManager: { mode: "on", partitions: [] } }),
            (e: unknown) => e instanceof PlanError && /fabricManager.mode: on needs NVSwitches/.test(e.message),
        );
        assert.strictEqual(planWorkerGpus(inv(RTX_A500_LAPTOP), base).fabricManager.enabled, false);
        assert.strictEqual(planWorkerGpus(inv(HGX_H100_8X), { ...base, fabricManager: { mode: "off", partitions: [] } }).fabricManager.enabled, false);
    });

    it("AMD Phoenix gfx1103: kfd and its render node, HSA override 11.0.0", () => {
        const plan = planWorkerGpus(inv(AMD_PHOENIX), base);
        assert.deepStrictEqual(plan.env, { AMD_VISIBLE_DEVICES: "0", HSA_OVERRIDE_GFX_VERSION: "11.0.0" });
        assert.deepStrictEqual(plan.deviceNodes, ["/dev/kfd", "/dev/dri/renderD128"]);
        assert.ok(plan.tags.includes("gpu-type=amd"));
        assert.ok(plan.tags.includes("gpu-gfx=gfx1103"));
        assert.ok(plan.unsetEnv.includes("NVIDIA_VISIBLE_DEVICES"));
    });

    it("A100 with MIG: the MIG devices are injected and tagged", () => {
        const plan = planWorkerGpus(inv(A100_MIG), { ...base, cdi: true });
        assert.deepStrictEqual(plan.cdiDevices, ["nvidia.com/gpu=0:0", "nvidia.com/gpu=0:1", "nvidia.com/gpu=0:2"]);
        assert.ok(plan.tags.includes("gpu-mig"));
        assert.ok(plan.tags.includes("gpu-mig-profile=1g.5gb"));
        assert.ok(plan.tags.includes("gpu-mig-profile=3g.20gb"));
        assert.strictEqual(planWorkerGpus(inv(A100_MIG), base).env.NVIDIA_VISIBLE_DEVICES, "0:0,0:1,0:2");
    });

    it("a selection outside the inventory is an error naming what exists", () => {
        assert.throws(
            () => planWorkerGpus(inv(RTX_A500_LAPTOP), { ...base, selection: [0, 2] }),
            /selection: GPU index 2 is not in the inventory \(declared: 0\)/,
        );
    });

    it("every GPU control variable is either set or removed", () => {
        for (const inventory of [NO_GPU, RTX_A500_LAPTOP, AMD_PHOENIX, A100_MIG]) {
            const plan = planWorkerGpus(inv(inventory), base);
            for (const name of GPU_CONTROL_VARIABLES) assert.ok(name in plan.env !== plan.unsetEnv.includes(name), name);
        }
    });

    it("model slugs are tag-safe", () => {
        assert.strictEqual(modelSlug("NVIDIA H100 80GB HBM3"), "h100-80gb-hbm3");
        assert.strictEqual(modelSlug("NVIDIA A100-SXM4-40GB"), "a100-sxm4-40gb");
        assert.strictEqual(modelSlug("AMD Instinct MI250X / MI250"), "instinct-mi250x-mi250");
    });
});
