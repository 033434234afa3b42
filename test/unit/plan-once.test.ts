/**
 * A host is planned, and its settings parsed, once per program run: the stack's checks make each
 * plan as `up` needs it, the fleet hands it to the component (`planned`), and a component given its
 * plan parses and plans nothing again. Used alone, a component plans for itself by the same function.
 * Counted by wrapping the planner's and the settings parse's exports (every caller reaches them there).
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { GOLDEN_ARTIFACTS, goldenStacks } from "../support/golden-stacks";
import { recordGraph, settle } from "../support/pulumi-graph";
import { NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { boardStack } from "../fixtures/stacks/boards";
import * as boardPlanModule from "../../components/lib/plan/board-plan";
import * as hostPlanModule from "../../components/lib/plan/host-plan";
import * as webPlanModule from "../../components/lib/plan/web-plan";
import * as settingsModule from "../../components/lib/settings/settings";
import { LOCAL_ARTIFACTS } from "../../components/chain/artifacts";
import { GpuWorker, planWorker, workerSpec } from "../../components/chain/gpu-worker";
import { workerArgs } from "../../stacks/args/component-args";
import { boardArgs } from "../../stacks/args/board-args";
import { parseStack } from "../../stacks/checks/stack";
import { planStackWeb } from "../../stacks/checks/stack-plans";
import { buildFleet } from "../../stacks/resources/fleet";

/** Calls of the functions counted, by name, while `run` runs. */
async function callsDuring(run: () => unknown): Promise<Record<string, number>> {
    const counted: [Record<string, unknown>, string][] = [
        [hostPlanModule, "planHost"],
        [boardPlanModule, "planBoard"],
        [webPlanModule, "planWebHost"],
        [settingsModule, "parseSettings"],
    ];
    const calls: Record<string, number> = Object.fromEntries(counted.map(([, name]) => [name, 0]));
    const originals = counted.map(([module, name]) => module[name] as (...args: unknown[]) => unknown);
    counted.forEach(([module, name], i) => {
        module[name] = (...args: unknown[]) => {
            calls[name]++;
            return originals[i](...args);
        };
    });
    try {
        await run();
    } finally {
        counted.forEach(([module, name], i) => (module[name] = originals[i]));
    }
    return calls;
}

const secret = () => pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----test");
const web = { name: "ci", transport: { lxd: { instance: "ci", image: "img", sshPort: 2200, publish: { web: 8080, tsa: 2222 } } } };

describe("planned and validated once", function () {
    this.timeout(60_000);

    it("up's path: a stack of two hosts and a web plans each once and parses each host's settings once", async () => {
        const raw = { ...stackWith({ name: "cpu", inventory: NO_GPU }, { name: "laptop", inventory: RTX_A500_LAPTOP }), web };
        const recorder = recordGraph();
        const calls = await callsDuring(async () => {
            const fleet = buildFleet(parseStack(raw, { baseDir: process.cwd(), artifacts: LOCAL_ARTIFACTS }), secret);
            assert.deepStrictEqual(
                fleet.workers.map((w) => w.hostName),
                ["cpu", "laptop"],
            );
            await settle(recorder);
        });
        assert.deepStrictEqual(calls, { planHost: 2, planBoard: 0, planWebHost: 1, parseSettings: 2 });
        assert.ok(recorder.ofType("gpu-workers:worker:GpuWorker").length === 2 && recorder.ofType("gpu-workers:concourse:ConcourseWeb").length === 1);
    });

    it("up's path: a shared board is planned once, with each worker VM's host plan in it", async () => {
        const raw = boardStack([{ gpus: 4 }, { gpus: 2 }]);
        const recorder = recordGraph();
        const calls = await callsDuring(async () => {
            const fleet = buildFleet(parseStack(raw, { baseDir: process.cwd(), artifacts: LOCAL_ARTIFACTS }), secret);
            assert.strictEqual(fleet.workers.length, 2);
            await settle(recorder);
        });
        // Three host entries (the board, its two workers), each parsed once; the board's plan holds the workers' plans.
        assert.deepStrictEqual(calls, { planHost: 2, planBoard: 1, planWebHost: 0, parseSettings: 3 });
        assert.strictEqual(recorder.ofType("gpu-workers:worker:GpuWorker").length, 2);
    });

    it("alone, GpuWorker plans for itself by the same function; given its plan, it neither plans nor parses", async () => {
        const [host] = parseStack(stackWith({ name: "laptop", inventory: RTX_A500_LAPTOP })).hosts;
        const args = workerArgs(host, secret, process.cwd());
        const recorder = recordGraph();
        const alone = await callsDuring(() => new GpuWorker("alone", args));
        assert.deepStrictEqual(alone, { planHost: 1, planBoard: 0, planWebHost: 0, parseSettings: 1 });
        const planned = planWorker("given", args);
        const given = await callsDuring(() => new GpuWorker("given", { ...args, planned }));
        assert.deepStrictEqual(given, { planHost: 0, planBoard: 0, planWebHost: 0, parseSettings: 0 });
        await settle(recorder);
        // Both build the same chain.
        const children = (worker: string) =>
            recorder.resources
                .filter((r) => r.name.startsWith(`${worker}-`))
                .map((r) => `${r.type} ${r.name.slice(worker.length)}`)
                .sort();
        assert.ok(children("alone").length > 10);
        assert.deepStrictEqual(children("given"), children("alone"));
    });

    it("the stack's parsed settings, taken as they are, make the spec a second parse would", () => {
        for (const s of goldenStacks()) {
            const context = { baseDir: s.baseDir, artifacts: GOLDEN_ARTIFACTS };
            const stack = parseStack(s.raw, context);
            const web = stack.web ? planStackWeb(stack.web, context).forWorkers : undefined;
            const workers = [
                ...stack.hosts.map((h) => ({ name: h.name, args: workerArgs(h, secret, s.baseDir, web) })),
                ...stack.boards.flatMap((b) =>
                    boardArgs(b, secret, s.baseDir, web).workers.map(({ name, gpus: _g, partition: _p, lxd, ...settings }) => ({
                        name,
                        args: { ...settings, transport: { lxd: { ...lxd, type: "virtual-machine" as const } }, inventory: b.inventory },
                    })),
                ),
            ];
            assert.ok(workers.length > 0, s.name);
            for (const { name, args } of workers) {
                const parsedAgain = workerSpec(name, args, { artifacts: GOLDEN_ARTIFACTS });
                assert.deepStrictEqual(workerSpec(name, args, { artifacts: GOLDEN_ARTIFACTS, settingsParsed: true }), parsedAgain, `${s.name}: ${name}`);
            }
        }
    });
});
