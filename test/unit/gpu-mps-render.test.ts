/**
 * The GPU MPS link: planned only in allocation mode mps on an NVIDIA worker with GPUs; its
 * settings (the GPUs, the replicas, the thread share, the worker unit) flow into the rendered
 * config and the template unit, whose paths are the ones components/lib/gpu/mps.ts names (the
 * wrapper's settings hand a holder the same); it sits after the wrapper and before the validator
 * and the worker; used alone it plans from the user's terms and refuses what MPS cannot serve;
 * the whole-worker cases plan mode mps through the GPU plan.
 */
import * as assert from "assert";
import { GpuMps } from "../../components/chain/gpu-mps";
import { GpuWorker, workerSpec } from "../../components/chain/gpu-worker";
import { GpuInventoryInput, inventorySchema } from "../../components/lib/gpu/inventory";
import { mpsLogDir, mpsPipeDir, mpsShmDir, mpsThreadPercentage, mpsUnit, MPS_UNIT_TEMPLATE } from "../../components/lib/gpu/mps";
import { CONCOURSE_UNIT } from "../../components/lib/links/concourse-worker/render";
import { gpuMpsLink, planGpuMps } from "../../components/lib/links/gpu-mps/plan";
import { MPS_PATHS, renderGpuMps, renderMpsConfig, renderMpsUnit } from "../../components/lib/links/gpu-mps/render";
import { LINK_ORDER } from "../../components/lib/links/table";
import { containerGpus } from "../../components/lib/links/terms";
import { planHost } from "../../components/lib/plan/host-plan";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";
import { HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { recordGraph, settle } from "../support/pulumi-graph";

const ssh = { ssh: { host: "10.0.0.5", privateKey: "key", hostKey: HOST_KEY } };
const release = {
    concourse: { binary: { url: "https://example.org/concourse.tgz", sha256: "a".repeat(64) }, tsaHost: "10.0.0.1", tsaPublicKey: TSA_KEY },
};
const H100_2X: GpuInventoryInput = {
    vendor: "nvidia",
    gpus: [0, 1].map((index) => ({ index, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, pciBusId: `00000000:0${index + 1}:00.0` })),
};
type Args = Parameters<typeof workerSpec>[1];

/** The link's settings on a worker, as the chain plans it (the GPU plan of mode all: the link reads only its selection). */
function linkSettings(args: Args) {
    const spec = workerSpec("w", args);
    return gpuMpsLink.plan(spec, containerGpus(spec.inventory, spec.selection, false));
}

/** The config's lines that start with `key `. */
function lines(config: string, key: string): string[] {
    return config.split("\n").filter((l) => l.startsWith(`${key} `));
}

function fileOf(rendered: ReturnType<typeof renderGpuMps>, path: string): string {
    const file = rendered.files.find((f) => f.path === path);
    assert.ok(file, `renders ${path}`);
    return file.content;
}

describe("GPU MPS link", () => {
    describe("where it is planned", () => {
        it("only in allocation mode mps: all, exclusive and timeSlice get no daemon", () => {
            const inventory = inventorySchema.parse(H100_2X);
            assert.strictEqual(linkSettings({ transport: ssh, inventory }), undefined);
            for (const mode of ["all", "exclusive", "timeSlice"] as const)
                assert.strictEqual(linkSettings({ transport: ssh, inventory, allocation: { mode } }), undefined, mode);
            assert.deepStrictEqual(linkSettings({ transport: ssh, inventory, allocation: { mode: "mps" } }), {
                gpus: [0, 1],
                replicas: 2,
                activeThreadPercentage: 50,
            });
        });

        it("only on NVIDIA with GPUs selected: AMD, no GPU, or an empty selection get no daemon", () => {
            const mps = { allocation: { mode: "mps" as const } };
            assert.strictEqual(linkSettings({ transport: ssh, inventory: inventorySchema.parse(AMD_PHOENIX), ...mps }), undefined);
            assert.strictEqual(linkSettings({ transport: ssh, inventory: inventorySchema.parse(NO_GPU), ...mps }), undefined);
            const spec = workerSpec("w", { transport: ssh, inventory: inventorySchema.parse(H100_2X), ...mps });
            assert.strictEqual(gpuMpsLink.plan(spec, { ...containerGpus(spec.inventory, spec.selection, false), selected: [] }), undefined);
        });

        it("the settings: the selected GPUs, the allocation's replicas (2 when absent), floor(100/replicas), the worker unit where the chain reaches it", () => {
            const inventory = inventorySchema.parse(HGX_H100_8X);
            assert.deepStrictEqual(linkSettings({ transport: ssh, inventory, selection: [5, 2], allocation: { mode: "mps", replicas: 3 }, ...release }), {
                gpus: [2, 5],
                replicas: 3,
                activeThreadPercentage: 33,
                workerUnit: CONCOURSE_UNIT,
            });
            assert.strictEqual(linkSettings({ transport: ssh, inventory, allocation: { mode: "mps" } })!.replicas, 2);
            assert.deepStrictEqual([1, 2, 3, 4, 7, 100].map(mpsThreadPercentage), [100, 50, 33, 25, 14, 1]);
        });

        it("its row is right after RuncWrapper, before the validator and the worker", () => {
            const at = LINK_ORDER.indexOf("GpuMps");
            assert.deepStrictEqual(LINK_ORDER.slice(at - 1, at + 3), ["RuncWrapper", "GpuMps", "WorkerValidator", "ConcourseWorker"]);
        });
    });

    describe("what it renders", () => {
        const settings = { gpus: [0, 1], replicas: 2, activeThreadPercentage: 50, workerUnit: CONCOURSE_UNIT };
        const rendered = renderGpuMps(settings);

        it("places the script, the config and the template unit", () => {
            assert.deepStrictEqual(
                rendered.files.map((f) => [f.path, f.mode]),
                [
                    ["/etc/gpu-workers/gpu-mps.conf", "0644"],
                    ["/etc/systemd/system/gpu-workers-mps@.service", "0644"],
                    ["/usr/local/lib/gpu-workers/gpu-mps.sh", "0755"],
                ],
            );
            assert.strictEqual(MPS_PATHS.unit, `/etc/systemd/system/${MPS_UNIT_TEMPLATE}`);
        });

        it("the config: replicas, the thread share, one gpu line each; comments aside, nothing else", () => {
            const config = fileOf(rendered, MPS_PATHS.config);
            assert.deepStrictEqual(
                config.split("\n").filter((l) => l !== "" && !l.startsWith("#")),
                ["replicas 2", "active-thread-percentage 50", "gpu 0", "gpu 1"],
            );
            assert.deepStrictEqual(lines(renderMpsConfig({ ...settings, gpus: [3], replicas: 4, activeThreadPercentage: 25 }), "gpu"), ["gpu 3"]);
        });

        it("the unit: GPU %i alone in PCI bus order, its pipe and log folders as mps.ts names them, the script's actions (its start binds the shm folder on /dev/shm)", () => {
            const unit = fileOf(rendered, MPS_PATHS.unit);
            const want = [
                "Before=concourse-worker.service",
                "Type=forking",
                "Environment=CUDA_VISIBLE_DEVICES=%i",
                "Environment=CUDA_DEVICE_ORDER=PCI_BUS_ID",
                `Environment=CUDA_MPS_PIPE_DIRECTORY=${mpsPipeDir("%i")}`,
                `Environment=CUDA_MPS_LOG_DIRECTORY=${mpsLogDir("%i")}`,
                "Restart=on-failure",
                "WantedBy=multi-user.target",
            ];
            for (const line of want) assert.ok(unit.split("\n").includes(line), `${line}\n---\n${unit}`);
            assert.strictEqual(mpsPipeDir("%i"), "/run/gpu-workers/mps/%i/pipe");
            assert.strictEqual(mpsShmDir("%i"), "/run/gpu-workers/mps/%i/shm");
            assert.strictEqual(mpsLogDir("%i"), "/var/log/gpu-workers/mps/%i");
            const run = (action: string) =>
                `/usr/local/lib/gpu-workers/gpu-mps.sh ${action} --gpu %i --config /etc/gpu-workers/gpu-mps.conf --run-dir /run/gpu-workers/mps --log-dir /var/log/gpu-workers/mps`;
            assert.match(unit, new RegExp(`^ExecStartPre=${escape(run("prepare"))}$`, "m"));
            assert.match(unit, new RegExp(`^ExecStart=${escape(run("start"))}$`, "m"));
            assert.match(unit, new RegExp(`^ExecStartPost=${escape(run("configure"))}$`, "m"));
            assert.match(unit, new RegExp(`^ExecStop=${escape(run("stop"))}$`, "m"));
            assert.match(unit, new RegExp(`^ExecStopPost=${escape(run("restore"))}$`, "m"));
            assert.doesNotMatch(unit, /^BindPaths=/m, "systemd would mount it in the unit's namespace, before the tmpfs is there");
            assert.doesNotMatch(renderMpsUnit({ ...settings, workerUnit: undefined }), /^Before=/m);
            assert.strictEqual(mpsUnit(1), "gpu-workers-mps@1.service");
        });

        it("the step: ensure and check with the files they watch, remove with the folders alone; it waits for every file", () => {
            const [step] = rendered.steps;
            const where = "--unit gpu-workers-mps@.service --run-dir /run/gpu-workers/mps --log-dir /var/log/gpu-workers/mps";
            const watched =
                "--config /etc/gpu-workers/gpu-mps.conf --watch /usr/local/lib/gpu-workers/gpu-mps.sh --watch /etc/systemd/system/gpu-workers-mps@.service";
            assert.strictEqual(step.name, "gpu-mps");
            assert.strictEqual(step.create, `/usr/local/lib/gpu-workers/gpu-mps.sh ensure ${where} ${watched}`);
            assert.strictEqual(step.check, `/usr/local/lib/gpu-workers/gpu-mps.sh check ${where} ${watched}`);
            assert.strictEqual(step.remove, `/usr/local/lib/gpu-workers/gpu-mps.sh remove ${where}`);
            for (const f of rendered.files) assert.ok(step.dependsOn.includes(f.path), f.path);
        });

        it("renders the same for the same settings (pure)", () => assert.deepStrictEqual(renderGpuMps(settings), renderGpuMps(settings)));
    });

    describe("used alone, from a user's terms", () => {
        it("defaults: every GPU, 2 replicas, 50 %, no worker unit", () => {
            assert.deepStrictEqual(planGpuMps({ inventory: inventorySchema.parse(H100_2X) }), { gpus: [0, 1], replicas: 2, activeThreadPercentage: 50 });
            assert.deepStrictEqual(planGpuMps({ inventory: inventorySchema.parse(HGX_H100_8X), selection: [7], replicas: 4, workerUnit: "w.service" }), {
                gpus: [7],
                replicas: 4,
                activeThreadPercentage: 25,
                workerUnit: "w.service",
            });
        });

        const refused: [string, Parameters<typeof planGpuMps>[0], RegExp][] = [
            ["AMD", { inventory: inventorySchema.parse(AMD_PHOENIX) }, /gpu mps: the inventory's vendor is amd; MPS is NVIDIA's/],
            ["no GPU", { inventory: inventorySchema.parse(NO_GPU) }, /gpu mps: the inventory's vendor is none/],
            ["a MIG GPU", { inventory: inventorySchema.parse(A100_MIG) }, /gpu mps: GPU 0 has MIG instances/],
            ["an empty selection", { inventory: inventorySchema.parse(RTX_A500_LAPTOP), selection: [] }, /gpu mps: no GPU is selected/],
            ["0 replicas", { inventory: inventorySchema.parse(H100_2X), replicas: 0 }, /gpu mps: replicas 0: expected a whole number from 1 to 100/],
            ["101 replicas", { inventory: inventorySchema.parse(H100_2X), replicas: 101 }, /gpu mps: replicas 101: expected/],
            ["1.5 replicas", { inventory: inventorySchema.parse(H100_2X), replicas: 1.5 }, /gpu mps: replicas 1\.5: expected/],
        ];
        for (const [label, terms, want] of refused) it(`refuses ${label}, naming it`, () => assert.throws(() => planGpuMps(terms), want));

        it("GpuMps alone (Pulumi mocks): its type, the three files and the step on the host", async () => {
            const g = recordGraph();
            new GpuMps("gpu-a-mps", {
                connection: { host: "10.0.0.5", port: 22, user: "root", privateKey: "k", hostKey: HOST_KEY },
                inventory: inventorySchema.parse(H100_2X),
                replicas: 4,
            });
            await settle(g);
            assert.strictEqual(g.ofType("gpu-workers:mps:GpuMps").length, 1);
            assert.match(g.placed(MPS_PATHS.config).content, /^active-thread-percentage 25$/m);
            g.placed(MPS_PATHS.unit);
            g.placed("/usr/local/lib/gpu-workers/gpu-mps.sh");
            assert.match(String(g.byName("gpu-a-mps-gpu-mps").inputs.create), /gpu-mps\.sh ensure /);
        });
    });

    // Mode mps through the whole worker's plan: these pass once planAllocation accepts mps (the plan's half of item 5).
    describe("in a whole worker (mode mps through the GPU plan)", () => {
        it("after the wrapper, before the validator, which waits for it; every file in the plan; replicas 4 give 25 %", () => {
            const plan = planHost(
                workerSpec("w", { transport: ssh, inventory: inventorySchema.parse(H100_2X), allocation: { mode: "mps", replicas: 4 }, ...release }),
            );
            const names = plan.links.map((l) => l.component);
            const at = names.indexOf("GpuMps");
            assert.deepStrictEqual(names.slice(at - 1, at + 3), ["RuncWrapper", "GpuMps", "WorkerValidator", "ConcourseWorker"]);
            const link = plan.links[at];
            assert.strictEqual(link.name, "w-mps");
            assert.deepStrictEqual(link.dependsOn, ["w-runc-wrapper"]);
            assert.deepStrictEqual(plan.links[at + 1].dependsOn, ["w-mps"]);
            assert.deepStrictEqual(link.settings, { gpus: [0, 1], replicas: 4, activeThreadPercentage: 25, workerUnit: CONCOURSE_UNIT });
            for (const f of link.rendered.files)
                assert.ok(
                    plan.files.some((p) => p.path === f.path),
                    f.path,
                );
        });

        it("the worker builds it as a GpuMps whose step waits for the wrapper's (Pulumi mocks)", async function () {
            this.timeout(30_000);
            const g = recordGraph();
            new GpuWorker("w", { transport: ssh, inventory: inventorySchema.parse(H100_2X), allocation: { mode: "mps" } });
            await settle(g);
            const [mps] = g.ofType("gpu-workers:mps:GpuMps");
            assert.ok(mps, "a GpuMps component");
            assert.strictEqual(mps.name, "w-mps");
            assert.ok(g.dependsOn(g.byName("w-mps-gpu-mps"), g.byName("w-runc-wrapper-runc-wrapper")));
            assert.ok(g.dependsOn(g.byName("w-validate-validate"), g.byName("w-mps-gpu-mps")));
        });
    });
});

/** `text` as a literal in a regular expression. */
function escape(text: string): string {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
