/**
 * The GPU health watcher's files and step, as pure functions: its config (the worker's GPUs,
 * the policy, and the Xid table's meanings), its systemd unit, the watcher script, and the step
 * that installs and starts it (host/gpu-health.sh). Pure.
 */
import { XID_TABLE } from "../../gpu/xids";
import { combine, hostScriptFile, hostScriptPath, scriptStep } from "../../host/scripts";
import { HOST_ETC_DIR, RenderedComponent, shellCommand } from "../../host/steps";

export interface GpuHealthSettings {
    /** The GPUs' vendor: whose kernel lines and tool the watcher reads. */
    vendor: "nvidia" | "amd" | "intel";
    /** The selected GPUs, with their PCI bus id where the inventory declares it. */
    gpus: {
        index: number;
        /** Its PCI bus id, as the inventory declares it. */
        busId?: string;
        /** AMD, where no bus id is declared: its DRM render node (renderD128), whose sysfs device names the bus id. */
        renderNode?: string;
        /** Intel: the kernel driver bound to it (i915 or xe), whose hang and reset lines count for it. */
        driver?: "i915" | "xe";
    }[];
    /** The board has NVSwitches: a fatal SXid (a switch's) counts against every watched GPU. */
    nvswitch: boolean;
    /** GPUs are handed out per task: a fatal event takes one GPU out of the pool, and the worker lands only when none is left. */
    pool: boolean;
    /** The Concourse worker's unit it lands and starts again; absent: it only reports. */
    workerUnit?: string;
    /** What a fatal event does: land (SIGUSR1), retire (SIGUSR2) or none. */
    onFatal: "land" | "retire" | "none";
    /** The Xids that are not fatal. */
    ignoredXids: number[];
    /** How often the vendor's tool is polled, in seconds. */
    pollSeconds: number;
    /** How long every GPU must poll healthy after the last fatal event before the worker starts again, in seconds. */
    settleSeconds: number;
    /** How long a GPU may hold processes of no running container, in seconds. */
    dirtyGraceSeconds: number;
}

export const HEALTH_WATCHER = "gpu-health-watch.sh";
export const HEALTH_INSTALLER = "gpu-health.sh";
export const HEALTH_UNIT = "gpu-workers-health.service";
export const HEALTH_PATHS = {
    config: `${HOST_ETC_DIR}/gpu-health.conf`,
    unit: `/etc/systemd/system/${HEALTH_UNIT}`,
    /** The status the watcher keeps (gpus.tsv and status): what the metrics read. */
    stateDir: "/run/gpu-workers/health",
} as const;
/** The watcher's row per GPU (index, bus id, healthy 1|0, ...; tab-separated): what the metrics and the runc wrapper's allocation read. */
export const HEALTH_GPUS_FILE = `${HEALTH_PATHS.stateDir}/gpus.tsv`;

/** A normalised PCI address: domain of 4 hex digits, lower case (0000:3b:00.0). */
export function normalBusId(busId: string): string {
    const m = /^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/.exec(busId);
    if (!m) throw new Error(`gpu health: ${JSON.stringify(busId)} is not a PCI bus id such as 0000:3b:00.0`);
    return `${m[1].slice(-4)}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

/** The watcher's config: one `key value` line each, read by host/gpu-health-watch.sh (never sourced). */
export function renderHealthConfig(s: GpuHealthSettings): string {
    return [
        "# Rendered by gpu-workers: the GPU health watcher's settings (host/gpu-health-watch.sh reads them).",
        `vendor ${s.vendor}`,
        `on-fatal ${s.onFatal}`,
        ...(s.workerUnit ? [`worker-unit ${s.workerUnit}`] : []),
        `poll-seconds ${s.pollSeconds}`,
        `settle-seconds ${s.settleSeconds}`,
        `dirty-grace-seconds ${s.dirtyGraceSeconds}`,
        `nvswitch ${s.nvswitch ? "yes" : "no"}`,
        ...(s.pool ? ["# GPUs are handed out per task: a sick GPU leaves the pool, and the worker lands when none is left.", "pool yes"] : []),
        "# gpu INDEX BUS-ID, or - where the inventory declares none: the watcher asks nvidia-smi, or the AMD render node's sysfs device",
        ...(s.vendor === "intel" ? ["# Intel: gpu INDEX BUS-ID DRIVER (i915 or xe): only that driver's lines count for the GPU"] : []),
        ...s.gpus.map(
            (g) => `gpu ${g.index} ${g.busId ? normalBusId(g.busId) : "-"}${g.renderNode ? ` ${g.renderNode}` : ""}${g.driver ? ` ${g.driver}` : ""}`,
        ),
        "# Xids that do not land the worker; every other Xid does.",
        `ignore-xids ${s.ignoredXids.join(" ")}`,
        "# What each known Xid means (docs/gpu-health.md has the table).",
        ...XID_TABLE.map((r) => `xid ${r.code} ${r.meaning}`),
        "",
    ].join("\n");
}

/** The watcher's unit: restarted whenever it stops, and never stopping the worker itself. */
export function renderHealthUnit(s: GpuHealthSettings): string {
    return [
        "# Rendered by gpu-workers.",
        "[Unit]",
        "Description=GPU health watcher (gpu-workers)",
        ...(s.workerUnit ? [`After=${s.workerUnit}`] : []),
        "",
        "[Service]",
        "Type=simple",
        `ExecStart=${hostScriptPath(HEALTH_WATCHER)} --config ${HEALTH_PATHS.config} --state-dir ${HEALTH_PATHS.stateDir}`,
        "Restart=always",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

export function renderGpuHealth(s: GpuHealthSettings): RenderedComponent {
    const watcher = hostScriptFile(HEALTH_WATCHER);
    const files = [
        watcher,
        { path: HEALTH_PATHS.config, mode: "0644", content: renderHealthConfig(s) },
        { path: HEALTH_PATHS.unit, mode: "0644", content: renderHealthUnit(s) },
    ];
    const watched = [watcher.path, HEALTH_PATHS.config, HEALTH_PATHS.unit];
    const args = ["--unit", HEALTH_UNIT, "--state-dir", HEALTH_PATHS.stateDir, ...watched.flatMap((w) => ["--watch", w])];
    const installed = scriptStep({
        name: "gpu-health",
        script: HEALTH_INSTALLER,
        args,
        removeArgs: ["--unit", HEALTH_UNIT, "--state-dir", HEALTH_PATHS.stateDir],
        dependsOn: files.map((f) => f.path),
    });
    // A refresh notices a watcher that stopped, or one started from other files.
    const steps = installed.steps.map((step) => ({ ...step, check: shellCommand([hostScriptPath(HEALTH_INSTALLER), "check", ...args]) }));
    return combine({ files, steps: [] }, { ...installed, steps });
}
