/** The runc wrapper link: its terms, its plan, and its row of the chain. Pure. */
import type { RuncCvePolicy, SpecFeature } from "../../gpu/spec-features";
import { GpuInventory } from "../../gpu/inventory";
import type { Artifact } from "../../host/steps";
import type { AllocationSettings } from "../../gpu/allocation";
import { GPU_CONTROL_VARIABLES, GpuSelection, PlanError, PrivilegedMode, WorkerGpuPlan } from "../../gpu/plan";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSettings } from "../../settings/settings";
import { jobMappingAndFoldersProblem, jobMappingDir } from "../../settings/value-patterns";
import type { WorkerSpec } from "../../settings/worker-spec";
import { NVIDIA_RUNTIME_BINARY } from "../container-toolkit/render";
import { gpuHealthTerms, planGpuHealth } from "../gpu-health/plan";
import { HEALTH_GPUS_FILE } from "../gpu-health/render";
import type { LinkDef } from "../link";
import { builtin, containerGpus, DatasetTerms, datasetsOf } from "../terms";
import { GpuJobRecords, renderRuncWrapperComponent, RUNC_REAL_PATH, RuncWrapperSettings } from "./render";

/** What the wrapper hands containers to. */
export type WrapperRuntime = "nvidia-container-runtime" | "runc";

/** The runc wrapper in a user's terms. */
export interface RuncWrapperTerms {
    /** The declared GPU inventory (inventorySchema.parse(...)). */
    inventory: GpuInventory;
    /** The GPUs every container gets (and no others): "all" or indices. Example: [0, 1]. Default: "all". */
    selection?: GpuSelection;
    /** Name NVIDIA GPUs by CDI id (ContainerToolkit's CDI spec must be on the host). Default: true. */
    cdi?: boolean;
    /** The dataset root mounted into every container, read-only but for the folders with a writable suffix. Default: /srv, suffixes _writable and _rw. */
    datasets?: DatasetTerms;
    /**
     * What Concourse gives a `privileged: true` step on this host: "ignore", "fuse-only" or
     * "full". Any mode but ignore lets the wrapper create containers that can undo the
     * read-only datasets. Default: "ignore".
     */
    privilegedMode?: PrivilegedMode;
    /** Spec features the wrapper lets through (it refuses each otherwise, naming it): SPEC_FEATURES. Example: ["cdi-annotations"]. Default: none. */
    allowSpec?: SpecFeature[];
    /** A runc open to a known container breakout: "warn" (name the CVEs) or "refuse" (fail the step). Default: "warn". */
    runcCves?: RuncCvePolicy;
    /**
     * What the wrapper hands `create` and `run` to: "nvidia-container-runtime" (ContainerToolkit
     * installs it; it gives a container its NVIDIA GPUs) or "runc" (the host's runc, which the
     * wrapper sets aside). Default: nvidia-container-runtime on an NVIDIA inventory, else runc.
     */
    runtime?: WrapperRuntime;
    /** The runc that callers find (the one moved aside). Default: `command -v runc` on the host. */
    runcPath?: string;
    /** The built wrapper to upload, with its sha256. Default: dist/wrapper/runc-wrapper of this package, hashed by the component. */
    wrapperBinary?: Artifact;
    /** The wrapper's log. Default: /var/log/gpu-workers/runc-wrapper.log. */
    logPath?: string;
    /** GPU metrics per build: with either, the wrapper records which container holds which GPU (docs/gpu-metrics.md). Default: neither. */
    metrics?: { nodeExporter?: boolean; dcgmJobMappingDir?: string };
    /**
     * GPUs handed out per task (the settings' `allocation`, field by field; docs/gpu-allocation.md):
     * mode "all", "exclusive", "timeSlice" or "mps", perTask, replicas, waitSeconds. Example:
     * { mode: "exclusive" }. Default: mode all, every container gets every selected GPU.
     */
    allocation?: Partial<WorkerSettings["allocation"]>;
    /** The GpuHealth watcher runs on the host: with allocation, a GPU it calls sick is handed to no new container. Default: false. */
    healthWatcher?: boolean;
}

const RUNTIME_PATHS: Record<WrapperRuntime, string> = { "nvidia-container-runtime": NVIDIA_RUNTIME_BINARY, runc: RUNC_REAL_PATH };

