/**
 * The MPS control daemons' files and step, as pure functions: their config (the replicas, the
 * thread share, one line per GPU), the systemd template unit (one instance per GPU), the script
 * that prepares, starts, limits, stops and puts back each GPU's daemon, and the step that
 * installs and starts the instances (host/gpu-mps.sh). Pure.
 */
import { mpsLogDir, mpsPipeDir, MPS_LOG_ROOT, MPS_PIPE_ENV, MPS_RUN_ROOT, MPS_UNIT_TEMPLATE } from "../../gpu/mps";
import { combine, hostScriptPath, scriptStep } from "../../host/scripts";
import { HOST_ETC_DIR, RenderedComponent, shellCommand } from "../../host/steps";

export interface GpuMpsSettings {
    /** The GPUs that get a daemon of their own, by index (nvidia-smi's, in PCI bus order). */
    gpus: number[];
    /** Clients of one GPU at once: each gets total/replicas of its memory pinned, and activeThreadPercentage of its threads. */
    replicas: number;
    /** Each client's share of the GPU's threads, in percent: floor(100 / replicas). */
    activeThreadPercentage: number;
    /** The Concourse worker's unit, which the daemons start before; absent: none. */
    workerUnit?: string;
}

export const MPS_SCRIPT = "gpu-mps.sh";
export const MPS_PATHS = {
    config: `${HOST_ETC_DIR}/gpu-mps.conf`,
    unit: `/etc/systemd/system/${MPS_UNIT_TEMPLATE}`,
} as const;

/** The daemons' config: one `key value` line each, read by host/gpu-mps.sh (never sourced). */
export function renderMpsConfig(s: GpuMpsSettings): string {
    return [
        "# Rendered by gpu-workers: the MPS control daemons' settings (host/gpu-mps.sh reads them).",
        "# Clients of one GPU at once: each may pin total/replicas of its memory.",
        `replicas ${s.replicas}`,
        "# Each client's share of the GPU's threads, in percent.",
        `active-thread-percentage ${s.activeThreadPercentage}`,
        `# gpu INDEX: a daemon of its own each (${MPS_UNIT_TEMPLATE.replace("@", "@INDEX")})`,
        ...s.gpus.map((g) => `gpu ${g}`),
        "",
    ].join("\n");
}

/** The words of the script's run for the instance's GPU (%i): the unit's Exec lines. */
function unitRun(action: string): string {
    return shellCommand([
        hostScriptPath(MPS_SCRIPT),
        action,
        "--gpu",
        "%i",
        "--config",
        MPS_PATHS.config,
        "--run-dir",
        MPS_RUN_ROOT,
        "--log-dir",
        MPS_LOG_ROOT,
    ]);
}

/**
 * The template unit: GPU N's daemon (instance N) sees GPU N alone, as CUDA's device 0, and its
 * own tmpfs as /dev/shm. The preparation mounts that tmpfs on the host (where the runc wrapper
 * binds it into a holder), makes the folders and sets the GPU's compute mode; the script's start
 * binds the tmpfs on /dev/shm in a mount namespace of the daemon's own. Not systemd's BindPaths=:
 * systemd (252, Debian 12's) sets up a unit's one mount namespace before its first command, an
 * ExecStartPre=+ one too, so the tmpfs would have to be there before the unit starts, and a
 * mount made by a command in it stays there, unseen by the host.
 */
export function renderMpsUnit(s: GpuMpsSettings): string {
    return [
        "# Rendered by gpu-workers.",
        "[Unit]",
        "Description=MPS control daemon of GPU %i (gpu-workers)",
        ...(s.workerUnit ? [`Before=${s.workerUnit}`] : []),
        "",
        "[Service]",
        "Type=forking",
        "Environment=CUDA_VISIBLE_DEVICES=%i",
        "Environment=CUDA_DEVICE_ORDER=PCI_BUS_ID",
        `Environment=${MPS_PIPE_ENV}=${mpsPipeDir("%i")}`,
        `Environment=CUDA_MPS_LOG_DIRECTORY=${mpsLogDir("%i")}`,
        `ExecStartPre=${unitRun("prepare")}`,
        `ExecStart=${unitRun("start")}`,
        `ExecStartPost=${unitRun("configure")}`,
        `ExecStop=${unitRun("stop")}`,
        `ExecStopPost=${unitRun("restore")}`,
        "Restart=on-failure",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

export function renderGpuMps(s: GpuMpsSettings): RenderedComponent {
    // The script comes with its step (scriptStep places it); its unit runs it too, so a change restarts the daemons.
    const script = hostScriptPath(MPS_SCRIPT);
    const files = [
        { path: MPS_PATHS.config, mode: "0644", content: renderMpsConfig(s) },
        { path: MPS_PATHS.unit, mode: "0644", content: renderMpsUnit(s) },
    ];
    const where = ["--unit", MPS_UNIT_TEMPLATE, "--run-dir", MPS_RUN_ROOT, "--log-dir", MPS_LOG_ROOT];
    const args = [...where, "--config", MPS_PATHS.config, "--watch", script, "--watch", MPS_PATHS.unit];
    const installed = scriptStep({
        name: "gpu-mps",
        script: MPS_SCRIPT,
        args,
        removeArgs: where,
        dependsOn: files.map((f) => f.path),
    });
    // A refresh notices a daemon that stopped, one started from other files, or one that does not answer.
    const steps = installed.steps.map((step) => ({ ...step, check: shellCommand([hostScriptPath(MPS_SCRIPT), "check", ...args]) }));
    return combine({ files, steps: [] }, { ...installed, steps });
}
