/**
 * A shared board from the stack config as planning sees it (lib/plan/board-plan.ts): the
 * board's table, functions and service VM with defaults applied, and each worker's settings
 * with what it asks for. The offline render and the check of the stack plan from this; the
 * program gives the same to SharedGpuBoard. Pure.
 */
import { partitionTable } from "../components/lib/fabric/partition-table";
import { BoardSpec, serviceVmSpec } from "../components/lib/plan/board-plan";
import { BoardConfig } from "./schema";

export function boardSpecOf(board: BoardConfig): BoardSpec {
    return {
        name: board.name,
        user: board.transport.ssh.user,
        inventory: board.inventory,
        warnOnly: board.verify.warnOnly,
        table: partitionTable(board.fabric.partitionTable, board.name),
        nvswitchPci: board.fabric.nvswitchPci,
        memoryControllerPci: board.fabric.memoryControllerPci,
        serviceVm: serviceVmSpec(board.name, board.fabric.serviceVm),
        workers: board.workers.map(({ board: ask, ...worker }) => ({
            spec: worker,
            ask: { ...(ask.gpus !== undefined ? { gpus: ask.gpus } : {}), ...(ask.partition !== undefined ? { partition: ask.partition } : {}) },
        })),
    };
}
