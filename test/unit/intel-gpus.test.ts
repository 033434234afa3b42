/**
 * Intel GPUs (issue 42) in the inventory, the GPU plan and the chain: what an Intel GPU must
 * declare; the tags (gpu-type=intel, the model's slug, gpu-driver, gpu-family); every container
 * (or, with allocation, each holder) gets exactly its GPUs' card and render nodes, and a spec
 * naming another's is refused; the intel.com/gpu CDI spec rendered from the inventory, with the
 * by-path links; the driver is the kernel's (no pin), there is no toolkit to install, the health
 * watcher watches the GPUs by bus id and driver, the metrics are not Intel's yet; an LXD instance
 * gets its GPUs by PCI address.
 */
import * as assert from "assert";
import { workerSpec } from "../../components/chain/gpu-worker";
import { INTEL_CDI_KIND, renderIntelCdiSpec } from "../../components/lib/cdi/intel-spec";
import { validateCdiSpec } from "../../components/lib/cdi/schema";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planWorkerGpus } from "../../components/lib/gpu/plan";
import { lxdDevicesForWorker } from "../../components/lib/lxd/devices";
import { CDI_SPEC_PATHS } from "../../components/lib/links/container-toolkit/render";
import { planGpuDriver } from "../../components/lib/links/gpu-driver/plan";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { planGpuMetrics } from "../../components/lib/links/gpu-metrics/plan";
import { planRuncWrapper } from "../../components/lib/links/runc-wrapper/plan";
import { renderWrapperConfig, WRAPPER_CONFIG_PATH } from "../../components/lib/links/runc-wrapper/render";
import { planHost } from "../../components/lib/plan/host-plan";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";
import { INTEL_FLEX_170_X2 } from "../fixtures/stacks/inventories";

const inventory = inventorySchema.parse(INTEL_FLEX_170_X2);
const plan = (options: Partial<Parameters<typeof planWorkerGpus>[1]> = {}) =>
    planWorkerGpus(inventory, { selection: "all", cdi: true, fabricManager: { mode: "auto", partitions: [] }, extraTags: [], ...options });
const transport = { ssh: { host: "10.0.0.9", privateKey: "key", hostKey: HOST_KEY } };

function issues(input: unknown): string[] {
    const r = inventorySchema.safeParse(input);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
}

