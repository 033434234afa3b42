import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planWorkerValidator, WorkerValidatorTerms } from "../../lib/links/worker-validator/plan";
import { renderWorkerValidator, WorkerValidatorSettings } from "../../lib/links/worker-validator/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and what the chain before it was given (inventory, selection, datasets, versions: it works out what a container must get), or GpuWorker's planned part. */
export type WorkerValidatorArgs = LeafArgs<WorkerValidatorTerms, WorkerValidatorSettings>;

/**
 * After the chain: the driver agrees with the inventory, and a container started through
 * containerd and the runc wrapper gets exactly the selected GPUs (also when it asks for all),
 * openable device nodes, the datasets in their modes and the plan's environment. A failed
 * check fails the `up` with what was expected and what was found.
 */
export class WorkerValidator extends HostStepsComponent {
    constructor(name: string, args: WorkerValidatorArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:validate:WorkerValidator", name, opts);
        this.placeOnHost(partOf(args, (terms) => planWorkerValidator(terms), renderWorkerValidator).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
