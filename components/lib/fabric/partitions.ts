/**
 * The partition planner: from a board's partition table, its inventory (GPUs with module ids
 * and PCI addresses) and the workers it is shared by (each asking for a number of GPUs, or for
 * a partition by id), the partitions to activate, one per worker, none sharing a GPU. Each
 * worker's GPUs, CDI ids and tags follow from its partition in the GPU plan (lib/gpu/plan.ts).
 * Pure.
 */
import type { Gpu, GpuInventory } from "../gpu/inventory";
import { FabricPartition, partitionIdProblem, PartitionTable } from "./partition-table";

/** What one worker of the board asks for: a number of GPUs, or one partition by id. */
export interface PartitionRequest {
    worker: string;
    gpus?: number;
    partition?: number;
}

export interface PlannedPartition {
    worker: string;
    partition: FabricPartition;
    /** The board's GPUs of the partition, in PCI (index) order. */
    gpus: Gpu[];
}

/**
 * A request the table cannot meet. `request` is the index of the request at fault, or
 * undefined when the fault is the board's (its inventory, or the set of requests as a whole).
 */
export class PartitionPlanError extends Error {
    constructor(
        public readonly request: number | undefined,
        message: string,
    ) {
        super(message);
        this.name = "PartitionPlanError";
    }
}

function overlaps(a: FabricPartition, b: FabricPartition): boolean {
    return a.modules.some((m) => b.modules.includes(m));
}

/** "8", "4+2+2". */
function shapeText(sizes: number[]): string {
    return [...sizes].sort((a, b) => b - a).join("+");
}

/**
 * Every largest set of partitions that share no GPU, as its sizes ("4+2+2"), largest first:
 * a request can be met when its sizes are part of one of these.
 */
export function possibleShapes(partitions: FabricPartition[]): string[] {
    const shapes = new Map<string, number[]>();
    const grow = (chosen: FabricPartition[], from: number) => {
        let extended = false;
        for (let i = from; i < partitions.length; i++) {
            if (chosen.some((c) => overlaps(c, partitions[i]))) continue;
            extended = true;
            grow([...chosen, partitions[i]], i + 1);
        }
        // Maximal: no partition of the whole table fits beside it (not only those after `from`).
        if (!extended && chosen.length > 0 && partitions.every((p) => chosen.includes(p) || chosen.some((c) => overlaps(c, p)))) {
            const sizes = chosen.map((c) => c.modules.length).sort((a, b) => b - a);
            shapes.set(shapeText(sizes), sizes);
        }
    };
    grow([], 0);
    return [...shapes.entries()]
        .sort(([, a], [, b]) => {
            for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (b[i] ?? 0) - (a[i] ?? 0);
            return 0;
        })
        .map(([text]) => text);
}

/** The board's GPUs by module id; every GPU must have one, since the table names GPUs by it. */
function gpusByModule(inventory: GpuInventory): Map<number, Gpu> {
    const missing = inventory.gpus.filter((g) => g.moduleId === undefined);
    if (missing.length > 0) {
        throw new PartitionPlanError(
            undefined,
            `${missing.map((g) => `GPU ${g.index}`).join(", ")} ${missing.length > 1 ? "have" : "has"} no moduleId: fabric partitions name GPUs by module id (npm run discover reads them from nvidia-smi -q)`,
        );
    }
    return new Map(inventory.gpus.map((g) => [g.moduleId!, g]));
}

function sizesOf(table: PartitionTable): string {
    const sizes = [...new Set(table.partitions.map((p) => p.modules.length))].sort((a, b) => b - a);
    return sizes.length === 1 ? `${sizes[0]}` : `${sizes.slice(0, -1).join(", ")} or ${sizes[sizes.length - 1]}`;
}

/** Picks one partition per request, none sharing a GPU; throws PartitionPlanError, saying what is possible. */
export function planPartitions(table: PartitionTable, inventory: GpuInventory, requests: PartitionRequest[]): PlannedPartition[] {
    if (inventory.nvswitches === 0) {
        throw new PartitionPlanError(
            undefined,
            "the board declares no NVSwitch (nvswitches: 0): it has no NVLink fabric to partition, so there is nothing for a fabricmanager service VM to do; give each worker its GPUs by selection instead",
        );
    }
    const byModule = gpusByModule(inventory);
    // Partitions naming a module the board lacks cannot be activated here.
    const usable = table.partitions.filter((p) => p.modules.every((m) => byModule.has(m)));
    const fixed = new Map<number, FabricPartition>();
    requests.forEach((r, i) => {
        if (r.partition === undefined) {
            if (r.gpus === undefined || !Number.isInteger(r.gpus) || r.gpus < 1)
                throw new PartitionPlanError(i, "ask for a number of GPUs (gpus: 4) or a partition by id (partition: 1)");
            return;
        }
        const p = table.partitions.find((t) => t.id === r.partition);
        if (!p) throw new PartitionPlanError(i, partitionIdProblem(table, r.partition)!);
        if (!usable.includes(p))
            throw new PartitionPlanError(
                i,
                `partition ${p.id} holds modules ${p.modules.join(", ")}, and the board's GPUs have module ids ${[...byModule.keys()].sort((a, b) => a - b).join(", ")}`,
            );
        if (r.gpus !== undefined && r.gpus !== p.modules.length)
            throw new PartitionPlanError(i, `partition ${p.id} has ${p.modules.length} GPUs, not ${r.gpus}`);
        for (const [j, other] of fixed) {
            if (overlaps(p, other))
                throw new PartitionPlanError(
                    i,
                    `partition ${p.id} shares GPUs (modules ${p.modules.filter((m) => other.modules.includes(m)).join(", ")}) with partition ${other.id} of ${requests[j].worker}: active partitions cannot share a GPU`,
                );
        }
        fixed.set(i, p);
    });

    // The rest by size, largest first; partitions in table order, so the first fit is the lowest id.
    const open = requests
        .map((r, i) => ({ r, i }))
        .filter(({ i }) => !fixed.has(i))
        .sort((a, b) => b.r.gpus! - a.r.gpus! || a.i - b.i);
    const chosen = new Map(fixed);
    const search = (k: number): boolean => {
        if (k === open.length) return true;
        const { r, i } = open[k];
        for (const p of usable) {
            if (p.modules.length !== r.gpus || [...chosen.values()].some((c) => c === p || overlaps(c, p))) continue;
            chosen.set(i, p);
            if (search(k + 1)) return true;
            chosen.delete(i);
        }
        return false;
    };
    if (!search(0)) {
        const asked = requests
            .map((r) => `${r.worker} ${r.partition !== undefined ? `partition ${r.partition}` : `${r.gpus} GPU${r.gpus === 1 ? "" : "s"}`}`)
            .join(", ");
        throw new PartitionPlanError(
            undefined,
            `no partitions of the ${table.board} table that share no GPU give these workers (${asked}): its partitions have ${sizesOf(table)} GPUs, and the shapes possible on this board are ${possibleShapes(usable).join("; ")} (the workers' sizes must be part of one)`,
        );
    }
    return requests.map((r, i) => {
        const partition = chosen.get(i)!;
        const gpus = partition.modules.map((m) => byModule.get(m)!).sort((a, b) => a.index - b.index);
        return { worker: r.worker, partition, gpus };
    });
}
