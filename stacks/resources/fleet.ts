/**
 * Turns the validated stack config into components: the web node when the stack has one, one
 * GpuWorker per host and one SharedGpuBoard per shared board, their arguments made by
 * stacks/args/ and each handed the plan the stack's checks made of it (stacks/checks/).
 */
import * as pulumi from "@pulumi/pulumi";
import { ConcourseWeb, GpuWorker, HostStepTransport, KubernetesGpuNodes, SharedGpuBoard, UNREAD_ARTIFACTS } from "../../components/program";
import type { BoardPlan } from "../../components/program";
import { boardArgs } from "../args/board-args";
import { kubernetesArgs, SecretLookup, StackWeb, webArgs, workerArgs } from "../args/component-args";
import type { PlannedStack } from "../checks/stack";
import type { BoardConfig } from "../config/schema";
import { referencedWeb } from "./fleet-web";

export interface Fleet {
    web?: ConcourseWeb;
    /** Every worker: those on hosts of their own, then those on shared boards. */
    workers: GpuWorker[];
    boards: SharedGpuBoard[];
    /** Per cluster of `gpu-workers:kubernetes`: its objects. */
    clusters: KubernetesGpuNodes[];
}

/**
 * A host or web renamed in the stack: its component, and through the prefix of their names every
 * resource under it, is aliased to the old name, so the state moves and nothing runs again.
 */
function renamed(from: string | undefined): pulumi.ComponentResourceOptions | undefined {
    return from ? { aliases: [{ name: from }] } : undefined;
}

function buildBoards(
    boards: BoardConfig[],
    plans: BoardPlan[],
    secret: SecretLookup,
    baseDir: string,
    web?: StackWeb,
    hostSteps?: HostStepTransport,
): SharedGpuBoard[] {
    return boards.map((board, i) => new SharedGpuBoard(board.name, { ...boardArgs(board, secret, baseDir, web, hostSteps), planned: plans[i] }));
}

/**
 * The web first (in a rack's own stack, the web of the fleet's web stack), then the workers, each
 * admitting itself at the web and converging after it, and the shared boards with theirs; then the
 * Kubernetes clusters the hosts are nodes of.
 */
export function buildFleet(stack: PlannedStack, secret: SecretLookup): Fleet {
    const { plans, plannedFor } = stack;
    // What is applied must carry the digests of what is uploaded: a plan made only to be checked has none.
    if (plannedFor.artifacts === UNREAD_ARTIFACTS)
        throw new Error("buildFleet: the stack was planned with no digest taken; plan it for up (parseStack with LOCAL_ARTIFACTS)");
    const baseDir = plannedFor.baseDir;
    // A rack's stack of a fleet takes the web from the web's own stack.
    const webStack = stack.member?.webStack;
    const web =
        stack.web && webStack === undefined
            ? new ConcourseWeb(stack.web.name, { ...webArgs(stack.web, secret, baseDir, stack.hostSteps), planned: plans.web }, renamed(stack.web.renamedFrom))
            : undefined;
    const stackWeb: StackWeb | undefined = !stack.web
        ? undefined
        : web
          ? { config: stack.web, forWorkers: web.forWorkers() }
          : referencedWeb(stack.web, plans.web!, webStack!, stack.hostSteps);
    const own = stack.hosts.map(
        (host, i) =>
            new GpuWorker(host.name, { ...workerArgs(host, secret, baseDir, stackWeb, stack.hostSteps), planned: plans.hosts[i] }, renamed(host.renamedFrom)),
    );
    const boards = buildBoards(stack.boards, plans.boards, secret, baseDir, stackWeb, stack.hostSteps);
    // The cluster's objects wait for no host: a pod that lands before its node's runtime is in place fails to start, and the kubelet retries.
    const clusters = (stack.kubernetes?.clusters ?? []).map((cluster) => new KubernetesGpuNodes(cluster.name, kubernetesArgs(cluster, stack.hosts, secret)));
    return { ...(web ? { web } : {}), workers: [...own, ...boards.flatMap((b) => b.workers)], boards, clusters };
}
