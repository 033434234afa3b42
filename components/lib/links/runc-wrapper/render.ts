/**
 * The runc wrapper's settings file and its host component, as pure functions. The
 * wrapper (wrapper/, a static binary: Go with a C front) reads only this root-owned file, at a path fixed
 * when it is built; the values come from the worker's GPU plan and the stack's datasets.
 */
import * as path from "path";
import { z } from "zod";
import { GpuAllocation, MAX_WAIT_SECONDS } from "../../gpu/allocation";
import { GPU_CONTROL_VARIABLES, WorkerGpuPlan } from "../../gpu/plan";
import { RuncCvePolicy, SPEC_FEATURE_NAMES, SpecFeature } from "../../gpu/spec-features";
import { combine, hostScriptFile, PACKAGE_ROOT } from "../../host/scripts";
import { wholeNumber } from "../../settings/value-patterns";
import { renderRuntimePackages } from "../../render/runtime-packages";
import { Artifact, HOST_ETC_DIR, HOST_LIB_DIR, HostFile, RenderedComponent, shellCommand } from "../../host/steps";

/** Where the wrapper binary is uploaded (and what containerd's BinaryName names). */
export const WRAPPER_PATH = `${HOST_LIB_DIR}/runc-wrapper`;
/** The host script that puts the wrapper in a runc's place and puts runc back. */
export const WRAPPER_INSTALLER = "install-runc-wrapper.sh";
/** Where the distribution's runc is kept once the wrapper takes its place; compiled into the wrapper (wrapper/front.c) as where calls other than create and run go. */
export const RUNC_REAL_PATH = `${HOST_LIB_DIR}/runc.real`;
/** The settings file; compiled into the wrapper (wrapper/front.c), so it cannot be moved at run time. */
export const WRAPPER_CONFIG_PATH = `${HOST_ETC_DIR}/runc-wrapper.json`;
/** The wrapper's log (the settings can name another; failures before they are read always go here). */
export const WRAPPER_LOG_PATH = "/var/log/gpu-workers/runc-wrapper.log";
/** What the wrapper learned about the real runtime (whether it has recursive read-only mounts); on a tmpfs, so a reboot asks again. */
export const WRAPPER_STATE_DIR = "/run/gpu-workers";
/** Where the wrapper records which container holds which GPU (wrapper/gpujobs.go); remove takes it back. */
export const GPU_JOBS_DIR = `${WRAPPER_STATE_DIR}/gpu-jobs`;
/** Set in the real runtime's environment; the wrapper refuses to run when it sees it. */
export const WRAPPER_MARKER_ENV = "GPU_WORKERS_WRAPPER_ACTIVE";
/** The binary `npm run build` makes (scripts/build-wrapper.sh). */
export const WRAPPER_BUILD_OUTPUT = path.join(PACKAGE_ROOT, "dist", "wrapper", "runc-wrapper");

const absolutePath = z.string().regex(/^\/[^\0]*$/, { error: "expected an absolute path" });
const variableName = z.string().regex(/^[^=\0]+$/, { error: "expected a variable name (no = or NUL)" });
const envValue = z.string().regex(/^[^\0]*$/, { error: "NUL is not allowed in a value" });
/** A host node made at another path in the container (under /dev), as the wrapper reads it (devices.go). */
const deviceLinkSchema = z.strictObject({
    path: z
        .string()
        .regex(/^\/dev\/[^\0]+$/, { error: "expected a path under /dev" })
        .refine((p) => path.posix.normalize(p) === p && !p.endsWith("/"), { error: "expected a path in normal form" }),
    node: absolutePath.refine((p) => path.posix.normalize(p) === p, { error: "expected a path in normal form" }),
});
const gpuIndex = z.string().regex(/^[0-9]{1,8}$/, { error: "expected a GPU index" });

/** A unit as the wrapper hands it out: a GPU (`1`) or one MIG instance of it (`1:0`). */
const unitSchema = z
    .strictObject({
        id: z.string().regex(/^[0-9]{1,8}(:[0-9]{1,8})?$/, { error: "expected a unit id: a GPU index, or GPU:MIG-instance" }),
        gpu: gpuIndex,
        // Joined with , in the visible variable, so a value may hold none; "" where no variable names units.
        visible: z.string().regex(/^[^,\0]*$/, { error: "expected a device name without , or NUL" }),
        deviceNodes: z.array(absolutePath),
        deviceLinks: z.array(deviceLinkSchema).optional(),
        gpuNodes: z.array(absolutePath).min(1, { error: "a unit names its GPU's nodes" }),
        env: z.record(variableName, envValue).optional(),
        mounts: z.array(z.strictObject({ source: absolutePath, destination: absolutePath })).optional(),
    })
    .refine((u) => u.id.split(":")[0] === u.gpu, { error: "a unit's id starts with its GPU's index", path: ["id"] });

