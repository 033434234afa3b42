/**
 * GPUs handed out per task (issue 41, items 1 and 7): the `allocation` setting, the units and the
 * wrapper settings' allocation block the plan renders from the inventory, the capacity tags, and
 * that mode all (the default) renders exactly what a worker without the setting rendered.
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { GpuWorker } from "../../components/chain/gpu-worker";
import { workerSpec } from "../../components/chain/gpu-worker";
import { MAX_WAIT_SECONDS } from "../../components/lib/gpu/allocation";
import { GpuInventoryInput, inventorySchema } from "../../components/lib/gpu/inventory";
import { GPU_CONTROL_VARIABLES, planWorkerGpus, PlanOptions } from "../../components/lib/gpu/plan";
import { HEALTH_GPUS_FILE } from "../../components/lib/links/gpu-health/render";
import { planRuncWrapper, RuncWrapperTerms, wrapperTerms } from "../../components/lib/links/runc-wrapper/plan";
import { renderWrapperConfig, wrapperConfigSchema } from "../../components/lib/links/runc-wrapper/render";
import { planHost } from "../../components/lib/plan/host-plan";
import { parseSettings, WORKER_DEFAULTS } from "../../components/lib/settings/settings";
import { problemsOf } from "../support/stack-problems";
import { fileSetContents, recordGraph, settle } from "../support/pulumi-graph";
import { parseStackConfig } from "../../stacks/checks/stack";
import { workerArgs } from "../../stacks/args/component-args";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const L4_4X: GpuInventoryInput = {
    vendor: "nvidia",
    driverVersion: "550.127.05",
    gpus: [0, 1, 2, 3].map((index) => ({ index, model: "NVIDIA L4", memoryMiB: 23034, pciBusId: `00000000:0${index + 1}:00.0` })),
};
/** A MIG GPU beside a whole one: units 0:0, 0:1 and 1. */
const MIXED_MIG: GpuInventoryInput = {
    vendor: "nvidia",
    gpus: [
        { index: 0, model: "NVIDIA A100-SXM4-40GB", memoryMiB: 40960, mig: [1, 0].map((index) => ({ index, profile: "3g.20gb", gi: index + 1, ci: 0 })) },
        { index: 1, model: "NVIDIA A100-SXM4-40GB", memoryMiB: 40960 },
    ],
};
/** Two AMD GPUs, one with its render node declared. */
const AMD_TWO: GpuInventoryInput = {
    vendor: "amd",
    gpus: [
        { index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a", renderNode: "renderD130" },
        { index: 1, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a" },
    ],
};

const wrapperBinary = { path: "dist/wrapper/runc-wrapper", sha256: "4".repeat(64) };
const ssh = { ssh: { host: "10.0.0.5", privateKey: "key", hostKey: HOST_KEY } };
const base: PlanOptions = { selection: "all", cdi: false, fabricManager: { mode: "off", partitions: [] }, extraTags: [] };

/** The wrapper settings file RuncWrapper alone renders, parsed. */
function wrapperConfig(inventory: GpuInventoryInput, terms: Partial<RuncWrapperTerms> = {}) {
    return JSON.parse(renderWrapperConfig(planRuncWrapper({ inventory: inventorySchema.parse(inventory), wrapperBinary, ...terms })));
}

/** A worker's whole plan from GpuWorker's arguments (the settings parsed as a stack's are). */
function hostPlan(inventory: GpuInventoryInput, extra: Record<string, unknown> = {}) {
    return planHost(workerSpec("w", { transport: ssh, inventory: inventorySchema.parse(inventory), ...extra }));
}

function placed(plan: ReturnType<typeof hostPlan>, path: string): string {
    const file = plan.files.find((f) => f.path === path);
    assert.ok(file, `${path} is placed`);
    return file.content;
}

describe("allocation: the setting", () => {
    it("defaults: mode all, perTask 1, waitSeconds 60, replicas left to the mode", () => {
        assert.deepStrictEqual(WORKER_DEFAULTS.allocation, { mode: "all", perTask: 1, waitSeconds: 60 });
        const parsed = parseSettings([{ allocation: { mode: "timeSlice", replicas: 4 } }]);
        assert.ok(parsed.success);
        assert.deepStrictEqual(parsed.data.allocation, { mode: "timeSlice", perTask: 1, replicas: 4, waitSeconds: 60 });
    });

    it("a host overrides the defaults field by field", () => {
        const raw = stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { waitSeconds: 5 } } });
        const defaults = raw.defaults as Record<string, unknown>;
        defaults.allocation = { mode: "timeSlice", replicas: 3 };
        assert.deepStrictEqual(problemsOf(raw), []);
        const parsed = parseSettings([defaults, { allocation: { waitSeconds: 5 } }]);
        assert.ok(parsed.success);
        assert.deepStrictEqual(parsed.data.allocation, { mode: "timeSlice", perTask: 1, replicas: 3, waitSeconds: 5 });
    });

    const refused: [string, unknown, string][] = [
        ["mode", "shared", "expected one of all, exclusive, timeSlice, mps"],
        ["perTask", -1, "expected a whole number of at least 0"],
        ["perTask", 1.5, "expected a whole number of at least 0"],
        ["replicas", 0, "expected a whole number of at least 1"],
        ["replicas", "2", "expected a whole number of at least 1"],
        ["waitSeconds", -1, `expected whole seconds from 0 to ${MAX_WAIT_SECONDS}`],
        ["waitSeconds", MAX_WAIT_SECONDS + 1, `expected whole seconds from 0 to ${MAX_WAIT_SECONDS}`],
    ];
    for (const [field, value, message] of refused) {
        it(`${field}: ${JSON.stringify(value)} is refused at its path, in defaults and on a host`, () => {
            const onHost = stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", [field]: value } } });
            const problems = problemsOf(onHost);
            assert.strictEqual(problems.length, 1, problems.join("\n"));
            assert.ok(problems[0].startsWith(`hosts[0].allocation.${field}: ${message}`), problems[0]);
            const inDefaults = stackWith({ name: "a", inventory: L4_4X });
            (inDefaults.defaults as Record<string, unknown>).allocation = { [field]: value };
            assert.ok(problemsOf(inDefaults)[0].startsWith(`defaults.allocation.${field}: ${message}`), problemsOf(inDefaults).join("\n"));
        });
    }

    it("the largest wait is accepted, and why it is no larger is in the message", () => {
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", waitSeconds: 240 } } })), []);
        const [problem] = problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { waitSeconds: 241 } } }));
        assert.match(problem, /containerd request timeout, 5 minutes/);
    });

    it("exclusive with replicas above 1 is refused (holding a unit twice is timeSlice); replicas 1 or none is fine", () => {
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", replicas: 2 } } })), [
            "hosts[0].allocation.replicas: 2 holders of one unit is time-slicing; exclusive holds each unit once: leave replicas out, set 1, or use timeSlice",
        ]);
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", replicas: 1 } } })), []);
        // Mode all hands nothing out, so replicas means nothing there.
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { replicas: 2 } } })), []);
    });

    it("mps: one unit per whole NVIDIA GPU, each holder given its GPU's daemon's pipe folder, the variable naming it, and its shm at /dev/shm", () => {
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "mps" } } })), []);
        const a = wrapperConfig(L4_4X, { allocation: { mode: "mps" } }).allocation;
        assert.strictEqual(a.mode, "mps");
        assert.strictEqual(a.replicas, 2);
        assert.deepStrictEqual(a.units[2], {
            id: "2",
            gpu: "2",
            visible: "nvidia.com/gpu=2",
            deviceNodes: [],
            gpuNodes: ["/dev/nvidia2"],
            env: { CUDA_MPS_PIPE_DIRECTORY: "/run/gpu-workers/mps/2/pipe" },
            mounts: [
                { source: "/run/gpu-workers/mps/2/pipe", destination: "/run/gpu-workers/mps/2/pipe" },
                { source: "/run/gpu-workers/mps/2/shm", destination: "/dev/shm" },
            ],
        });
        // Units of the other modes bring nothing of their own: their settings are as before.
        assert.ok(!("env" in wrapperConfig(L4_4X, { allocation: { mode: "timeSlice" } }).allocation.units[0]));
    });

    it("mps is refused where a daemon per GPU cannot serve it: MIG, AMD, and perTask above 1, each naming why", () => {
        const only = (inventory: GpuInventoryInput, allocation: Record<string, unknown>) =>
            problemsOf(stackWith({ name: "a", inventory, extra: { allocation } }));
        assert.deepStrictEqual(only(MIXED_MIG, { mode: "mps" }), [
            "hosts[0].allocation.mode: mps: GPU 0 is in MIG mode, and MPS does not share MIG instances here; use exclusive or timeSlice",
        ]);
        assert.deepStrictEqual(only(AMD_TWO, { mode: "mps" }), [
            "hosts[0].allocation.mode: mps: MPS is NVIDIA's; an AMD worker shares its GPUs with timeSlice",
        ]);
        assert.deepStrictEqual(only(L4_4X, { mode: "mps", perTask: 2 }), [
            "hosts[0].allocation.perTask: 2: in mode mps a container holds one GPU at most (its MPS client talks to one GPU's daemon); set 0 or 1",
        ]);
        assert.deepStrictEqual(only(L4_4X, { mode: "mps", perTask: 0 }), []);
        assert.deepStrictEqual(only(L4_4X, { mode: "mps", replicas: 101 }), [
            "hosts[0].allocation.replicas: 101 clients of one GPU's daemon would each get less than 1 % of its threads; at most 100 in mode mps",
        ]);
        assert.deepStrictEqual(only(L4_4X, { mode: "mps", replicas: 100 }), []);
    });

    it("perTask above the worker's units is refused, naming both (every task asking none would fail)", () => {
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", perTask: 5 } } })), [
            "hosts[0].allocation.perTask: 5 units for every task that asks none is more than this worker has (4): every such task would fail",
        ]);
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: L4_4X, extra: { allocation: { mode: "exclusive", perTask: 4 } } })), []);
        // A MIG GPU's instances are units: 3 on one A100.
        assert.deepStrictEqual(problemsOf(stackWith({ name: "a", inventory: A100_MIG, extra: { allocation: { mode: "timeSlice", perTask: 3 } } })), []);
    });
});

