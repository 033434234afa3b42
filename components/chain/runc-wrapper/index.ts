import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { renderRuncWrapperComponent, RuncWrapperSettings } from "../../lib/render/runc-wrapper";

export interface RuncWrapperArgs extends HostAccessArgs, RuncWrapperSettings {}

/**
 * The runc wrapper in runc's place: every container gets the worker's datasets, its GPU
 * selection (and nothing more) and its device nodes. Deleting it puts runc back.
 */
export class RuncWrapper extends HostStepsComponent {
    constructor(name: string, args: RuncWrapperArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:wrapper:RuncWrapper", name, opts);
        this.placeOnHost(renderRuncWrapperComponent(args), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}

