import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { planRuncWrapper, RuncWrapperTerms } from "../../lib/links/runc-wrapper/plan";
import { renderRuncWrapperComponent, RuncWrapperSettings } from "../../lib/links/runc-wrapper/render";
import { LOCAL_ARTIFACTS } from "../artifacts";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, and the wrapper in a user's terms (the inventory, the GPU selection, the datasets: it plans the rest), or GpuWorker's planned part. */
export type RuncWrapperArgs = LeafArgs<RuncWrapperTerms, RuncWrapperSettings>;

/**
 * The runc wrapper in runc's place: every container gets the worker's datasets, its GPU
 * selection (and nothing more) and its device nodes. Deleting it puts runc back.
 */
export class RuncWrapper extends HostStepsComponent {
    constructor(name: string, args: RuncWrapperArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:wrapper:RuncWrapper", name, opts);
        this.placeOnHost(
            partOf(
                args,
                (terms) => planRuncWrapper({ ...terms, wrapperBinary: terms.wrapperBinary ?? LOCAL_ARTIFACTS.built().wrapper }),
                renderRuncWrapperComponent,
            ).rendered,
            args,
        );
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
