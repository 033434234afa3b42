import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { planRuncWrapper, RuncWrapperTerms } from "../../lib/plan/leaf-terms";
import { renderRuncWrapperComponent } from "../../lib/render/runc-wrapper";
import { LOCAL_ARTIFACTS } from "../artifacts";

/** The host, and the wrapper in a user's terms: the inventory, the GPU selection, the datasets. It plans the rest. */
export interface RuncWrapperArgs extends HostAccessArgs, RuncWrapperTerms {}

/**
 * The runc wrapper in runc's place: every container gets the worker's datasets, its GPU
 * selection (and nothing more) and its device nodes. Deleting it puts runc back.
 */
export class RuncWrapper extends HostStepsComponent {
    constructor(name: string, args: RuncWrapperArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:wrapper:RuncWrapper", name, opts);
        this.placeOnHost(renderRuncWrapperComponent(planRuncWrapper({ ...args, wrapperBinary: args.wrapperBinary ?? LOCAL_ARTIFACTS.built().wrapper })), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
