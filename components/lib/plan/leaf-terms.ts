/**
 * From what a user knows (the inventory, the GPU selection, datasets, versions) to the
 * settings a leaf component renders. A component used alone plans with these, and the chain
 * (chainSettings) plans its links with the same functions, so both place the same files. Pure.
 */
import type { RuncCvePolicy, SpecFeature } from "../gpu/spec-features";
import { GpuInventory } from "../gpu/inventory";
import type { Artifact } from "../host/steps";
import { GpuSelection, PlanError, planWorkerGpus, PrivilegedMode, WorkerGpuPlan } from "../gpu/plan";
import { VendorRepository, vendorRepository } from "../repos/vendor-repos";
import type { PlannedRelease } from "../render/concourse-release";
import type { ConcourseWorkerSettings } from "../render/concourse-worker";
import { ContainerdRuntimeSettings, renderConcourseContainerdConfig } from "../render/containerd";
import { CDI_SPEC_PATHS, ContainerToolkitSettings, NVIDIA_RUNTIME_BINARY } from "../render/container-toolkit";
import { GpuDriverSettings } from "../render/gpu-driver";
import { RUNC_REAL_PATH, RuncWrapperSettings, WRAPPER_PATH } from "../render/runc-wrapper";
import { WorkerValidatorSettings } from "../render/worker-validator";
import { TOOLKITS, toolkitVersion, toolkitVersionProblems } from "../toolkit/versions";
import { WORKER_DEFAULTS } from "./settings";

/** A built-in default the settings schema holds (WORKER_DEFAULTS is typed as a layer, every key optional). */
function builtin<T>(value: T | undefined, path: string): T {
    if (value === undefined) throw new Error(`the settings schema gives no default for ${path}`);
    return value;
}

/** The GPU part of a worker's plan as a container sees it: env, unset variables, device nodes, CDI ids. */
function containerGpus(inventory: GpuInventory, selection: GpuSelection | undefined, cdi: boolean | undefined): WorkerGpuPlan {
    // fabricmanager and tags are the worker's business, not what a container is given.
    return planWorkerGpus(inventory, {
        selection: selection ?? builtin(WORKER_DEFAULTS.selection, "selection"),
        cdi: cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi"),
        fabricManager: { mode: "off", partitions: [] },
        extraTags: [],
    });
}

/** A worker's datasets, each field defaulting to the worker's. */
export interface DatasetTerms {
    /** Folder whose direct subfolders are mounted into every container at the same path, read-only. Default: "/srv". */
    root?: string;
    /** Folder-name endings that mount read-write instead. Default: ["_writable", "_rw"]. */
    writableSuffixes?: string[];
}

function datasetsOf(terms: DatasetTerms | undefined): { root: string; writableSuffixes: string[] } {
    return {
        root: terms?.root ?? builtin(WORKER_DEFAULTS.datasets?.root, "datasets.root"),
        writableSuffixes: terms?.writableSuffixes ?? [...builtin(WORKER_DEFAULTS.datasets?.writableSuffixes, "datasets.writableSuffixes")],
    };
}

/** The GPU driver in a user's terms. */
export interface GpuDriverTerms {
    /** Whose driver: NVIDIA's (its packages, or the host's own) or AMD's (amdgpu, in the kernel). */
    vendor: "nvidia" | "amd";
    /** "preinstalled" (check the loaded driver, install nothing) or a version to install and hold. Example: "550.54.15". Default: "preinstalled". */
    version?: string;
}

/** The driver's settings: a pinned version comes from the vendor's repository where the project ships its key. */
export function planGpuDriver(terms: GpuDriverTerms): GpuDriverSettings {
    const version = terms.version ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version");
    const repository = version === "preinstalled" ? undefined : vendorRepository("driver", terms.vendor);
    return { vendor: terms.vendor, version, ...(repository ? { repository } : {}) };
}