/** The wrapper's settings; `plan` is the worker's GPU plan where the chain has one already. */
export function planRuncWrapper(
    terms: RuncWrapperTerms & { wrapperBinary: Artifact },
    plan = containerGpus(terms.inventory, terms.selection, terms.cdi, allocationOf(terms.allocation)),
): RuncWrapperSettings {
    const runtime = terms.runtime ?? (terms.inventory.vendor === "nvidia" ? "nvidia-container-runtime" : "runc");
    const privilegedMode = terms.privilegedMode ?? builtin(WORKER_DEFAULTS.concourse?.privilegedMode, "concourse.privilegedMode");
    const allocation = plan.allocation;
    return {
        plan: allocation ? holdingNone(plan) : plan,
        datasets: datasetsOf(terms.datasets),
        realRuntime: RUNTIME_PATHS[runtime],
        // full and fuse-only both give a privileged step CAP_SYS_ADMIN, which the wrapper refuses unless allowed.
        allowPrivileged: privilegedMode !== "ignore",
        allowSpec: terms.allowSpec ?? builtin(WORKER_DEFAULTS.wrapper?.allow, "wrapper.allow"),
        runcCves: terms.runcCves ?? builtin(WORKER_DEFAULTS.wrapper?.runcCves, "wrapper.runcCves"),
        ...(terms.runcPath !== undefined ? { runcPath: terms.runcPath } : {}),
        wrapperBinary: terms.wrapperBinary,
        ...(terms.logPath !== undefined ? { logPath: terms.logPath } : {}),
        ...gpuJobRecords(terms, plan),
        ...(allocation ? { allocation: { ...allocation, ...(terms.healthWatcher ? { healthFile: HEALTH_GPUS_FILE } : {}) } } : {}),
    };
}

/** The allocation terms over the built-in defaults (replicas stays absent where not given: its default depends on the mode). */
export function allocationOf(terms: RuncWrapperTerms["allocation"]): AllocationSettings | undefined {
    if (terms === undefined) return undefined;
    const d = WORKER_DEFAULTS.allocation;
    return {
        mode: terms.mode ?? builtin(d?.mode, "allocation.mode"),
        perTask: terms.perTask ?? builtin(d?.perTask, "allocation.perTask"),
        ...(terms.replicas !== undefined ? { replicas: terms.replicas } : {}),
        waitSeconds: terms.waitSeconds ?? builtin(d?.waitSeconds, "allocation.waitSeconds"),
    };
}

/**
 * What a container holding no unit gets, with allocation on: no GPU variable (every one unset),
 * no node of a unit, and every selected GPU's node refused; the wrapper adds a holder's own.
 */
export function holdingNone(plan: WorkerGpuPlan): Pick<WorkerGpuPlan, "env" | "unsetEnv" | "deviceNodes" | "deviceLinks" | "gpuNodes"> {
    const a = plan.allocation!;
    const unitNodes = new Set([...a.holderDeviceNodes, ...a.units.flatMap((u) => u.deviceNodes)]);
    const env = Object.fromEntries(Object.entries(plan.env).filter(([name]) => !GPU_CONTROL_VARIABLES.includes(name)));
    return {
        env,
        unsetEnv: GPU_CONTROL_VARIABLES.filter((name) => !(name in env)),
        deviceNodes: plan.deviceNodes.filter((n) => !unitNodes.has(n)),
        deviceLinks: (plan.deviceLinks ?? []).filter((l) => !unitNodes.has(l.node)),
        gpuNodes: plan.gpuNodes,
    };
}

/** The records the metrics need: none without GPUs, or when neither the node exporter nor dcgm-exporter's mapping is asked for. */
function gpuJobRecords(terms: RuncWrapperTerms, plan: WorkerGpuPlan): { gpuJobs?: GpuJobRecords } {
    const m = terms.metrics;
    if (m?.dcgmJobMappingDir !== undefined) {
        // Held to the settings' rules here too: RuncWrapper alone takes the folder as given.
        const form = jobMappingDir.safeParse(m.dcgmJobMappingDir);
        const problem = form.success ? jobMappingAndFoldersProblem(m.dcgmJobMappingDir, datasetsOf(terms.datasets).root) : form.error.issues[0].message;
        if (problem) throw new PlanError("metrics.dcgmJobMappingDir", problem);
    }
    if (!m || plan.selected.length === 0 || (!m.nodeExporter && m.dcgmJobMappingDir === undefined)) return {};
    const gpus = [...new Set(plan.selected.map((g) => g.index))];
    return { gpuJobs: { gpus, ...(m.dcgmJobMappingDir !== undefined ? { mappingDir: m.dcgmJobMappingDir } : {}) } };
}

/** The worker's runc wrapper in a user's terms: RuncWrapper alone takes the same (its runtime: nvidia-container-runtime on NVIDIA hosts, whose runtimes list names the real runc). */
export function wrapperTerms(host: WorkerSpec): RuncWrapperTerms & { wrapperBinary: Artifact } {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        datasets: host.datasets,
        privilegedMode: host.concourse.privilegedMode,
        allowSpec: host.wrapper.allow,
        runcCves: host.wrapper.runcCves,
        wrapperBinary: host.artifacts.wrapper,
        metrics: host.metrics,
        // Mode all's terms stay as they were, and plan no health watcher for nothing.
        ...(host.allocation.mode !== "all" ? { allocation: host.allocation, healthWatcher: planGpuHealth(gpuHealthTerms(host)) !== undefined } : {}),
    };
}

/** Every worker gets the wrapper. */
export const runcWrapperLink: LinkDef<RuncWrapperSettings> = {
    suffix: "runc-wrapper",
    plan: (host, gpus) => planRuncWrapper(wrapperTerms(host), gpus),
    render: renderRuncWrapperComponent,
};
