/**
 * Each shared board's plan with its workers, made once as `up` makes it (through stacks/args/),
 * and whether the planner can meet every board's workers.
 */
import { GpuWorkerArgsError, PartitionPlanError } from "../../components/program";
import type { BoardPlan } from "../../components/program";
import type { StackWeb } from "../args/component-args";
import { collectBoards } from "../config/boards";
import type { ParsedHost } from "../config/host-config";
import type { PartPlans } from "./host-plans";
import { PlanContext, planStackBoard } from "./stack-plans";

/**
 * Each board's plan (collectBoards' order; those whose board host `planned` picks, all by
 * default), and what planning it refuses, at the worker's path where the request is its.
 */
export function planBoards(hosts: ParsedHost[], context: PlanContext, web?: StackWeb, planned: (at: number) => boolean = () => true): PartPlans<BoardPlan> {
    const result: PartPlans<BoardPlan> = { plans: [], problems: [], unreported: [] };
    for (const { board, at, workersAt } of collectBoards(hosts)) {
        result.plans.push(undefined);
        if (!planned(at)) continue;
        try {
            result.plans[result.plans.length - 1] = planStackBoard(board, context, web);
        } catch (e) {
            // A request the planner cannot meet is the worker's (or, as a whole, the board's); any other
            // planning error (a worker's GPU plan, a GPU without a PCI address) is the board's.
            // A worker's own settings (its TSA, say) are reported at their own paths.
            if (e instanceof GpuWorkerArgsError) result.unreported.push(e);
            else if (e instanceof PartitionPlanError && e.request !== undefined) result.problems.push(`hosts[${workersAt[e.request]}].board: ${e.message}`);
            else if (e instanceof Error) result.problems.push(`hosts[${at}] (board ${board.name}): ${e.message}`);
            else throw e;
        }
    }
    return result;
}
