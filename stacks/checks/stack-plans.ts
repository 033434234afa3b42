/**
 * The stack's plans, each made once: the web's, each host's and each shared board's, through the
 * mapping to component arguments that `up` takes (stacks/args/), by the components' own planning
 * functions. What only `up` knows (secrets, the web's generated key) stands in as a placeholder:
 * no plan reads it. The checks report what planning refuses (host-plans.ts, board-plans.ts), the
 * fleet hands each component its plan (`planned`), and the offline render writes the plans out.
 */
import * as pulumi from "@pulumi/pulumi";
import { planSharedBoard, planWebHost, planWorker, webSpec } from "../../components/program";
import type { ArtifactSource, BoardPlan, HostPlan, WebPlan, WorkerPlanning } from "../../components/program";
import { boardArgs } from "../args/board-args";
import { StackWeb, webArgs, workerArgs } from "../args/component-args";
import type { BoardConfig, HostConfig } from "../config/schema";
import type { StackConfig } from "../config/stack";
import type { WebConfig } from "../config/web-schema";

/** What stands for a secret value where only the plan is wanted. */
export const SECRET_PLACEHOLDER = "[secret]";

/** What stands for a key generated during `up` (the web's TSA key) where only the plan is wanted. */
export const GENERATED_PLACEHOLDER = "[generated during up]";

/** What a stack is planned for: the project folder (a release's relative path is its), and the digests of what is uploaded from here. */
export interface PlanContext {
    baseDir: string;
    artifacts: ArtifactSource;
}

export interface StackPlans {
    web?: WebPlan;
    /** Each host that is a worker of its own, in the stack's order. */
    hosts: HostPlan[];
    /** Each shared board with its workers, in the stack's order. */
    boards: BoardPlan[];
}

const secret = () => SECRET_PLACEHOLDER;

/** The stack's settings were parsed whole by the config stage (parseSettings): they are not parsed again. */
function planning(context: PlanContext): WorkerPlanning {
    return { artifacts: context.artifacts, settingsParsed: true };
}

/** The web's plan, and the web as its workers plan with it (its TSA and URL; its key and password only `up` knows). */
export function planStackWeb(web: WebConfig, context: PlanContext): { plan: WebPlan; forWorkers: StackWeb } {
    const plan = planWebHost(webSpec(web.name, webArgs(web, secret, context.baseDir), context.artifacts));
    return {
        plan,
        forWorkers: {
            config: web,
            forWorkers: {
                tsaHost: plan.tsaForWorkers?.host,
                tsaPort: plan.tsaForWorkers?.port,
                // An output: the key is the web's, generated during up.
                tsaPublicKey: pulumi.output(GENERATED_PLACEHOLDER),
                url: plan.settings.externalUrl,
                username: plan.settings.mainTeamUser,
                password: SECRET_PLACEHOLDER,
            },
        },
    };
}

/** One host that is a worker of its own, planned as GpuWorker plans it. */
export function planStackHost(host: HostConfig, context: PlanContext, web?: StackWeb): HostPlan {
    return planWorker(host.name, workerArgs(host, secret, context.baseDir, web), planning(context));
}

/** One shared board with its workers, planned as SharedGpuBoard plans it. */
export function planStackBoard(board: BoardConfig, context: PlanContext, web?: StackWeb): BoardPlan {
    return planSharedBoard(board.name, boardArgs(board, secret, context.baseDir, web), planning(context));
}

/** The plans of a validated stack (parseStack makes them as it checks; this is for a stack validated otherwise). */
export function planValidStack(stack: Pick<StackConfig, "hosts" | "web"> & Partial<Pick<StackConfig, "boards">>, context: PlanContext): StackPlans {
    const web = stack.web ? planStackWeb(stack.web, context) : undefined;
    return {
        ...(web ? { web: web.plan } : {}),
        hosts: stack.hosts.map((host) => planStackHost(host, context, web?.forWorkers)),
        boards: (stack.boards ?? []).map((board) => planStackBoard(board, context, web?.forWorkers)),
    };
}