/** The allocation block (docs/gpu-allocation.md): absent, every container gets every selected GPU. */
const allocationSchema = z
    .strictObject({
        mode: z.enum(["exclusive", "timeSlice", "mps"]),
        perTask: wholeNumber(0),
        replicas: wholeNumber(1),
        waitSeconds: wholeNumber(0, MAX_WAIT_SECONDS),
        // "": Intel's, whose containers see the GPUs whose nodes they have.
        visibleEnv: z.enum(["NVIDIA_VISIBLE_DEVICES", "AMD_VISIBLE_DEVICES", ""]),
        holderEnv: z.partialRecord(z.enum(GPU_CONTROL_VARIABLES), envValue),
        holderDeviceNodes: z.array(absolutePath),
        units: z.array(unitSchema).min(1, { error: "allocation needs at least one unit" }),
        healthFile: absolutePath.optional(),
    })
    .superRefine((a, ctx) => {
        if (a.mode === "exclusive" && a.replicas !== 1)
            ctx.addIssue({ code: "custom", path: ["replicas"], message: "exclusive holds each unit once (replicas 1)" });
        if (a.perTask > a.units.length) ctx.addIssue({ code: "custom", path: ["perTask"], message: `more than the ${a.units.length} units` });
        if (a.visibleEnv in a.holderEnv) ctx.addIssue({ code: "custom", path: ["holderEnv"], message: `${a.visibleEnv} is set from the units held` });
        if (a.mode === "mps" && a.perTask > 1) ctx.addIssue({ code: "custom", path: ["perTask"], message: "a container holds one unit at most in mps" });
        const seen = new Set<string>();
        a.units.forEach((u, i) => {
            if ((u.visible === "") !== (a.visibleEnv === ""))
                ctx.addIssue({ code: "custom", path: ["units", i, "visible"], message: "empty exactly when visibleEnv is (no variable names the units)" });
            if (seen.has(u.id)) ctx.addIssue({ code: "custom", path: ["units", i, "id"], message: `duplicate unit ${u.id}` });
            seen.add(u.id);
            const gpuVariable = Object.keys(u.env ?? {}).find((name) => name === a.visibleEnv || name in a.holderEnv);
            if (gpuVariable) ctx.addIssue({ code: "custom", path: ["units", i, "env"], message: `${gpuVariable} is the holders' own` });
        });
    });

/** The settings file's shape, exactly as the wrapper decodes it (unknown keys are refused there too). */
export const wrapperConfigSchema = z.strictObject({
    realRuntime: absolutePath,
    datasetRoot: absolutePath,
    writableSuffixes: z.array(z.string().regex(/^[^/\0]+$/, { error: "expected a folder-name suffix without /" })),
    env: z.record(variableName, envValue),
    unsetEnv: z.array(variableName),
    deviceNodes: z.array(absolutePath),
    deviceLinks: z.array(deviceLinkSchema).optional(),
    gpuNodes: z.array(absolutePath),
    allowPrivileged: z.boolean(),
    allowSpec: z.array(z.enum(SPEC_FEATURE_NAMES)),
    log: absolutePath,
    gpuJobs: z
        .strictObject({
            gpus: z.array(gpuIndex).min(1),
            mappingDir: z.union([z.literal(""), absolutePath]),
        })
        .optional(),
    allocation: allocationSchema.optional(),
});
export type WrapperConfig = z.infer<typeof wrapperConfigSchema>;
export type WrapperAllocation = z.infer<typeof allocationSchema>;

