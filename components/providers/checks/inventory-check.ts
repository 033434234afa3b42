/**
 * A dynamic resource that compares what discovery found on the host with the declared
 * inventory, and fails `up` with every difference in one readable message.
 */
import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { InventoryCheckInputs } from "./inventory-check-ops";

// A dynamic provider: it compares discovery's output with the declared inventory in the program; nothing runs on the host.
const provider = lazyProvider("inventory-check", "inventory check");

/** Fails the update when the host's hardware differs from the declaration. */
export class InventoryCheck extends LazyProviderResource {
    /** Differences the stack chose to only warn about. */
    declare public readonly warnings: pulumi.Output<string[]>;

    constructor(name: string, args: { [K in keyof InventoryCheckInputs]: pulumi.Input<InventoryCheckInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(provider, name, { ...args, warnings: undefined }, opts, "gpu-workers", "InventoryCheck");
    }
}