describe("allocation: the wrapper settings' block", () => {
    it("NVIDIA, 4 GPUs by CDI id: one unit per GPU; holders get the driver capabilities; a container holding none gets no GPU", () => {
        const config = wrapperConfig(L4_4X, { allocation: { mode: "exclusive" }, healthWatcher: true });
        assert.deepStrictEqual(config.allocation, {
            mode: "exclusive",
            perTask: 1,
            replicas: 1,
            waitSeconds: 60,
            visibleEnv: "NVIDIA_VISIBLE_DEVICES",
            holderEnv: { NVIDIA_DRIVER_CAPABILITIES: "compute,utility" },
            holderDeviceNodes: [],
            units: [0, 1, 2, 3].map((i) => ({ id: `${i}`, gpu: `${i}`, visible: `nvidia.com/gpu=${i}`, deviceNodes: [], gpuNodes: [`/dev/nvidia${i}`] })),
            healthFile: "/run/gpu-workers/health/gpus.tsv",
        });
        assert.deepStrictEqual(Object.keys(config.allocation), [
            "mode",
            "perTask",
            "replicas",
            "waitSeconds",
            "visibleEnv",
            "holderEnv",
            "holderDeviceNodes",
            "units",
            "healthFile",
        ]);
        assert.deepStrictEqual(config.env, {});
        assert.deepStrictEqual(config.unsetEnv, GPU_CONTROL_VARIABLES, "every GPU variable is unset unless the container holds a unit");
        assert.deepStrictEqual(config.deviceNodes, []);
        assert.deepStrictEqual(config.gpuNodes, ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"]);
        wrapperConfigSchema.parse(config);
    });

    it("NVIDIA without CDI: the units' visible values are the plain names the env uses today", () => {
        const config = wrapperConfig(L4_4X, { cdi: false, selection: [1, 3], allocation: { mode: "timeSlice", replicas: 3, perTask: 2, waitSeconds: 0 } });
        assert.deepStrictEqual(
            config.allocation.units.map((u: { visible: string }) => u.visible),
            ["1", "3"],
        );
        assert.strictEqual(wrapperConfig(L4_4X, { cdi: false, selection: [1, 3] }).env.NVIDIA_VISIBLE_DEVICES, "1,3", "what mode all names the same GPUs by");
        assert.deepStrictEqual(
            {
                mode: config.allocation.mode,
                replicas: config.allocation.replicas,
                perTask: config.allocation.perTask,
                waitSeconds: config.allocation.waitSeconds,
            },
            { mode: "timeSlice", replicas: 3, perTask: 2, waitSeconds: 0 },
        );
        assert.deepStrictEqual(config.gpuNodes, ["/dev/nvidia1", "/dev/nvidia3"], "an unselected GPU is no unit, and its node stays refused");
        assert.strictEqual(config.allocation.healthFile, undefined, "RuncWrapper alone reads no health file unless told the watcher runs");
    });

    it("timeSlice without replicas holds each unit twice", () => {
        assert.strictEqual(wrapperConfig(L4_4X, { allocation: { mode: "timeSlice" } }).allocation.replicas, 2);
    });

    it("MIG: one unit per declared MIG instance, named as the CDI spec and the env name them, beside a whole GPU", () => {
        const units = wrapperConfig(MIXED_MIG, { allocation: { mode: "exclusive" } }).allocation.units;
        assert.deepStrictEqual(units, [
            { id: "0:0", gpu: "0", visible: "nvidia.com/gpu=0:0", deviceNodes: [], gpuNodes: ["/dev/nvidia0"] },
            { id: "0:1", gpu: "0", visible: "nvidia.com/gpu=0:1", deviceNodes: [], gpuNodes: ["/dev/nvidia0"] },
            { id: "1", gpu: "1", visible: "nvidia.com/gpu=1", deviceNodes: [], gpuNodes: ["/dev/nvidia1"] },
        ]);
        const plan = planWorkerGpus(inventorySchema.parse(MIXED_MIG), { ...base, cdi: true });
        assert.deepStrictEqual(
            units.map((u: { visible: string }) => u.visible),
            plan.cdiDevices,
            "the units are the devices mode all hands every container",
        );
        assert.deepStrictEqual(
            wrapperConfig(A100_MIG, { cdi: false, allocation: { mode: "exclusive" } }).allocation.units.map((u: { visible: string }) => u.visible),
            ["0:0", "0:1", "0:2"],
        );
    });

    it("AMD: each unit brings its render node, every holder /dev/kfd and the HSA override; no container gets them otherwise", () => {
        const config = wrapperConfig(AMD_TWO, { allocation: { mode: "exclusive" } });
        assert.deepStrictEqual(config.allocation.units, [
            { id: "0", gpu: "0", visible: "0", deviceNodes: ["/dev/dri/renderD130"], gpuNodes: ["/dev/dri/renderD130"] },
            { id: "1", gpu: "1", visible: "1", deviceNodes: ["/dev/dri/renderD129"], gpuNodes: ["/dev/dri/renderD129"] },
        ]);
        assert.strictEqual(config.allocation.visibleEnv, "AMD_VISIBLE_DEVICES");
        assert.deepStrictEqual(config.allocation.holderDeviceNodes, ["/dev/kfd"]);
        assert.deepStrictEqual(config.allocation.holderEnv, {});
        assert.deepStrictEqual(config.deviceNodes, [], "kfd and the render nodes only for holders");
        assert.deepStrictEqual(config.env, {});
        assert.deepStrictEqual(config.gpuNodes, ["/dev/dri/renderD130", "/dev/dri/renderD129"]);
        const phoenix = wrapperConfig(AMD_PHOENIX, { allocation: { mode: "timeSlice" } });
        assert.deepStrictEqual(phoenix.allocation.holderEnv, { HSA_OVERRIDE_GFX_VERSION: "11.0.0" });
        assert.ok(phoenix.unsetEnv.includes("HSA_OVERRIDE_GFX_VERSION"));
    });

    it("a worker without GPUs: nothing to hand out, no block (every container already gets none)", () => {
        const config = wrapperConfig(NO_GPU, { allocation: { mode: "exclusive" } });
        assert.strictEqual(config.allocation, undefined);
        assert.deepStrictEqual(hostPlan(NO_GPU, { allocation: { mode: "exclusive" } }).gpu.tags, []);
    });

    it("the chain: the health watcher's gpus.tsv where it runs, and RuncWrapper alone from the worker's terms renders the same", () => {
        const spec = workerSpec("w", { transport: ssh, inventory: inventorySchema.parse(L4_4X), allocation: { mode: "timeSlice", replicas: 3 } });
        const plan = planHost(spec);
        assert.ok(plan.links.some((l) => l.component === "GpuHealth"));
        const config = JSON.parse(placed(plan, "/etc/gpu-workers/runc-wrapper.json"));
        assert.strictEqual(config.allocation.healthFile, HEALTH_GPUS_FILE);
        assert.strictEqual(HEALTH_GPUS_FILE, "/run/gpu-workers/health/gpus.tsv");
        assert.strictEqual(renderWrapperConfig(planRuncWrapper(wrapperTerms(spec))), placed(plan, "/etc/gpu-workers/runc-wrapper.json"));
    });

    it("the preview shows the block: the stack's worker places the settings file with it (Pulumi mocks)", async function () {
        this.timeout(30_000);
        const [host] = parseStackConfig(stackWith({ name: "w", inventory: L4_4X, extra: { allocation: { mode: "exclusive", waitSeconds: 30 } } }));
        const g = recordGraph();
        new GpuWorker(
            host.name,
            workerArgs(host, () => pulumi.secret("key"), process.cwd()),
        );
        await settle(g);
        const path = "/etc/gpu-workers/runc-wrapper.json";
        const set = g.placed(path).resource;
        const content = fileSetContents(String(set.inputs.stdin)).get(path);
        assert.ok(content, `${set.name} carries ${path}`);
        const config = JSON.parse(content);
        assert.strictEqual(config.allocation.waitSeconds, 30);
        assert.strictEqual(config.allocation.units.length, 4);
    });

    it("the settings file's schema refuses a block the wrapper could not honour, naming the key", () => {
        const good = wrapperConfig(L4_4X, { allocation: { mode: "exclusive" } });
        const bad = (edit: (a: Record<string, unknown>) => void) => {
            const copy = JSON.parse(JSON.stringify(good));
            edit(copy.allocation);
            return wrapperConfigSchema.safeParse(copy);
        };
        const paths = (edit: (a: Record<string, unknown>) => void) => {
            const r = bad(edit);
            assert.ok(!r.success, "refused");
            return [...new Set(r.error.issues.map((i) => i.path.join(".")))].sort();
        };
        assert.deepStrictEqual(wrapperConfigSchema.safeParse(good).success, true);
        assert.deepStrictEqual(
            paths((a) => (a.replicas = 2)),
            ["allocation.replicas"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.waitSeconds = 300)),
            ["allocation.waitSeconds"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.perTask = 5)),
            ["allocation.perTask"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.units = [])),
            ["allocation.perTask", "allocation.units"],
        );
        assert.deepStrictEqual(
            paths((a) => ((a.units as unknown[])[1] = (a.units as unknown[])[0])),
            ["allocation.units.1.id"],
        );
        assert.deepStrictEqual(
            paths((a) => ((a.units as { visible: string }[])[0].visible = "0,1")),
            ["allocation.units.0.visible"],
        );
        assert.deepStrictEqual(
            paths((a) => ((a.units as { id: string }[])[0].id = "all")),
            ["allocation.units.0.id"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.visibleEnv = "LD_PRELOAD")),
            ["allocation.visibleEnv"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.holderEnv = { LD_PRELOAD: "/x.so" })),
            ["allocation.holderEnv"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.holderEnv = { NVIDIA_VISIBLE_DEVICES: "all" })),
            ["allocation.holderEnv"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.healthFile = "gpus.tsv")),
            ["allocation.healthFile"],
        );
        assert.deepStrictEqual(
            paths((a) => (a.colour = 1)),
            ["allocation"],
        );
    });

    it("with a block, a container holding no unit must get no GPU: the render refuses settings that would give one", () => {
        const inventory = inventorySchema.parse(AMD_TWO);
        const plan = planWorkerGpus(inventory, { ...base, allocation: { mode: "exclusive", perTask: 1, waitSeconds: 60 } });
        const input = { datasets: { root: "/srv", writableSuffixes: [] }, realRuntime: "/usr/bin/runc", allocation: plan.allocation };
        // The whole selection's env and nodes, as mode all gives them: every check names its key.
        assert.throws(
            () => renderWrapperConfig({ ...input, plan }),
            (e: Error) =>
                /env: GPU variables must be unset for a container holding no unit \(AMD_VISIBLE_DEVICES\)/.test(e.message) &&
                /deviceNodes: a unit's node is given to every container \(\/dev\/kfd, \/dev\/dri\/renderD130, \/dev\/dri\/renderD129\)/.test(e.message),
        );
        const none = { env: {}, unsetEnv: GPU_CONTROL_VARIABLES, deviceNodes: [] };
        assert.throws(
            () => renderWrapperConfig({ ...input, plan: { ...none, gpuNodes: ["/dev/dri/renderD130"] } }),
            /gpuNodes: a unit's GPU node is not among them \(\/dev\/dri\/renderD129\)/,
        );
        assert.throws(
            () => renderWrapperConfig({ ...input, plan: { ...none, unsetEnv: GPU_CONTROL_VARIABLES.slice(1), gpuNodes: plan.gpuNodes } }),
            /GPU variables must be unset .*\(NVIDIA_VISIBLE_DEVICES\)/,
        );
        renderWrapperConfig({ ...input, plan: { ...none, gpuNodes: plan.gpuNodes } });
    });
});

