/**
 * A dynamic resource that records the kind and devices of the spec the vendor's tool generated
 * on the host, once the CDI library (cdi-check, run by generate-cdi.sh) accepted it there.
 */
import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { CdiSpecCheckInputs } from "./cdi-spec-check-ops";

// A dynamic provider: it runs in the program, reading what generate-cdi.sh printed on the host.
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
