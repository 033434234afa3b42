/**
 * gpu-workers: reads the stack config (gpu-workers:defaults, gpu-workers:hosts), validates it,
 * and converges every host into a GPU-ready Concourse worker.
 */
import * as pulumi from "@pulumi/pulumi";
import { buildBoards } from "./stacks/boards";
import { parseStack, StackConfigError } from "./stacks/config";
import { buildFleet } from "./stacks/fleet";

const config = new pulumi.Config("gpu-workers");

function readStack() {
    try {
        return parseStack({ defaults: config.getObject("defaults"), hosts: config.getObject("hosts") });
    } catch (e) {
        // Config mistakes are the user's to fix: say what and where, without a stack trace.
        if (e instanceof StackConfigError) throw new pulumi.RunError(e.message);
        throw e;
    }
}

const stack = readStack();
const fleet = buildFleet(stack.hosts, config);
const boards = buildBoards(stack.boards, config);

/** Per worker (on its own host or on a shared board): its tags, the public key to authorize on the TSA, and why a chain stopped early. */
export const workers = Object.fromEntries([...fleet, ...boards.flatMap((b) => b.workers)].map((w) => [w.hostName, {
    tags: w.tags,
    workerPublicKey: w.workerPublicKey ?? null,
    stoppedBeforeWorker: w.stoppedBeforeWorker ?? null,
}]));

/** Per shared board: the partition each of its workers got. */
export const sharedBoards = Object.fromEntries(boards.map((b) => [b.boardName, b.partitions]));
