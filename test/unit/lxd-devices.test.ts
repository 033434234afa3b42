import * as assert from "assert";
import { inventorySchema, GpuInventoryInput } from "../../components/lib/gpu/inventory";
import { planWorkerGpus, PlanOptions } from "../../components/lib/gpu/plan";
import { lxdConfigForWorker, lxdDevicesForWorker, lxdPciAddress, WorkerDeviceOptions } from "../../components/lib/lxd/devices";
import { lxdDeviceProblems } from "../../components/lib/lxd/validate";

const TWO_NVIDIA: GpuInventoryInput = {
    vendor: "nvidia",
    gpus: [
        { index: 0, model: "NVIDIA L4", memoryMiB: 23034, pciBusId: "00000000:3B:00.0" },
        { index: 1, model: "NVIDIA L4", memoryMiB: 23034, pciBusId: "00000000:5E:00.0" },
    ],
};
const A100_MIG: GpuInventoryInput = {
    vendor: "nvidia",
    gpus: [
        {
            index: 0,
            model: "NVIDIA A100-SXM4-40GB",
            memoryMiB: 40960,
            mig: [
                { index: 1, profile: "2g.10gb", gi: 5, ci: 0 },
                { index: 0, profile: "3g.20gb", gi: 1, ci: 0, uuid: "MIG-2f4e8d3c-1a2b-4c5d-8e9f-0a1b2c3d4e5f" },
            ],
        },
    ],
};
const AMD: GpuInventoryInput = {
    vendor: "amd",
    gpus: [{ index: 0, model: "AMD Radeon 780M", memoryMiB: 4096, integrated: true, gfxTarget: "gfx1103", renderNode: "renderD128" }],
};

const planOf = (inv: GpuInventoryInput, o: Partial<PlanOptions> = {}) =>
    planWorkerGpus(inventorySchema.parse(inv), { selection: "all", cdi: false, fabricManager: { mode: "auto", partitions: [] }, extraTags: [], ...o });
const opts: WorkerDeviceOptions = { cdi: false, datasets: { root: "/srv", writableSuffixes: ["_writable", "_rw"] }, ssh: { address: "127.0.0.1", port: 2201 } };
const gpuDevices = (devices: Record<string, Record<string, string>>) => Object.fromEntries(Object.entries(devices).filter(([, d]) => d.type === "gpu"));

function assertValid(devices: Record<string, unknown>) {
    for (const [name, d] of Object.entries(devices)) assert.deepStrictEqual(lxdDeviceProblems(name, d), [], name);
}

