/**
 * A board's fabric partition table: which GPUs (by module id) each partition NVIDIA's
 * fabricmanager can activate holds. Boards number their partitions differently, so a table is
 * data: the HGX H100 8-GPU table ships here, other boards are declared in the stack with the
 * same schema. Pure.
 */
import { z } from "zod";

export interface FabricPartition {
    /** The partition id fabricmanager knows it by (`fmpm -a ID`). */
    id: number;
    /** Module ids of its GPUs, ascending. */
    modules: number[];
}

export interface PartitionTable {
    /** What the table is of, for messages: "HGX H100 8-GPU". */
    board: string;
    partitions: FabricPartition[];
}

const int = (what: string, min: number) =>
    z
        .number({ error: `expected ${what}` })
        .int({ error: `expected ${what}` })
        .min(min, { error: `expected ${what}` });

/** A declared table: `[{id: 1, modules: [1, 2, 3, 4]}, ...]`. */
export const partitionListSchema = z
    .array(
        z.strictObject({
            id: int("a partition id (0 or more)", 0),
            modules: z.array(int("a module id (1 or more)", 1)).min(1, { error: "a partition holds at least one GPU" }),
        }),
        { error: "expected a list of {id, modules}" },
    )
    .min(1, { error: "expected at least one partition" })
    .superRefine((list, ctx) => {
        const ids = new Map<number, number>();
        list.forEach((p, i) => {
            const first = ids.get(p.id);
            if (first !== undefined) ctx.addIssue({ code: "custom", path: [i, "id"], message: `partition ${p.id} is already listed at [${first}]` });
            else ids.set(p.id, i);
            const seen = new Set<number>();
            p.modules.forEach((m, j) => {
                if (seen.has(m)) ctx.addIssue({ code: "custom", path: [i, "modules", j], message: `module ${m} is listed twice in partition ${p.id}` });
                seen.add(m);
            });
        });
    });

function range(from: number, to: number): number[] {
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/**
 * HGX H100 8-GPU (NVIDIA Fabric Manager user guide, shared NVSwitch mode): 0 = all eight,
 * 1 and 2 = the two halves, 3-6 = pairs, 7-14 = one GPU each.
 */
export const HGX_H100_8GPU: PartitionTable = {
    board: "HGX H100 8-GPU",
    partitions: [
        { id: 0, modules: range(1, 8) },
        { id: 1, modules: range(1, 4) },
        { id: 2, modules: range(5, 8) },
        { id: 3, modules: [1, 3] },
        { id: 4, modules: [2, 4] },
        { id: 5, modules: [5, 7] },
        { id: 6, modules: [6, 8] },
        ...range(1, 8).map((module) => ({ id: 6 + module, modules: [module] })),
    ],
};

/** Tables that ship with the program, by the name a stack gives (`fabric.partitions: hgx-h100-8gpu`). */
export const BUILTIN_PARTITION_TABLES: Readonly<Record<string, PartitionTable>> = {
    "hgx-h100-8gpu": HGX_H100_8GPU,
};

/** The table of a board that declares none. */
export const DEFAULT_PARTITION_TABLE = "hgx-h100-8gpu";

/** Why `id` names no partition of `table` (naming the ids it has), or undefined. */
export function partitionIdProblem(table: PartitionTable, id: number): string | undefined {
    if (table.partitions.some((p) => p.id === id)) return undefined;
    return `partition ${id} is not in the ${table.board} table (ids: ${table.partitions.map((p) => p.id).join(", ")})`;
}

/** A table from a stack: a built-in name, or a declared list (named after the board). */
export function partitionTable(source: string | FabricPartition[], board: string): PartitionTable {
    if (typeof source !== "string") return { board, partitions: source.map((p) => ({ id: p.id, modules: [...p.modules].sort((a, b) => a - b) })) };
    const table = BUILTIN_PARTITION_TABLES[source];
    if (!table)
        throw new Error(
            `unknown partition table ${source} (built in: ${Object.keys(BUILTIN_PARTITION_TABLES).join(", ")}; or declare one as a list of {id, modules})`,
        );
    return table;
}
