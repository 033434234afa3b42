import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import type { Artifact } from "../../lib/host/steps";
import { renderRuncWrapperComponent, RuncWrapperSettings } from "../../lib/render/runc-wrapper";
import { LOCAL_ARTIFACTS } from "../artifacts";

export interface RuncWrapperArgs extends HostAccessArgs, Omit<RuncWrapperSettings, "wrapperBinary"> {
    /** The wrapper to upload, with its sha256. Default: this package's build (dist/wrapper/runc-wrapper). */
    wrapperBinary?: Artifact;
}

/**
 * The runc wrapper in runc's place: every container gets the worker's datasets, its GPU
 * selection (and nothing more) and its device nodes. Deleting it puts runc back.
 */
export class RuncWrapper extends HostStepsComponent {
    constructor(name: string, args: RuncWrapperArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:wrapper:RuncWrapper", name, opts);
        this.placeOnHost(renderRuncWrapperComponent({ ...args, wrapperBinary: args.wrapperBinary ?? LOCAL_ARTIFACTS.built().wrapper }), args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}

