/**
 * A dynamic resource that compares what discovery found on the host with the declared
 * inventory, and fails `up` with every difference in one readable message. The provider
 * requires the pure verifier at call time (Pulumi serializes the provider object, so it
 * must capture no modules), by an absolute path captured as a plain string.
 */
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { GpuInventory } from "../gpu/inventory";

const VERIFY_MODULE = path.join(__dirname, "..", "discovery", "verify.js");

export interface InventoryCheckInputs {
    host: string;
    declared: GpuInventory;
    /** stdout of scripts/discover-gpus.sh on the host. */
    discovery: string;
    /** The driver pin ("preinstalled" or a version). */
    driverPin: string;
    /** Fields whose differences only warn. */
    warnOnly: string[];
}

function check(inputs: InventoryCheckInputs, modulePath: string): { warnings: string[] } {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const verify = require(modulePath);
    const found = verify.parseDiscoveryDocument(inputs.discovery);
    const result = verify.compareInventory(inputs.declared, found, {
        driverPin: inputs.driverPin,
        warnOnly: Object.fromEntries(inputs.warnOnly.map((f) => [f, true])),
    });
    if (result.errors.length > 0) throw new Error(verify.formatVerification(inputs.host, result));
    return { warnings: result.warnings };
}

function makeProvider(modulePath: string): pulumi.dynamic.ResourceProvider {
    return {
        async create(inputs: InventoryCheckInputs) {
            return { id: inputs.host, outs: { ...inputs, ...check(inputs, modulePath) } };
        },
        async diff(_id: string, olds: InventoryCheckInputs, news: InventoryCheckInputs) {
            const keys: (keyof InventoryCheckInputs)[] = ["declared", "discovery", "driverPin", "warnOnly"];
            const changed = keys.filter((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
            return { changes: changed.length > 0 };
        },
        async update(_id: string, _olds: InventoryCheckInputs, news: InventoryCheckInputs) {
            return { outs: { ...news, ...check(news, modulePath) } };
        },
    };
}

/** Fails the update when the host's hardware differs from the declaration. */
export class InventoryCheck extends pulumi.dynamic.Resource {
    declare public readonly warnings: pulumi.Output<string[]>;

    constructor(name: string, args: { [K in keyof InventoryCheckInputs]: pulumi.Input<InventoryCheckInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(makeProvider(VERIFY_MODULE), name, { ...args, warnings: undefined }, opts, "gpu-workers", "InventoryCheck");
    }
}
