/**
 * The InventoryCheck provider's operations, loaded when the provider runs: compare what
 * discovery found with the declared inventory, and fail with every difference at once.
 */
import { compareInventory, formatVerification, parseDiscoveryDocument, VerifyField } from "../../lib/discovery/verify";
import { GpuInventory } from "../../lib/gpu/inventory";

export interface InventoryCheckInputs {
    host: string;
    declared: GpuInventory;
    /** stdout of host/discover-gpus.sh on the host. */
    discovery: string;
    /** The driver pin ("preinstalled" or a version), or "none" where the host runs no NVIDIA driver for its GPUs (a shared board). */
    driverPin: string;
    /** Fields whose differences only warn. */
    warnOnly: VerifyField[];
}

function verify(inputs: InventoryCheckInputs): { warnings: string[] } {
    const found = parseDiscoveryDocument(inputs.discovery, `discovery on ${inputs.host}`);
    const result = compareInventory(inputs.declared, found, {
        driverPin: inputs.driverPin === "none" ? undefined : inputs.driverPin,
        warnOnly: Object.fromEntries(inputs.warnOnly.map((f) => [f, true])),
    });
    if (result.errors.length > 0) throw new Error(formatVerification(inputs.host, result));
    return { warnings: result.warnings };
}

export async function create(inputs: InventoryCheckInputs) {
    return { id: inputs.host, outs: { ...inputs, ...verify(inputs) } };
}

export async function diff(_id: string, olds: InventoryCheckInputs, news: InventoryCheckInputs) {
    const keys: (keyof InventoryCheckInputs)[] = ["declared", "discovery", "driverPin", "warnOnly"];
    return { changes: keys.some((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k])) };
}

export async function update(_id: string, _olds: InventoryCheckInputs, news: InventoryCheckInputs) {
    return { outs: { ...news, ...verify(news) } };
}
