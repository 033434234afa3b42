/**
 * gpu-workers: converges the web node and every host of the stack into a GPU-ready Concourse
 * worker (stacks/program.ts).
 *
 * The dynamic provider is asked for before the program's modules load, so that the engine starts
 * it meanwhile; the program is then loaded and run by the exported function, whose result is the
 * stack's outputs.
 */
import { startDynamicProvider } from "./stacks/provider-start";

export = async () => {
    await startDynamicProvider();
    const { runProgram } = await import("./stacks/program");
    return runProgram();
};