export interface WrapperConfigInput {
    /** The worker's GPU plan: the wrapper applies its env, unsetEnv and deviceNodes. */
    plan: Pick<WorkerGpuPlan, "env" | "unsetEnv" | "deviceNodes"> & Partial<Pick<WorkerGpuPlan, "gpuNodes" | "deviceLinks">>;
    /** root is mounted read-only at its own path; each direct subfolder (a real folder, not a link) whose name ends with a suffix is mounted read-write on top. Links resolve inside the container. */
    datasets: {
        /** The dataset root on the host, mounted at the same path in every container. */
        root: string;
        /** Folder-name endings that mount read-write. */
        writableSuffixes: string[];
    };
    /**
     * The runtime the wrapper execs for `create` and `run`: the real runc, or
     * nvidia-container-runtime (whose runtimes list names the real runc). Every other call
     * goes straight to the runc set aside at RUNC_REAL_PATH (fixed when the wrapper is
     * built), so this runtime must leave those calls to that runc, as both of these do.
     */
    realRuntime: string;
    /**
     * Let a container keep what could undo the dataset modes or reach the host's devices:
     * CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH, CAP_SYS_MODULE, CAP_SYS_RAWIO, or a device rule for
     * all devices or block devices (what Concourse gives a privileged step in its full and
     * fuse-only modes). Default: false, the wrapper refuses to create such a container.
     */
    allowPrivileged?: boolean;
    /** Spec features a container may carry that the wrapper refuses otherwise (SPEC_FEATURES). Default: none. */
    allowSpec?: SpecFeature[];
    /** One-line failure reasons and skipped datasets go here. */
    logPath?: string;
    /**
     * Record, at create, which container holds which GPU (the metrics' build labels), and
     * clear it at delete; with mappingDir, also dcgm-exporter's job-mapping files there.
     * Absent: nothing recorded.
     */
    gpuJobs?: GpuJobRecords;
    /**
     * GPUs handed out per task (the GPU plan's allocation), and the health watcher's gpus.tsv
     * where one runs (a GPU it calls sick is handed to no new container). With it, `plan` is what
     * a container holding no unit gets (no GPU variable, no GPU node; plan.gpuNodes every selected
     * GPU's). Absent: every container gets `plan`'s GPUs.
     */
    allocation?: WrapperAllocationInput;
}

/** The GPU plan's allocation, and where the health watcher says which GPUs are sick. */
export interface WrapperAllocationInput extends GpuAllocation {
    /** The health watcher's gpus.tsv (HEALTH_GPUS_FILE) where one runs on the host: a GPU whose row says unhealthy leaves the pool. */
    healthFile?: string;
}

/** The GPUs every container gets, by index, and dcgm-exporter's job-mapping folder (optional). */
export interface GpuJobRecords {
    gpus: number[];
    mappingDir?: string;
}

function sorted<T>(record: Record<string, T>): Record<string, T> {
    return Object.fromEntries(
        Object.keys(record)
            .sort()
            .map((k) => [k, record[k]]),
    );
}

/** The settings file as JSON: fixed key order, sorted env, trailing newline. */
export function renderWrapperConfig(input: WrapperConfigInput): string {
    const config: WrapperConfig = {
        realRuntime: input.realRuntime,
        datasetRoot: input.datasets.root,
        writableSuffixes: [...input.datasets.writableSuffixes],
        env: sorted(input.plan.env),
        unsetEnv: [...input.plan.unsetEnv],
        deviceNodes: [...input.plan.deviceNodes],
        // Only where there are links (Intel), so other settings stay as they were.
        ...(input.plan.deviceLinks?.length ? { deviceLinks: input.plan.deviceLinks.map(linkOf) } : {}),
        gpuNodes: [...(input.plan.gpuNodes ?? [])],
        allowPrivileged: input.allowPrivileged ?? false,
        allowSpec: [...(input.allowSpec ?? [])],
        log: input.logPath ?? WRAPPER_LOG_PATH,
        // Only where asked for, so the settings of a worker without metrics stay as they were.
        ...(input.gpuJobs ? { gpuJobs: { gpus: input.gpuJobs.gpus.map(String), mappingDir: input.gpuJobs.mappingDir ?? "" } } : {}),
        // Only where GPUs are handed out per task, so mode all's settings stay as they were.
        ...(input.allocation ? { allocation: allocationBlock(input.allocation) } : {}),
    };
    const checked = wrapperConfigSchema.safeParse(config);
    if (!checked.success) {
        const problems = checked.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
        throw new Error(`runc wrapper settings: ${problems.join("; ")}`);
    }
    if (config.unsetEnv.some((name) => name in config.env)) {
        throw new Error("runc wrapper settings: a variable is both set and unset: " + config.unsetEnv.filter((n) => n in config.env).join(", "));
    }
    if (config.allocation) allocationAgrees(config, config.allocation);
    return JSON.stringify(config, null, 2) + "\n";
}

/** A link in the contract's key order. */
function linkOf(l: { path: string; node: string }): { path: string; node: string } {
    return { path: l.path, node: l.node };
}

