/** The fabricmanager link: present where the worker's GPU plan enables it (NVSwitch boards). Pure. */
import type { LinkDef } from "../link";
import { FabricManagerSettings, renderFabricManager } from "./render";

/** fabricmanager in a user's terms: its settings, nothing to work out. */
export function planFabricManager(terms: FabricManagerSettings): FabricManagerSettings {
    return { partitions: terms.partitions, ...(terms.shared !== undefined ? { shared: terms.shared } : {}) };
}

/** fabricmanager runs beside the line: the validator and the worker wait for it, the toolkit does not. */
export const fabricManagerLink: LinkDef<FabricManagerSettings> = {
    suffix: "fabric-manager",
    plan: (_host, gpus) => (gpus.fabricManager.enabled ? planFabricManager({ partitions: gpus.fabricManager.partitions }) : undefined),
    render: renderFabricManager,
    beside: true,
};
