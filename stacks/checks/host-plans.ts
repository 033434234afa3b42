/**
 * Each host's plan (a worker of its own), made once as `up` makes it, on whatever parsed (a host
 * with other problems included), and what planning refuses at the host's paths; shared boards and
 * their workers are planned together (board-plans.ts).
 */
import { PlanError, planWorkerGpus } from "../../components/program";
import type { HostPlan } from "../../components/program";
import type { StackWeb } from "../args/component-args";
import { ParsedHost, wholeHost } from "../config/host-config";
import type { HostConfig } from "../config/schema";
import { PlanContext, planStackHost } from "./stack-plans";

/** What planning a part of the stack gave: each plan made, the problems at their paths, and errors no path names. */
export interface PartPlans<P> {
    /** Per part, its plan where planning succeeded. */
    plans: (P | undefined)[];
    problems: string[];
    /** What `up` would stop on that is no config problem of its own (a release file missing): thrown when nothing else is wrong. */
    unreported: unknown[];
}

/** Each host's plan (those `planned` picks: all by default), and what the GPU plan of each worker on a host of its own refuses. */
export function planHosts(hosts: ParsedHost[], context: PlanContext, web?: StackWeb, planned: (i: number) => boolean = () => true): PartPlans<HostPlan> {
    const result: PartPlans<HostPlan> = { plans: [], problems: [], unreported: [] };
    hosts.forEach((h, i) => {
        const host = wholeHost(h);
        result.plans.push(undefined);
        if (!host || !planned(i)) return;
        try {
            result.plans[i] = planStackHost(host, context, web);
        } catch (e) {
            // What the stack reports of a refused plan is its GPU plan's problem; the rest the config's checks
            // report at their own paths (a toolkit version, the TSA a worker needs), or `up` would stop on.
            const refused = gpuPlanError(host);
            if (!refused) result.unreported.push(e);
            else if (!followsReported(refused, h.reported)) result.problems.push(`hosts[${i}].${refused.message}`);
        }
    });
    return result;
}

/**
 * A dropped bad field stands in for the built-in default here (fabricManager.mode "of" became
 * auto), so a plan error about that setting would be a follow-on, not the user's mistake.
 */
function followsReported(e: PlanError, reported: string[]): boolean {
    const setting = e.path.split(".")[0];
    return reported.some((r) => r === "" || r.split(/[.[]/)[0] === setting);
}

/** What the GPU plan alone refuses (where the whole plan was refused), as the plan asks for it. */
function gpuPlanError(s: HostConfig): PlanError | undefined {
    try {
        planWorkerGpus(s.inventory, {
            selection: s.selection,
            cdi: s.toolkit.cdi,
            fabricManager: s.fabricManager,
            extraTags: s.concourse.tags,
            driverPin: s.driver.version,
            privilegedMode: s.concourse.privilegedMode,
            allocation: s.allocation,
        });
        return undefined;
    } catch (e) {
        if (e instanceof PlanError) return e;
        throw e;
    }
}