describe("Intel GPUs", () => {
    it("an Intel GPU names its card and render nodes, PCI address and driver; those fields are Intel's alone", () => {
        assert.deepStrictEqual(issues(INTEL_FLEX_170_X2), []);
        const bare = { vendor: "intel", gpus: [{ index: 0, model: "Intel Arc A770", memoryMiB: 16384 }] };
        assert.deepStrictEqual(issues(bare), [
            "gpus.0.cardNode: an Intel GPU needs its card node, e.g. card0 (npm run discover prints it)",
            "gpus.0.renderNode: an Intel GPU needs its render node, e.g. renderD128 (npm run discover prints it)",
            "gpus.0.pciBusId: an Intel GPU needs its PCI bus id, e.g. 0000:4d:00.0 (npm run discover prints it)",
            "gpus.0.driver: an Intel GPU needs its driver, i915 or xe (npm run discover prints it)",
        ]);
        assert.deepStrictEqual(issues({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA L4", memoryMiB: 23034, cardNode: "card0", driver: "xe" }] }), [
            "gpus.0.cardNode: cardNode is for Intel GPUs only",
            "gpus.0.driver: driver is for Intel GPUs only",
        ]);
        assert.match(
            issues({ ...INTEL_FLEX_170_X2, gpus: [{ ...INTEL_FLEX_170_X2.gpus![0], driver: "nouveau" }] }).join(),
            /gpus\.0\.driver: expected i915 or xe/,
        );
        assert.match(
            issues({ ...INTEL_FLEX_170_X2, gpus: [{ ...INTEL_FLEX_170_X2.gpus![0], pciDeviceId: "56c0" }] }).join(),
            /expected a PCI device id such as 0x56c0/,
        );
    });

    it("tags: gpu-type=intel, the count, the model's slug, the memory, the driver and the family", () => {
        const tags = plan().tags;
        for (const t of [
            "gpu",
            "gpu-type=intel",
            "gpu-count=2",
            "gpu-devices=0,1",
            "gpu-model=data-center-gpu-flex-170",
            "gpu-memory-gib=16",
            "gpu-driver=i915",
            "gpu-family=flex",
        ])
            assert.ok(tags.includes(t), `${t} in ${tags.join(" ")}`);
        assert.ok(!tags.some((t) => t.startsWith("gpu-mig-strategy")), "no NVIDIA tags");
        const unknownMemory = planWorkerGpus(
            inventorySchema.parse({ ...INTEL_FLEX_170_X2, gpus: INTEL_FLEX_170_X2.gpus!.map((g) => ({ ...g, memoryMiB: 0 })) }),
            {
                selection: "all",
                cdi: true,
                fabricManager: { mode: "auto", partitions: [] },
                extraTags: [],
            },
        );
        assert.ok(!unknownMemory.tags.some((t) => t.startsWith("gpu-memory-gib")), "memory not known (sysfs has none): no memory tag");
    });

    it("every container gets exactly the selected GPUs' card and render nodes, and no GPU variable; a spec may carry no other GPU's node", () => {
        const one = plan({ selection: [1] });
        assert.deepStrictEqual(one.deviceNodes, ["/dev/dri/card1", "/dev/dri/renderD129"]);
        assert.deepStrictEqual(one.gpuNodes, ["/dev/dri/card1", "/dev/dri/renderD129"]);
        assert.deepStrictEqual(one.deviceLinks, [
            { path: "/dev/dri/by-path/pci-0000:5e:00.0-card", node: "/dev/dri/card1" },
            { path: "/dev/dri/by-path/pci-0000:5e:00.0-render", node: "/dev/dri/renderD129" },
        ]);
        assert.deepStrictEqual(one.env, {});
        assert.deepStrictEqual(one.cdiDevices, ["intel.com/gpu=card1"]);
        assert.ok(one.unsetEnv.includes("NVIDIA_VISIBLE_DEVICES") && one.unsetEnv.includes("AMD_VISIBLE_DEVICES"));
    });

    it("with allocation each GPU is a unit whose holder gets its two nodes; no variable names the units", () => {
        const a = plan({ allocation: { mode: "exclusive", perTask: 1, waitSeconds: 60 } }).allocation!;
        assert.strictEqual(a.visibleEnv, "");
        assert.deepStrictEqual(
            a.units.map((u) => [u.id, u.visible, u.deviceNodes]),
            [
                ["0", "", ["/dev/dri/card0", "/dev/dri/renderD128"]],
                ["1", "", ["/dev/dri/card1", "/dev/dri/renderD129"]],
            ],
        );
        assert.deepStrictEqual(
            a.units[0].deviceLinks?.map((l) => l.path),
            ["/dev/dri/by-path/pci-0000:4d:00.0-card", "/dev/dri/by-path/pci-0000:4d:00.0-render"],
        );
        const ts = plan({ allocation: { mode: "timeSlice", perTask: 1, replicas: 3, waitSeconds: 60 } });
        assert.ok(ts.tags.includes("gpu-share=timeslice") && ts.tags.includes("gpu-slots=6"));
        assert.throws(
            () => plan({ allocation: { mode: "mps", perTask: 1, waitSeconds: 60 } }),
            /MPS is NVIDIA's; an INTEL worker shares its GPUs with timeSlice/,
        );
    });

    it("the wrapper's settings: a holder's by-path names are its unit's alone; a name outside /dev, or every container given a unit's node, is refused", () => {
        const settings = planRuncWrapper({
            inventory,
            allocation: { mode: "exclusive" },
            wrapperBinary: { path: "/nonexistent", sha256: "0".repeat(64) },
        });
        const config = JSON.parse(renderWrapperConfig(settings));
        assert.strictEqual(config.deviceLinks, undefined, "a container holding no unit gets no by-path name");
        assert.deepStrictEqual(config.allocation.units[1].deviceLinks, [
            { path: "/dev/dri/by-path/pci-0000:5e:00.0-card", node: "/dev/dri/card1" },
            { path: "/dev/dri/by-path/pci-0000:5e:00.0-render", node: "/dev/dri/renderD129" },
        ]);
        const shared = { ...settings, plan: { ...settings.plan, deviceLinks: [{ path: "/dev/dri/by-path/x", node: "/dev/dri/card1" }] } };
        assert.throws(() => renderWrapperConfig(shared), /deviceNodes: a unit's node is given to every container \(\/dev\/dri\/card1\)/);
        for (const bad of ["/etc/dri/x", "/dev/dri/../../etc/x", "dev/dri/x"]) {
            const units = settings.allocation!.units.map((u, i) => (i === 0 ? { ...u, deviceLinks: [{ path: bad, node: "/dev/dri/card0" }] } : u));
            assert.throws(
                () => renderWrapperConfig({ ...settings, allocation: { ...settings.allocation!, units } }),
                /units\.0\.deviceLinks\.0\.path: expected a path/,
                bad,
            );
        }
    });

    it("the wrapper's settings refuse a unit named by a value where no variable names units, and the other way round", () => {
        const settings = planRuncWrapper({
            inventory,
            allocation: { mode: "exclusive" },
            wrapperBinary: { path: "/nonexistent", sha256: "0".repeat(64) },
        });
        assert.doesNotThrow(() => renderWrapperConfig(settings));
        const named = { ...settings.allocation!, units: settings.allocation!.units.map((u) => ({ ...u, visible: u.id })) };
        assert.throws(() => renderWrapperConfig({ ...settings, allocation: named }), /units\.0\.visible: empty exactly when visibleEnv is/);
        const variable = { ...settings.allocation!, visibleEnv: "AMD_VISIBLE_DEVICES" as const };
        assert.throws(() => renderWrapperConfig({ ...settings, allocation: variable }), /units\.0\.visible: empty exactly when visibleEnv is/);
    });

    it("the intel.com/gpu CDI spec: a device per GPU by card name, its nodes and its by-path names, valid by the project's CDI rules", () => {
        const spec = JSON.parse(renderIntelCdiSpec(inventory.gpus));
        validateCdiSpec(spec, "intel spec");
        assert.strictEqual(spec.kind, INTEL_CDI_KIND);
        assert.deepStrictEqual(
            spec.devices.map((d: { name: string }) => d.name),
            ["card0", "card1"],
        );
        assert.deepStrictEqual(spec.devices[1].containerEdits, {
            deviceNodes: [
                { path: "/dev/dri/card1", hostPath: "/dev/dri/card1", type: "c" },
                { path: "/dev/dri/renderD129", hostPath: "/dev/dri/renderD129", type: "c" },
                // The by-path names as the nodes themselves: a host without udev's links serves them too.
                { path: "/dev/dri/by-path/pci-0000:5e:00.0-card", hostPath: "/dev/dri/card1", type: "c" },
                { path: "/dev/dri/by-path/pci-0000:5e:00.0-render", hostPath: "/dev/dri/renderD129", type: "c" },
            ],
        });
    });

    it("a whole worker: the CDI spec placed, the wrapper's settings naming only the two GPUs' nodes, no toolkit package, a health watcher", () => {
        const host = planHost(workerSpec("flex", { transport, inventory }));
        const files = new Map(host.links.flatMap((l) => l.rendered.files.map((f) => [f.path, f.content] as const)));
        assert.deepStrictEqual(JSON.parse(files.get(CDI_SPEC_PATHS.intel)!), JSON.parse(renderIntelCdiSpec(inventory.gpus)));
        const wrapper = JSON.parse(files.get(WRAPPER_CONFIG_PATH)!);
        assert.deepStrictEqual(wrapper.deviceNodes, ["/dev/dri/card0", "/dev/dri/renderD128", "/dev/dri/card1", "/dev/dri/renderD129"]);
        assert.deepStrictEqual(wrapper.gpuNodes, wrapper.deviceNodes);
        assert.deepStrictEqual(
            wrapper.deviceLinks.map((l: { node: string }) => l.node),
            wrapper.deviceNodes,
            "each node at its by-path name too",
        );
        assert.strictEqual(wrapper.realRuntime, "/usr/local/lib/gpu-workers/runc.real");
        const components = host.links.map((l) => l.component);
        assert.strictEqual(components.at(-1), "GpuHealth", `the watcher last: ${components.join(" ")}`);
        assert.deepStrictEqual(planGpuHealth({ inventory })!.gpus, [
            { index: 0, busId: "0000:4d:00.0", driver: "i915" },
            { index: 1, busId: "0000:5e:00.0", driver: "i915" },
        ]);
        assert.ok(!host.steps.some((s) => s.name.includes("container-toolkit")), "no toolkit package to install");
        assert.ok(host.steps.some((s) => s.run.includes("gpu-driver.sh") && s.run.includes("--vendor intel")));
    });

    it("the driver is the kernel's: a pin is refused; a toolkit version is refused, naming why; the node exporter's metrics find each GPU by its address", () => {
        assert.deepStrictEqual(planGpuDriver({ vendor: "intel" }), { vendor: "intel", version: "preinstalled" });
        assert.throws(
            () => planGpuDriver({ vendor: "intel", version: "1.2.3" }),
            /driver\.version: 1\.2\.3: Intel's GPU drivers \(i915, xe\) come with the kernel/,
        );
        assert.throws(
            () => planHost(workerSpec("flex", { transport, inventory, toolkit: { version: "1.17.8" } })),
            /Intel has no container toolkit to install/,
        );
        assert.deepStrictEqual(planGpuMetrics({ inventory }), {
            vendor: "intel",
            gpus: [0, 1],
            busIds: ["0000:4d:00.0", "0000:5e:00.0"],
            textfileDir: "/var/lib/prometheus/node-exporter",
            intervalSeconds: 15,
        });
    });

    it("an LXD instance gets each GPU by PCI address, its nodes owned by the render group's gid", () => {
        const devices = lxdDevicesForWorker(plan(), { cdi: false, datasets: { root: "/srv", writableSuffixes: [] }, gpuGid: 993 });
        assert.deepStrictEqual(devices, {
            gpu0: { type: "gpu", gputype: "physical", pci: "0000:4d:00.0", gid: "993", mode: "0660" },
            gpu1: { type: "gpu", gputype: "physical", pci: "0000:5e:00.0", gid: "993", mode: "0660" },
        });
    });
});