describe("allocation: the worker validator's container, which is no task's, holds no GPU", () => {
    const validatorArgsOf = (allocation?: object) => {
        const link = hostPlan(L4_4X, allocation ? { allocation } : {}).links.find((l) => l.component === "WorkerValidator")!;
        return link.rendered.steps[0].create;
    };

    it("with allocation it expects every GPU variable unset and no GPU, although it asks for all; without, the plan's GPUs", () => {
        const on = validatorArgsOf({ mode: "exclusive" });
        for (const name of GPU_CONTROL_VARIABLES) assert.match(on, new RegExp(`--unset ${name}( |$)`));
        assert.doesNotMatch(on, /--selected|--env NVIDIA_/);
        const off = validatorArgsOf();
        assert.match(off, /--selected 0,1,2,3/);
        assert.match(off, /--env NVIDIA_VISIBLE_DEVICES=/);
    });
});

describe("allocation: the capacity tags, from the one GPU plan", () => {
    const tagsOf = (inventory: GpuInventoryInput, allocation: object | undefined, extra: Record<string, unknown> = {}) =>
        hostPlan(inventory, { ...(allocation ? { allocation } : {}), ...extra }).gpu.tags;

    it("exclusive: gpu-share=exclusive, gpu-slots = units", () => {
        const tags = tagsOf(L4_4X, { mode: "exclusive" });
        assert.deepStrictEqual(
            tags.filter((t) => t.startsWith("gpu-share") || t.startsWith("gpu-slots")),
            ["gpu-share=exclusive", "gpu-slots=4"],
        );
    });

    it("timeSlice: units × replicas (MIG instances count as units), in lower case", () => {
        assert.ok(tagsOf(L4_4X, { mode: "timeSlice", replicas: 3 }).includes("gpu-slots=12"));
        assert.ok(tagsOf(L4_4X, { mode: "timeSlice", replicas: 3 }).includes("gpu-share=timeslice"));
        assert.ok(tagsOf(A100_MIG, { mode: "timeSlice" }).includes("gpu-slots=6"));
        assert.ok(tagsOf(MIXED_MIG, { mode: "exclusive" }).includes("gpu-slots=3"));
        assert.ok(tagsOf(L4_4X, { mode: "exclusive" }, { selection: [0, 2] }).includes("gpu-slots=2"));
    });

    it("after the computed tags, before the privileged and extra ones; the worker's unit and its settings file agree", () => {
        const plan = hostPlan(L4_4X, { allocation: { mode: "exclusive" }, concourse: { privilegedMode: "full", tags: ["team-a"] } });
        const tags = plan.gpu.tags;
        const at = tags.indexOf("gpu-share=exclusive");
        assert.deepStrictEqual(tags.slice(at), ["gpu-share=exclusive", "gpu-slots=4", "privileged=full", "team-a"]);
        const config = JSON.parse(placed(plan, "/etc/gpu-workers/runc-wrapper.json"));
        assert.strictEqual(`gpu-slots=${config.allocation.units.length * config.allocation.replicas}`, "gpu-slots=4");
    });

    it("mode all: no tag changes", () => {
        for (const inventory of [L4_4X, A100_MIG, AMD_PHOENIX, NO_GPU]) {
            assert.deepStrictEqual(tagsOf(inventory, { mode: "all", replicas: 5 }), tagsOf(inventory, undefined));
            assert.ok(!tagsOf(inventory, undefined).some((t) => t.startsWith("gpu-share") || t.startsWith("gpu-slots")));
        }
    });
});

