/**
 * Whether the planner can meet every shared board's workers, each board planned as `up` would
 * plan it (through stacks/args/, with no binary hashed).
 */
import { GpuWorkerArgsError, PartitionPlanError, planBoard, UNREAD_ARTIFACTS } from "../../components/program";
import { boardSpecOf } from "../args/board-spec";
import { collectBoards } from "../config/boards";
import type { ParsedHost } from "../config/host-config";

/** What planning each board with its workers refuses, at the worker's path where the request is its. */
export function boardPlanProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    for (const { board, at, workersAt } of collectBoards(hosts)) {
        try {
            // Only checked: no binary is hashed for it.
            planBoard(boardSpecOf(board, undefined, undefined, UNREAD_ARTIFACTS));
        } catch (e) {
            // A request the planner cannot meet is the worker's (or, as a whole, the board's); any other
            // planning error (a worker's GPU plan, a GPU without a PCI address) is the board's.
            // A worker's own settings (its TSA, say) are reported at their own paths.
            if (e instanceof GpuWorkerArgsError) continue;
            if (e instanceof PartitionPlanError && e.request !== undefined) problems.push(`hosts[${workersAt[e.request]}].board: ${e.message}`);
            else if (e instanceof Error) problems.push(`hosts[${at}] (board ${board.name}): ${e.message}`);
            else throw e;
        }
    }
    return problems;
}
