import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { planWorkerValidator, WorkerValidatorTerms } from "../../lib/plan/leaf-terms";
import { renderWorkerValidator } from "../../lib/render/worker-validator";

/** The host, and what the chain before it was given (inventory, selection, datasets, versions): it works out what a container must get. */
export interface WorkerValidatorArgs extends HostAccessArgs, WorkerValidatorTerms {}

/**
 * After the chain: the driver agrees with the inventory, and a container started through
 * containerd and the runc wrapper gets exactly the selected GPUs (also when it asks for all),
 * openable device nodes, the datasets in their modes and the plan's environment. A failed
 * check fails the `up` with what was expected and what was found.
 */
export class WorkerValidator extends HostStepsComponent {
    constructor(name: string, args: WorkerValidatorArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:validate:WorkerValidator", name, opts);
        this.placeOnHost(renderWorkerValidator(planWorkerValidator(args)), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