/** The container toolkit in a user's terms. */
export interface ContainerToolkitTerms {
    /** The declared GPU inventory (inventorySchema.parse(...)): its vendor picks the toolkit; NVIDIA Tegra gets CDI in csv mode. */
    inventory: GpuInventory;
    /** The GPUs containers get, whose CDI ids the spec must hold: "all" or indices. Example: [0, 1]. Default: "all". */
    selection?: GpuSelection;
    /** Generate a CDI spec and inject GPUs by CDI id. Default: true. */
    cdi?: boolean;
    /** The toolkit version, or "preinstalled" (installs nothing). Example: "1.17.8". Default: per vendor (components/lib/toolkit/versions.ts); versions with known container escapes are refused. */
    version?: string;
    /** The driver pin ("preinstalled" or a version): a change regenerates the CDI spec. Default: "preinstalled". */
    driverVersion?: string;
}

/** The toolkit's settings; `plan` is the worker's GPU plan where the chain has one already. */
export function planContainerToolkit(
    terms: ContainerToolkitTerms,
    plan = containerGpus(terms.inventory, terms.selection, terms.cdi),
): ContainerToolkitSettings {
    const vendor = terms.inventory.vendor;
    if (vendor === "none") throw new PlanError("inventory.vendor", "a container toolkit needs GPUs, but the inventory declares vendor none");
    const version = toolkitVersion(vendor, terms.version);
    if (version !== "preinstalled") {
        const problems = toolkitVersionProblems(vendor, version);
        if (problems.length > 0) throw new PlanError("toolkit.version", problems.join("; "));
    }
    const repository: VendorRepository | undefined = version === "preinstalled" ? undefined : vendorRepository("toolkit", vendor);
    return {
        vendor,
        version,
        ...(repository ? { repository } : {}),
        cdi: terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi"),
        tegra: terms.inventory.tegra,
        cdiDevices: plan.cdiDevices,
        // nvidia-container-runtime hands containers to the runc the wrapper set aside, never back to the wrapper.
        realRuntime: RUNC_REAL_PATH,
        driverVersion: terms.driverVersion ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version"),
    };
}

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
}

const RUNTIME_PATHS: Record<WrapperRuntime, string> = { "nvidia-container-runtime": NVIDIA_RUNTIME_BINARY, runc: RUNC_REAL_PATH };

/** The wrapper's settings; `plan` is the worker's GPU plan where the chain has one already. */
export function planRuncWrapper(
    terms: RuncWrapperTerms & { wrapperBinary: Artifact },
    plan = containerGpus(terms.inventory, terms.selection, terms.cdi),
): RuncWrapperSettings {
    const runtime = terms.runtime ?? (terms.inventory.vendor === "nvidia" ? "nvidia-container-runtime" : "runc");
    const privilegedMode = terms.privilegedMode ?? builtin(WORKER_DEFAULTS.concourse?.privilegedMode, "concourse.privilegedMode");
    return {
        plan,
        datasets: datasetsOf(terms.datasets),
        realRuntime: RUNTIME_PATHS[runtime],
        // full and fuse-only both give a privileged step CAP_SYS_ADMIN, which the wrapper refuses unless allowed.
        allowPrivileged: privilegedMode !== "ignore",
        allowSpec: terms.allowSpec ?? builtin(WORKER_DEFAULTS.wrapper?.allow, "wrapper.allow"),
        runcCves: terms.runcCves ?? builtin(WORKER_DEFAULTS.wrapper?.runcCves, "wrapper.runcCves"),
        ...(terms.runcPath !== undefined ? { runcPath: terms.runcPath } : {}),
        wrapperBinary: terms.wrapperBinary,
        ...(terms.logPath !== undefined ? { logPath: terms.logPath } : {}),
    };
}

