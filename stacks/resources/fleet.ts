/**
 * Turns the validated stack config into components: the web node when the stack has one, one
 * GpuWorker per host and one SharedGpuBoard per shared board, their arguments made by
 * stacks/args/ (the offline render goes through the same mapping).
 */
import * as pulumi from "@pulumi/pulumi";
import { ConcourseWeb, GpuWorker, HostStepTransport, KubernetesGpuNodes, SharedGpuBoard } from "../../components/program";
import { boardArgs } from "../args/board-args";
import { kubernetesArgs, SecretLookup, StackWeb, webArgs, workerArgs } from "../args/component-args";
import type { BoardConfig } from "../config/schema";
import type { StackConfig } from "../config/stack";

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

function buildBoards(boards: BoardConfig[], secret: SecretLookup, baseDir: string, web?: StackWeb, hostSteps?: HostStepTransport): SharedGpuBoard[] {
    return boards.map((board) => new SharedGpuBoard(board.name, boardArgs(board, secret, baseDir, web, hostSteps)));
}

/**
 * The web first, then the workers, each admitting itself at the web and converging after it,
 * and the shared boards with theirs; then the Kubernetes clusters the hosts are nodes of.
 */
export function buildFleet(stack: StackConfig, secret: SecretLookup, baseDir: string): Fleet {
    const web = stack.web ? new ConcourseWeb(stack.web.name, webArgs(stack.web, secret, baseDir, stack.hostSteps), renamed(stack.web.renamedFrom)) : undefined;
    const stackWeb: StackWeb | undefined = stack.web && web ? { config: stack.web, forWorkers: web.forWorkers() } : undefined;
    const own = stack.hosts.map((host) => new GpuWorker(host.name, workerArgs(host, secret, baseDir, stackWeb, stack.hostSteps), renamed(host.renamedFrom)));
    const boards = buildBoards(stack.boards, secret, baseDir, stackWeb, stack.hostSteps);
    // The cluster's objects wait for no host: a pod that lands before its node's runtime is in place fails to start, and the kubelet retries.
    const clusters = (stack.kubernetes?.clusters ?? []).map((cluster) => new KubernetesGpuNodes(cluster.name, kubernetesArgs(cluster, stack.hosts, secret)));
    return { ...(web ? { web } : {}), workers: [...own, ...boards.flatMap((b) => b.workers)], boards, clusters };
}