describe("LXD devices from the worker's GPU plan", () => {
    it("a worker tagged gpu-devices=0 gets GPU 0 and nothing else (CDI)", () => {
        const plan = planOf(TWO_NVIDIA, { selection: [0], cdi: true });
        assert.ok(plan.tags.includes("gpu-devices=0"));
        const devices = lxdDevicesForWorker(plan, { ...opts, cdi: true });
        assert.deepStrictEqual(gpuDevices(devices), { gpu0: { type: "gpu", gputype: "physical", id: "nvidia.com/gpu=0" } });
        assertValid(devices);
    });

    it("a worker tagged gpu-devices=0 gets GPU 0 and nothing else (by PCI address, no CDI)", () => {
        const plan = planOf(TWO_NVIDIA, { selection: [0] });
        const devices = lxdDevicesForWorker(plan, opts);
        assert.deepStrictEqual(gpuDevices(devices), { gpu0: { type: "gpu", gputype: "physical", pci: "0000:3b:00.0" } });
        assertValid(devices);
    });

    it("GPU 1 only, by card id when the inventory has no PCI address", () => {
        const inv = { ...TWO_NVIDIA, gpus: TWO_NVIDIA.gpus!.map(({ pciBusId: _, ...g }) => g) };
        const plan = planOf(inv, { selection: [1] });
        assert.ok(plan.tags.includes("gpu-devices=1"));
        assert.deepStrictEqual(gpuDevices(lxdDevicesForWorker(plan, opts)), { gpu1: { type: "gpu", gputype: "physical", id: "1" } });
    });

    it("the gpu devices are exactly the plan's CDI devices", () => {
        const plan = planOf(TWO_NVIDIA, { cdi: true });
        const ids = Object.values(gpuDevices(lxdDevicesForWorker(plan, { ...opts, cdi: true }))).map((d) => d.id);
        assert.deepStrictEqual(ids, plan.cdiDevices);
    });

    it("MIG: one device per MIG instance, by CDI id, by uuid, or by gi/ci", () => {
        const plan = planOf(A100_MIG, { cdi: true });
        assert.deepStrictEqual(gpuDevices(lxdDevicesForWorker(plan, { ...opts, cdi: true })), {
            "gpu0-mig0": { type: "gpu", gputype: "physical", id: "nvidia.com/gpu=0:0" },
            "gpu0-mig1": { type: "gpu", gputype: "physical", id: "nvidia.com/gpu=0:1" },
        });
        const devices = lxdDevicesForWorker(planOf(A100_MIG), opts);
        assert.deepStrictEqual(gpuDevices(devices), {
            "gpu0-mig0": { type: "gpu", gputype: "mig", "mig.uuid": "MIG-2f4e8d3c-1a2b-4c5d-8e9f-0a1b2c3d4e5f" },
            "gpu0-mig1": { type: "gpu", gputype: "mig", id: "0", "mig.gi": "5", "mig.ci": "0" },
        });
        assertValid(devices);
    });

    it("AMD: gpu device plus /dev/kfd as unix-char, owned by the render gid, mode 0660", () => {
        const plan = planOf(AMD);
        assert.deepStrictEqual(plan.deviceNodes, ["/dev/kfd", "/dev/dri/renderD128"]);
        const devices = lxdDevicesForWorker(plan, { ...opts, gpuGid: 109 });
        assert.deepStrictEqual(devices.gpu0, { type: "gpu", gputype: "physical", id: "0", gid: "109", mode: "0660" });
        assert.deepStrictEqual(devices.kfd, { type: "unix-char", source: "/dev/kfd", path: "/dev/kfd", gid: "109", mode: "0660" });
        assert.ok(!Object.values(devices).some((d) => d.source?.startsWith("/dev/dri/")), "render nodes come with the gpu device");
        assertValid(devices);
    });

    it("no GPU: no gpu device at all", () => {
        const devices = lxdDevicesForWorker(planOf({ vendor: "none" }), opts);
        assert.deepStrictEqual(Object.keys(devices), ["sshd"]);
    });

    it("sshd proxy: host loopback port to the instance's port 22", () => {
        const devices = lxdDevicesForWorker(planOf({ vendor: "none" }), opts);
        assert.deepStrictEqual(devices.sshd, { type: "proxy", listen: "tcp:127.0.0.1:2201", connect: "tcp:127.0.0.1:22", bind: "host" });
        assert.strictEqual(lxdDevicesForWorker(planOf({ vendor: "none" }), { ...opts, ssh: { address: "::1", port: 2202 } }).sshd.listen, "tcp:[::1]:2202");
        assert.deepStrictEqual(lxdDevicesForWorker(planOf({ vendor: "none" }), { ...opts, ssh: undefined }), {});
    });

    it("datasets: one disk per folder, read-only unless the name ends in a writable suffix", () => {
        const devices = lxdDevicesForWorker(planOf({ vendor: "none" }), {
            ...opts,
            datasetSource: "/data/sets/",
            datasetFolders: ["mnist", "scratch_rw", "out_writable"],
        });
        assert.deepStrictEqual(devices["dataset-mnist"], { type: "disk", source: "/data/sets/mnist", path: "/srv/mnist", readonly: "true" });
        assert.deepStrictEqual(devices["dataset-scratch_rw"], {
            type: "disk",
            source: "/data/sets/scratch_rw",
            path: "/srv/scratch_rw",
            readonly: "false",
            shift: "true",
        });
        assert.strictEqual(devices["dataset-out_writable"].readonly, "false");
        const noShift = lxdDevicesForWorker(planOf({ vendor: "none" }), { ...opts, datasetSource: "/d", datasetFolders: ["a_rw"], shiftWritable: false });
        assert.strictEqual(noShift["dataset-a_rw"].shift, undefined);
        assertValid(devices);
    });

    it("datasets without a folder list: the whole source, read-only", () => {
        const devices = lxdDevicesForWorker(planOf({ vendor: "none" }), { ...opts, datasetSource: "/data/sets" });
        assert.deepStrictEqual(devices.datasets, { type: "disk", source: "/data/sets", path: "/srv", readonly: "true" });
        assert.throws(
            () => lxdDevicesForWorker(planOf({ vendor: "none" }), { ...opts, datasetSource: "/d", datasetFolders: ["../etc"] }),
            /dataset folder "..\/etc" must be one folder name/,
        );
    });

    it("instance config: nesting for containers; nvidia.runtime only without CDI", () => {
        assert.deepStrictEqual(lxdConfigForWorker(planOf(TWO_NVIDIA), { cdi: false }), {
            "security.nesting": "true",
            "nvidia.runtime": "true",
            "nvidia.driver.capabilities": "compute,utility",
        });
        assert.deepStrictEqual(lxdConfigForWorker(planOf(TWO_NVIDIA, { cdi: true }), { cdi: true }), { "security.nesting": "true" });
        assert.deepStrictEqual(lxdConfigForWorker(planOf(AMD), { cdi: false, type: "virtual-machine" }), {});
        assert.ok(!("security.privileged" in lxdConfigForWorker(planOf(TWO_NVIDIA), { cdi: false })));
    });

    it("PCI bus ids in nvidia-smi form become LXD's form", () => {
        assert.strictEqual(lxdPciAddress("00000000:3B:00.0"), "0000:3b:00.0");
        assert.strictEqual(lxdPciAddress("0000:18:00.1"), "0000:18:00.1");
    });
});
