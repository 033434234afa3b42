/**
 * The partition planner on the HGX H100 8-GPU table: every shape the table allows (and every
 * part of one), impossible requests (refused with the possible shapes), requests by id, the
 * mapping from module ids to the inventory's PCI addresses, and a board without NVSwitches.
 */
import * as assert from "assert";
import { GpuInventory, inventorySchema } from "../../components/lib/gpu/inventory";
import { HGX_H100_8GPU, partitionListSchema, partitionTable } from "../../components/lib/fabric/partition-table";
import { PartitionPlanError, planPartitions, possibleShapes } from "../../components/lib/fabric/partitions";
import { HGX_H100_8X, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";

/** Module ids deliberately not in PCI order: GPU i has module MODULES[i]. */
const MODULES = [2, 4, 1, 3, 6, 8, 5, 7];
const board: GpuInventory = inventorySchema.parse({
    ...HGX_H100_8X,
    gpus: (HGX_H100_8X.gpus ?? []).map((g, i) => ({ ...g, moduleId: MODULES[i] })),
});

const ALL_SHAPES = ["8", "4+4", "4+2+2", "4+2+1+1", "4+1+1+1+1", "2+2+2+2", "2+2+2+1+1", "2+2+1+1+1+1", "2+1+1+1+1+1+1", "1+1+1+1+1+1+1+1"];

function requests(sizes: number[]) {
    return sizes.map((gpus, i) => ({ worker: `w${i + 1}`, gpus }));
}

/** Every multiset of sizes that is part of `shape` (as lists, largest first). */
function parts(shape: number[]): number[][] {
    const out = new Map<string, number[]>();
    const walk = (i: number, taken: number[]) => {
        if (i === shape.length) {
            if (taken.length > 0) out.set(taken.join("+"), taken);
            return;
        }
        walk(i + 1, [...taken, shape[i]]);
        walk(i + 1, taken);
    };
    walk(0, []);
    return [...out.values()];
}

describe("fabric partition planner", () => {
    it("the HGX H100 8-GPU table is the published one", () => {
        assert.deepStrictEqual(
            HGX_H100_8GPU.partitions.map((p) => `${p.id}:${p.modules.join(",")}`),
            ["0:1,2,3,4,5,6,7,8", "1:1,2,3,4", "2:5,6,7,8", "3:1,3", "4:2,4", "5:5,7", "6:6,8", "7:1", "8:2", "9:3", "10:4", "11:5", "12:6", "13:7", "14:8"],
        );
        assert.strictEqual(partitionTable("hgx-h100-8gpu", "x"), HGX_H100_8GPU);
    });

    it("lists the shapes the table allows: the ten ways to fill the board", () => {
        assert.deepStrictEqual(possibleShapes(HGX_H100_8GPU.partitions), ALL_SHAPES);
    });

    it("two workers of four GPUs get partitions 1 and 2, with the GPUs of modules 1-4 and 5-8", () => {
        const plan = planPartitions(HGX_H100_8GPU, board, requests([4, 4]));
        assert.deepStrictEqual(
            plan.map((p) => [p.worker, p.partition.id]),
            [
                ["w1", 1],
                ["w2", 2],
            ],
        );
        // Modules 1-4 are GPUs 0-3 here (modules 2, 4, 1, 3), by PCI address.
        assert.deepStrictEqual(
            plan[0].gpus.map((g) => [g.index, g.moduleId, g.pciBusId]),
            [
                [0, 2, "00000000:18:00.0"],
                [1, 4, "00000000:2a:00.0"],
                [2, 1, "00000000:3a:00.0"],
                [3, 3, "00000000:5d:00.0"],
            ],
        );
        assert.deepStrictEqual(
            plan[1].gpus.map((g) => g.moduleId),
            [6, 8, 5, 7],
        );
    });

    it("one of four plus two of two: partitions 1, 5 and 6, in the workers' order", () => {
        const plan = planPartitions(HGX_H100_8GPU, board, [
            { worker: "small-a", gpus: 2 },
            { worker: "big", gpus: 4 },
            { worker: "small-b", gpus: 2 },
        ]);
        assert.deepStrictEqual(
            plan.map((p) => [p.worker, p.partition.id, p.partition.modules.join(",")]),
            [
                ["small-a", 5, "5,7"],
                ["big", 1, "1,2,3,4"],
                ["small-b", 6, "6,8"],
            ],
        );
    });

    it("every shape the table allows, and every part of one, gets partitions that share no GPU", () => {
        let checked = 0;
        for (const shape of ALL_SHAPES) {
            for (const sizes of parts(shape.split("+").map(Number))) {
                const plan = planPartitions(HGX_H100_8GPU, board, requests(sizes));
                assert.deepStrictEqual(
                    plan.map((p) => p.partition.modules.length),
                    sizes,
                    sizes.join("+"),
                );
                assert.deepStrictEqual(
                    plan.map((p) => p.gpus.length),
                    sizes,
                );
                const modules = plan.flatMap((p) => p.partition.modules);
                assert.strictEqual(
                    new Set(modules).size,
                    modules.length,
                    `${sizes.join("+")}: partitions ${plan.map((p) => p.partition.id).join(", ")} share a GPU`,
                );
                const pci = plan.flatMap((p) => p.gpus.map((g) => g.pciBusId));
                assert.strictEqual(new Set(pci).size, pci.length);
                checked++;
            }
        }
        assert.ok(checked > 40, `${checked} requests checked`);
    });

    it("refuses three workers of three GPUs, listing the possible shapes", () => {
        assert.throws(
            () => planPartitions(HGX_H100_8GPU, board, requests([3, 3, 3])),
            (e: unknown) => {
                assert.ok(e instanceof PartitionPlanError);
                assert.strictEqual(e.request, undefined);
                assert.strictEqual(
                    e.message,
                    "no partitions of the HGX H100 8-GPU table that share no GPU give these workers (w1 3 GPUs, w2 3 GPUs, w3 3 GPUs): " +
                        `its partitions have 8, 4, 2 or 1 GPUs, and the shapes possible on this board are ${ALL_SHAPES.join("; ")} (the workers' sizes must be part of one)`,
                );
                return true;
            },
        );
    });

    it("refuses requests that do not fit together although each fits alone", () => {
        for (const sizes of [[8, 1], [4, 4, 1], [4, 2, 2, 2], [2, 2, 2, 2, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1], [16]]) {
            assert.throws(
                () => planPartitions(HGX_H100_8GPU, board, requests(sizes)),
                /no partitions of the HGX H100 8-GPU table that share no GPU give these workers .*the shapes possible on this board are 8; 4\+4;/,
                sizes.join("+"),
            );
        }
    });

    it("takes partitions by id, and places the other workers around them", () => {
        const plan = planPartitions(HGX_H100_8GPU, board, [
            { worker: "a", gpus: 2 },
            { worker: "b", partition: 4 },
            { worker: "c", gpus: 4 },
        ]);
        // Partition 4 (modules 2, 4) rules out 1 (modules 1-4) for the worker of four; 3 (modules 1, 3) stays free.
        assert.deepStrictEqual(
            plan.map((p) => [p.worker, p.partition.id]),
            [
                ["a", 3],
                ["b", 4],
                ["c", 2],
            ],
        );
    });

    it("says which request is at fault: an unknown id, a clash between ids, a size that does not match", () => {
        const fault = (reqs: Parameters<typeof planPartitions>[2], request: number, message: RegExp) =>
            assert.throws(
                () => planPartitions(HGX_H100_8GPU, board, reqs),
                (e: unknown) => e instanceof PartitionPlanError && e.request === request && message.test(e.message),
            );
        fault(
            [{ worker: "a", partition: 15 }],
            0,
            /^partition 15 is not in the HGX H100 8-GPU table \(ids: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14\)$/,
        );
        fault(
            [
                { worker: "a", partition: 1 },
                { worker: "b", partition: 3 },
            ],
            1,
            /^partition 3 shares GPUs \(modules 1, 3\) with partition 1 of a: active partitions cannot share a GPU$/,
        );
        fault([{ worker: "a", partition: 1, gpus: 2 }], 0, /^partition 1 has 4 GPUs, not 2$/);
        fault([{ worker: "a", gpus: 0 }], 0, /ask for a number of GPUs/);
    });

    it("a board without NVSwitches has no fabric to partition, and says so plainly", () => {
        const single = inventorySchema.parse({ ...RTX_A500_LAPTOP, gpus: [{ ...RTX_A500_LAPTOP.gpus![0], moduleId: 1 }] });
        assert.throws(
            () => planPartitions(HGX_H100_8GPU, single, requests([1])),
            /^PartitionPlanError: the board declares no NVSwitch \(nvswitches: 0\): it has no NVLink fabric to partition/,
        );
    });

    it("needs every GPU's module id", () => {
        const noModules = inventorySchema.parse(HGX_H100_8X);
        assert.throws(
            () => planPartitions(HGX_H100_8GPU, noModules, requests([4])),
            /GPU 0, GPU 1, .*GPU 7 have no moduleId: fabric partitions name GPUs by module id/,
        );
    });

    it("a declared table (another board) is checked and planned the same way", () => {
        assert.deepStrictEqual(
            partitionListSchema
                .safeParse([
                    { id: 1, modules: [1, 1] },
                    { id: 1, modules: [2] },
                ])
                .error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`),
            ["0.modules.1: module 1 is listed twice in partition 1", "1.id: partition 1 is already listed at [0]"],
        );
        const four = partitionTable(
            [
                { id: 10, modules: [4, 3, 2, 1] },
                { id: 11, modules: [1, 2] },
                { id: 12, modules: [3, 4] },
            ],
            "a 4-GPU board",
        );
        const plan = planPartitions(four, board, requests([2, 2]));
        assert.deepStrictEqual(
            plan.map((p) => p.partition.id),
            [11, 12],
        );
        assert.deepStrictEqual(four.partitions[0].modules, [1, 2, 3, 4]);
        assert.throws(() => planPartitions(four, board, requests([4, 2])), /shapes possible on this board are 4; 2\+2 /);
    });
});