/** The block in the contract's key order (docs/gpu-allocation.md), holderEnv sorted. */
function allocationBlock(a: WrapperAllocationInput): WrapperAllocation {
    return {
        mode: a.mode,
        perTask: a.perTask,
        replicas: a.replicas,
        waitSeconds: a.waitSeconds,
        visibleEnv: a.visibleEnv,
        holderEnv: sorted(a.holderEnv),
        holderDeviceNodes: [...a.holderDeviceNodes],
        units: a.units.map((u) => ({
            id: u.id,
            gpu: u.gpu,
            visible: u.visible,
            deviceNodes: [...u.deviceNodes],
            ...(u.deviceLinks?.length ? { deviceLinks: u.deviceLinks.map(linkOf) } : {}),
            gpuNodes: [...u.gpuNodes],
            ...(u.env ? { env: sorted(u.env) } : {}),
            ...(u.mounts ? { mounts: u.mounts.map((m) => ({ source: m.source, destination: m.destination })) } : {}),
        })),
        ...(a.healthFile !== undefined ? { healthFile: a.healthFile } : {}),
    };
}

/**
 * With allocation, a container holding no unit must get no GPU: every GPU variable unset, no
 * unit's node in the nodes every container gets, and every unit's GPU nodes among those refused
 * to a spec that does not hold them.
 */
function allocationAgrees(config: WrapperConfig, a: WrapperAllocation): void {
    const problems: string[] = [];
    const setGpuVariables = GPU_CONTROL_VARIABLES.filter((name) => name in config.env || !config.unsetEnv.includes(name));
    if (setGpuVariables.length > 0) problems.push(`env: GPU variables must be unset for a container holding no unit (${setGpuVariables.join(", ")})`);
    const unitNodes = new Set([...a.holderDeviceNodes, ...a.units.flatMap((u) => u.deviceNodes)]);
    const shared = [...config.deviceNodes, ...(config.deviceLinks ?? []).map((l) => l.node)].filter((n) => unitNodes.has(n));
    if (shared.length > 0) problems.push(`deviceNodes: a unit's node is given to every container (${shared.join(", ")})`);
    const unguarded = [...new Set(a.units.flatMap((u) => u.gpuNodes))].filter((n) => !config.gpuNodes.includes(n));
    if (unguarded.length > 0) problems.push(`gpuNodes: a unit's GPU node is not among them (${unguarded.join(", ")})`);
    if (problems.length > 0) throw new Error(`runc wrapper settings with allocation: ${problems.join("; ")}`);
}

export interface RuncWrapperSettings extends WrapperConfigInput {
    /** What the install does over a runc open to a known container breakout: "warn" or "refuse". */
    runcCves: RuncCvePolicy;
    /** The runc that callers find (the one moved aside); default: `command -v runc` on the host. */
    runcPath?: string;
    /** The built wrapper to upload (WRAPPER_BUILD_OUTPUT, hashed where the build is known); the install step carries its sha256, so a new build re-runs the step. */
    wrapperBinary: Artifact;
}

/**
 * The RuncWrapper component: settings file, wrapper binary, install script, and the step
 * that puts the wrapper in runc's place (the real runc kept at RUNC_REAL_PATH) and, on
 * delete, puts runc back byte for byte.
 */
export function renderRuncWrapperComponent(s: RuncWrapperSettings): RenderedComponent {
    const config: HostFile = { path: WRAPPER_CONFIG_PATH, mode: "0644", content: renderWrapperConfig(s) };
    const wrapper: HostFile = { path: WRAPPER_PATH, mode: "0755", content: "", artifact: s.wrapperBinary };
    const script = hostScriptFile(WRAPPER_INSTALLER);
    const runc = s.runcPath ? ["--runc", s.runcPath] : [];
    // The host's own runc, from the distribution's packages where it has none (a runc named by path is the caller's).
    const packages = s.runcPath ? { files: [], steps: [] } : renderRuntimePackages({ runc: "runc" });
    return combine(packages, {
        files: [config, wrapper, script],
        steps: [
            {
                name: "runc-wrapper",
                create: shellCommand([
                    script.path,
                    "install",
                    ...runc,
                    "--wrapper",
                    WRAPPER_PATH,
                    "--sha256",
                    s.wrapperBinary.sha256,
                    "--aside",
                    RUNC_REAL_PATH,
                    "--runc-cves",
                    s.runcCves,
                ]),
                remove: shellCommand([script.path, "remove", ...runc, "--aside", RUNC_REAL_PATH, "--jobs", GPU_JOBS_DIR]),
                check: shellCommand([script.path, "check", "--aside", RUNC_REAL_PATH]),
                dependsOn: [script.path, WRAPPER_PATH, WRAPPER_CONFIG_PATH, ...packages.steps.map((step) => step.name)],
            },
        ],
    });
}
