/**
 * A validated shared board of the stack as SharedGpuBoard's arguments, its workers' made the way
 * component-args.ts makes any worker's (secrets read from the config keys they name).
 */
import { HostStepTransport, SharedGpuBoardArgs, SharedGpuBoardWorker } from "../../components/program";
import { SecretLookup, sshTransportArgs, StackWeb, workerArgs } from "./component-args";
import { BoardConfig } from "../config/schema";

/** A board's worker as SharedGpuBoard's argument. */
function boardWorker(
    board: BoardConfig,
    { board: ask, ...worker }: BoardConfig["workers"][number],
    secret: SecretLookup,
    baseDir: string,
    web?: StackWeb,
): SharedGpuBoardWorker {
    // The board's inventory stands in until the planner gives the worker its partition's GPUs.
    const { transport, inventory: _board, ...args } = workerArgs({ ...worker, inventory: board.inventory }, secret, baseDir, web);
    const { type: _vm, ...lxd } = transport.lxd!;
    return {
        ...args,
        name: worker.name,
        lxd,
        ...(ask.gpus !== undefined ? { gpus: ask.gpus } : {}),
        ...(ask.partition !== undefined ? { partition: ask.partition } : {}),
    };
}

/** One board of the stack as SharedGpuBoard's arguments, its secrets taken from the keys it names. */
export function boardArgs(board: BoardConfig, secret: SecretLookup, baseDir: string, web?: StackWeb, hostSteps?: HostStepTransport): SharedGpuBoardArgs {
    return {
        ssh: sshTransportArgs(board.transport.ssh, secret),
        ...(hostSteps ? { hostSteps } : {}),
        inventory: board.inventory,
        warnOnly: board.verify.warnOnly,
        partitionTable: board.fabric.partitionTable,
        nvswitchPci: board.fabric.nvswitchPci,
        memoryControllerPci: board.fabric.memoryControllerPci,
        serviceVm: board.fabric.serviceVm,
        workers: board.workers.map((w) => boardWorker(board, w, secret, baseDir, web)),
    };
}
