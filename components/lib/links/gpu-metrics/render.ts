/**
 * GPU metrics for the Prometheus node exporter, as pure functions: Debian's
 * prometheus-node-exporter from the distribution's packages, and a systemd timer that runs
 * host/gpu-metrics.sh, which writes each selected GPU's metrics, labelled with the container that
 * holds it (the runc wrapper's records), into the exporter's textfile folder.
 */
import { combine, hostScriptFile, hostScriptPath, OWNERSHIP_SCRIPT } from "../../host/scripts";
import { RenderedComponent, shellCommand } from "../../host/steps";
import { renderRuntimePackages } from "../../render/runtime-packages";
import { GPU_JOBS_DIR, WRAPPER_STATE_DIR } from "../runc-wrapper/render";

export interface GpuMetricsSettings {
    /** The vendor whose tool answers for the GPUs (AMD: health metrics only, docs/gpu-metrics.md). */
    vendor: "nvidia" | "amd" | "intel";
    /** The worker's GPUs, by index: only these are reported. */
    gpus: number[];
    /** Intel only: each GPU's PCI address, in the order of `gpus` (xpu-smi's device ids are its own; the address ties them). */
    busIds?: string[];
    /** The node exporter's --collector.textfile.directory. */
    textfileDir: string;
    /** How often the metrics file is written, in seconds. */
    intervalSeconds: number;
}

export const GPU_METRICS_SCRIPT = "gpu-metrics.sh";
/** The unit pair's name: `<name>.service` runs the script once, `<name>.timer` every interval. */
export const GPU_METRICS_UNIT = "gpu-workers-metrics";
export { GPU_JOBS_DIR };
/** The health watcher's state: gpus.tsv and status (docs/gpu-metrics.md has the contract). */
export const GPU_HEALTH_DIR = `${WRAPPER_STATE_DIR}/health`;
/** Debian's prometheus-node-exporter reads this folder unless its ARGS name another (its --help says so). */
export const DEBIAN_TEXTFILE_DIR = "/var/lib/prometheus/node-exporter";
/** Seconds between two writes: Prometheus' usual scrape interval. */
export const METRICS_INTERVAL_SECONDS = 15;
/** Debian's package and the command it brings. */
export const NODE_EXPORTER_PACKAGE = "prometheus-node-exporter";

/** A PCI address as xpu-smi prints it: domain:bus:device.function, lower case. */
const PCI_ADDRESS = /^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

/** The collect command line, every value in it. */
export function collectArgs(s: GpuMetricsSettings): string[] {
    return [
        "collect",
        "--vendor",
        s.vendor,
        "--gpus",
        s.gpus.join(","),
        ...(s.busIds ? ["--bus-ids", s.busIds.join(",")] : []),
        "--textfile-dir",
        s.textfileDir,
        "--jobs-dir",
        GPU_JOBS_DIR,
        "--health-dir",
        GPU_HEALTH_DIR,
    ];
}

/** The one-shot service the timer starts. */
export function renderMetricsService(s: GpuMetricsSettings, scriptPath: string): string {
    return [
        "[Unit]",
        "Description=gpu-workers: GPU metrics for the node exporter's textfile collector",
        "Documentation=https://github.com/prometheus/node_exporter#textfile-collector",
        "",
        "[Service]",
        "Type=oneshot",
        `ExecStart=${shellCommand([scriptPath, ...collectArgs(s)])}`,
        "",
    ].join("\n");
}

/** The timer: first soon after boot, then every interval. */
export function renderMetricsTimer(s: GpuMetricsSettings): string {
    return [
        "[Unit]",
        "Description=gpu-workers: GPU metrics every " + s.intervalSeconds + " s",
        "",
        "[Timer]",
        "OnBootSec=" + s.intervalSeconds,
        "OnUnitActiveSec=" + s.intervalSeconds,
        "AccuracySec=1",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ].join("\n");
}

export function renderGpuMetrics(s: GpuMetricsSettings): RenderedComponent {
    if (s.gpus.length === 0) throw new Error("GPU metrics: the worker has no GPUs to report");
    if (s.vendor === "intel" && (s.busIds?.length !== s.gpus.length || s.busIds.some((b) => !PCI_ADDRESS.test(b))))
        throw new Error(
            `GPU metrics: each Intel GPU needs its PCI address, such as 0000:4d:00.0 (gpus ${s.gpus.join(",")}, busIds ${(s.busIds ?? []).join(",") || "none"})`,
        );
    const script = hostScriptFile(GPU_METRICS_SCRIPT);
    const service = { path: `/etc/systemd/system/${GPU_METRICS_UNIT}.service`, mode: "0644", content: renderMetricsService(s, script.path) };
    const timer = { path: `/etc/systemd/system/${GPU_METRICS_UNIT}.timer`, mode: "0644", content: renderMetricsTimer(s) };
    // Installed where the host lacks it; remove purges only what this step installed.
    const packages = renderRuntimePackages({ [NODE_EXPORTER_PACKAGE]: NODE_EXPORTER_PACKAGE });
    const args = ["--unit", GPU_METRICS_UNIT, "--textfile-dir", s.textfileDir];
    return combine(packages, {
        files: [script, service, timer],
        steps: [
            {
                name: "gpu-metrics",
                create: shellCommand([script.path, "ensure", ...args]),
                remove: shellCommand([script.path, "remove", ...args]),
                check: shellCommand([script.path, "check", ...args]),
                // ownership.sh (placed by the packages step) keeps the exporter's service state for remove.
                dependsOn: [script.path, hostScriptPath(OWNERSHIP_SCRIPT), service.path, timer.path, ...packages.steps.map((step) => step.name)],
            },
        ],
    });
}
