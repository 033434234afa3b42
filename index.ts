/**
 * gpu-workers: reads the stack config (gpu-workers:defaults, gpu-workers:hosts), validates it,
 * and converges every host into a GPU-ready Concourse worker.
 */
import * as pulumi from "@pulumi/pulumi";
import { parseStackConfig, StackConfigError } from "./stacks/config";
import { buildFleet } from "./stacks/fleet";

const config = new pulumi.Config("gpu-workers");

function readHosts() {
    try {
        return parseStackConfig({ defaults: config.getObject("defaults"), hosts: config.getObject("hosts"), allowNoHosts: config.getObject("allowNoHosts") });
    } catch (e) {
        // Config mistakes are the user's to fix: say what and where, without a stack trace.
        if (e instanceof StackConfigError) throw new pulumi.RunError(e.message);
        throw e;
    }
}

const fleet = buildFleet(readHosts(), config);

/** Per host: the worker tags, the public key to authorize on the TSA, and why a chain stopped early. */
export const workers = Object.fromEntries(fleet.map((w) => [w.hostName, {
    tags: w.tags,
    workerPublicKey: w.workerPublicKey ?? null,
    stoppedBeforeWorker: w.stoppedBeforeWorker ?? null,
}]));
