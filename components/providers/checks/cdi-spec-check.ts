/**
 * A dynamic resource that runs the project's CDI validator on the spec the vendor's tool
 * generated on the host, so a spec runtimes would refuse or mis-apply stops the `up`.
 */
import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { CdiSpecCheckInputs } from "./cdi-spec-check-ops";

// A dynamic provider: the check runs the project's CDI validator in the program, not on the host.
const provider = lazyProvider("cdi-spec-check", "CDI spec check");

export class CdiSpecCheck extends LazyProviderResource {
    /** The spec's kind, e.g. nvidia.com/gpu. */
    declare public readonly kind: pulumi.Output<string>;
    /** Its device names, e.g. 0, GPU-..., all. */
    declare public readonly devices: pulumi.Output<string[]>;

    constructor(name: string, args: { [K in keyof CdiSpecCheckInputs]: pulumi.Input<CdiSpecCheckInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(provider, name, { ...args, kind: undefined, devices: undefined }, opts, "gpu-workers", "CdiSpecCheck");
    }
}