describe("allocation: mode all renders exactly what a worker without it rendered", () => {
    const workers: [string, GpuInventoryInput, Record<string, unknown>][] = [
        ["no GPU", NO_GPU, {}],
        ["RTX A500 by index", RTX_A500_LAPTOP, { toolkit: { cdi: false }, metrics: { nodeExporter: true } }],
        ["HGX H100, GPUs 2 and 5", HGX_H100_8X, { selection: [2, 5] }],
        ["A100 with MIG", A100_MIG, {}],
        ["AMD Phoenix", AMD_PHOENIX, {}],
    ];
    for (const [label, inventory, extra] of workers) {
        it(`${label}: every file, step and tag the same, whatever the other allocation fields say`, () => {
            const without = hostPlan(inventory, extra);
            const all = hostPlan(inventory, { ...extra, allocation: { mode: "all", perTask: 7, replicas: 9, waitSeconds: 0 } });
            assert.deepStrictEqual(all.files, without.files);
            assert.deepStrictEqual(all.steps, without.steps);
            assert.deepStrictEqual(all.gpu, without.gpu);
            assert.ok(!placed(without, "/etc/gpu-workers/runc-wrapper.json").includes("allocation"));
        });
    }

    it("RuncWrapper alone: allocation {mode: all} gives the settings file of no allocation term, byte for byte", () => {
        for (const inventory of [L4_4X, MIXED_MIG, AMD_TWO, NO_GPU]) {
            const inv = inventorySchema.parse(inventory);
            const without = renderWrapperConfig(planRuncWrapper({ inventory: inv, wrapperBinary }));
            assert.strictEqual(
                renderWrapperConfig(planRuncWrapper({ inventory: inv, wrapperBinary, allocation: { mode: "all" }, healthWatcher: true })),
                without,
            );
            assert.strictEqual(renderWrapperConfig(planRuncWrapper({ inventory: inv, wrapperBinary, allocation: {} })), without);
        }
    });
});