/** containerd's GPU runtime handler in a user's terms. */
export interface ContainerdRuntimeTerms {
    /** The declared GPU inventory: a host without GPUs gets no CDI in CRI. */
    inventory: GpuInventory;
    /** The CRI runtime handler that calls the wrapper (a Kubernetes RuntimeClass handler). Default: "gpu". */
    runtimeName?: string;
    /** Make it CRI's default runtime. Default: false. */
    default?: boolean;
    /** Turn on CRI's CDI support, for GPUs by CDI id (ContainerToolkit's spec). Default: true. */
    cdi?: boolean;
    /** Where CRI looks for CDI specs. Default: /etc/cdi and /var/run/cdi. */
    cdiSpecDirs?: string[];
    /** Also add Kata Containers' GPU runtime entry (kata-qemu-nvidia-gpu), beside the wrapper's. Default: false. */
    kata?: boolean;
    /** The built containerd-toml to upload, with its sha256. Default: dist/containerd-toml/containerd-toml of this package, hashed by the component. */
    helperBinary?: Artifact;
}

/** The handler's settings: it runs the runc wrapper where RuncWrapper places it. */
export function planContainerdRuntime(terms: ContainerdRuntimeTerms & { helperBinary: Artifact }): ContainerdRuntimeSettings {
    return {
        runtimeName: terms.runtimeName ?? builtin(WORKER_DEFAULTS.containerd?.runtimeName, "containerd.runtimeName"),
        binaryName: WRAPPER_PATH,
        makeDefault: terms.default ?? builtin(WORKER_DEFAULTS.containerd?.default, "containerd.default"),
        enableCdi: (terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi")) && terms.inventory.vendor !== "none",
        ...(terms.cdiSpecDirs !== undefined ? { cdiSpecDirs: terms.cdiSpecDirs } : {}),
        kata: terms.kata ?? builtin(WORKER_DEFAULTS.containerd?.kata, "containerd.kata"),
        helperBinary: terms.helperBinary,
    };
}

/** The worker's validator in a user's terms: what the rest of the chain was given. */
export interface WorkerValidatorTerms {
    /** The declared GPU inventory: the driver must list exactly its GPUs, at its driver and CUDA versions. */
    inventory: GpuInventory;
    /** The GPUs a container must see, exactly. Default: "all". */
    selection?: GpuSelection;
    /** GPUs by CDI id (the CDI spec's changes run the validator again). Default: true. */
    cdi?: boolean;
    /** The dataset root the validator checks the wrapper mounts as it should. Default: the worker's (/srv). */
    datasets?: DatasetTerms;
    /** The driver pin, or "preinstalled" (then the inventory's driverVersion, where declared). Default: "preinstalled". */
    driverVersion?: string;
    /** The toolkit version ContainerToolkit was given ("preinstalled": any). Default: per vendor, as ContainerToolkit's. */
    toolkitVersion?: string;
    /** containerd's socket. Default: /run/containerd/containerd.sock. */
    socket?: string;
}

/** What the validator expects: the whole inventory from the driver, the plan's selection, env and devices in a container. */
export function planWorkerValidator(terms: WorkerValidatorTerms, plan = containerGpus(terms.inventory, terms.selection, terms.cdi)): WorkerValidatorSettings {
    const inv = terms.inventory;
    const pin = terms.driverVersion ?? builtin(WORKER_DEFAULTS.driver?.version, "driver.version");
    const pinned = pin === "preinstalled" ? undefined : pin;
    const driverVersion = pinned ?? inv.driverVersion;
    // The declared CUDA version belongs to the declared driver, not to a pin of another branch.
    const sameBranch = !pinned || !inv.driverVersion || pinned.split(".")[0] === inv.driverVersion.split(".")[0];
    const cdi = terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi");
    return {
        vendor: inv.vendor,
        gpus: inv.gpus.map((g) => ({ index: g.index, ...(g.uuid ? { uuid: g.uuid } : {}) })),
        selected: plan.selected.map((g) => g.index),
        ...(driverVersion ? { driverVersion } : {}),
        ...(inv.cudaVersion && sameBranch ? { cudaVersion: inv.cudaVersion } : {}),
        ...(inv.vendor !== "none" ? { toolkit: { package: TOOLKITS[inv.vendor].package, version: toolkitVersion(inv.vendor, terms.toolkitVersion) } } : {}),
        ...(inv.vendor !== "none" && cdi ? { cdiSpec: CDI_SPEC_PATHS[inv.vendor] } : {}),
        wrapper: WRAPPER_PATH,
        ...(terms.socket !== undefined ? { socket: terms.socket } : {}),
        env: plan.env,
        unsetEnv: plan.unsetEnv,
        deviceNodes: plan.deviceNodes,
        datasets: datasetsOf(terms.datasets),
    };
}

/** The Concourse worker in a user's terms: its name, the release, its TSA and tags; the rest has defaults. */
export interface ConcourseWorkerTerms {
    /** Worker name as `fly workers` shows it. */
    name: string;
    /** The Concourse release version. Example: "8.2.5". */
    version: string;
    /** The TSA's host name or address, as the worker reaches it. */
    tsaHost: string;
    /** The TSA's port. Default: WORKER_DEFAULTS.concourse.tsaPort. */
    tsaPort?: number;
    /** Register as a worker of this team only. Default: a worker of every team. */
    team?: string;
    /** The worker's tags, as pipelines select it with. Default: none. */
    tags?: string[];
    /** The worker's work dir on the host (deleted on destroy). Default: WORKER_DEFAULTS.concourse.workDir. */
    workDir?: string;
    /** MTU of the containers' network. Default: the host's outbound interface's (a host without a network needs it). */
    networkMtu?: number;
    /** What a `privileged: true` step gets: "ignore", "fuse-only" or "full" (root on the worker). Default: WORKER_DEFAULTS.concourse.privilegedMode. */
    privilegedMode?: PrivilegedMode;
    /** The worker runs in a user namespace (an unprivileged LXD container): the unit hides overlayfs's metacopy offer. Default: false. */
    inUserNamespace?: boolean;
    /**
     * Put the runc wrapper (RuncWrapper installs it) in place of Concourse's own runc: Concourse's
     * containerd creates containers with no runtime options, so this is how its tasks reach the
     * wrapper. Default: false.
     */
    wrapRunc?: boolean;
    /** With wrapRunc, a Concourse runc open to a known container breakout: "warn" or "refuse". Default: WORKER_DEFAULTS.wrapper.runcCves. */
    runcCves?: RuncCvePolicy;
    /** Check after the worker step that the web lists the worker as planned (and, with `task`, run a task there). Default: no check. */
    registration?: ConcourseWorkerSettings["registration"];
}

/** The worker's settings from a user's terms; `wrapperBinary` is the wrapper the runc swap checks for. */
export function planConcourseWorker(
    terms: ConcourseWorkerTerms & { binary: PlannedRelease; tsaPublicKey?: string; wrapperBinary: Artifact },
): ConcourseWorkerSettings {
    const { wrapRunc, runcCves, wrapperBinary, ...given } = terms;
    const concourse = WORKER_DEFAULTS.concourse;
    return {
        ...given,
        tsaPort: terms.tsaPort ?? builtin(concourse?.tsaPort, "concourse.tsaPort"),
        tags: terms.tags ?? [],
        workDir: terms.workDir ?? builtin(concourse?.workDir, "concourse.workDir"),
        privilegedMode: terms.privilegedMode ?? builtin(concourse?.privilegedMode, "concourse.privilegedMode"),
        inUserNamespace: terms.inUserNamespace ?? false,
        containerdConfig: renderConcourseContainerdConfig(),
        ...(wrapRunc
            ? {
                  wrapRunc: {
                      wrapper: WRAPPER_PATH,
                      sha256: wrapperBinary.sha256,
                      runcCves: runcCves ?? builtin(WORKER_DEFAULTS.wrapper?.runcCves, "wrapper.runcCves"),
                  },
              }
            : {}),
    };
}
