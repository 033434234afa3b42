/**
 * What the links' terms share: the built-in defaults they fall back on, a container's GPUs from
 * the inventory and selection, and the worker's datasets. Pure.
 */
import { GpuInventory } from "../gpu/inventory";
import type { AllocationSettings } from "../gpu/allocation";
import { GpuSelection, planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { WORKER_DEFAULTS } from "../settings/settings";

/** A built-in default the settings schema holds (WORKER_DEFAULTS is typed as a layer, every key optional). */
export function builtin<T>(value: T | undefined, path: string): T {
    if (value === undefined) throw new Error(`the settings schema gives no default for ${path}`);
    return value;
}

/** The GPU part of a worker's plan as a container sees it: env, unset variables, device nodes, CDI ids. */
export function containerGpus(
    inventory: GpuInventory,
    selection: GpuSelection | undefined,
    cdi: boolean | undefined,
    allocation?: AllocationSettings,
): WorkerGpuPlan {
    // fabricmanager and tags are the worker's business, not what a container is given.
    return planWorkerGpus(inventory, {
        selection: selection ?? builtin(WORKER_DEFAULTS.selection, "selection"),
        cdi: cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi"),
        fabricManager: { mode: "off", partitions: [] },
        extraTags: [],
        ...(allocation ? { allocation } : {}),
    });
}

/** A worker's datasets, each field defaulting to the worker's. */
export interface DatasetTerms {
    /** Folder whose direct subfolders are mounted into every container at the same path, read-only. Default: "/srv". */
    root?: string;
    /** Folder-name endings that mount read-write instead. Default: ["_writable", "_rw"]. */
    writableSuffixes?: string[];
}

export function datasetsOf(terms: DatasetTerms | undefined): { root: string; writableSuffixes: string[] } {
    return {
        root: terms?.root ?? builtin(WORKER_DEFAULTS.datasets?.root, "datasets.root"),
        writableSuffixes: terms?.writableSuffixes ?? [...builtin(WORKER_DEFAULTS.datasets?.writableSuffixes, "datasets.writableSuffixes")],
    };
}
