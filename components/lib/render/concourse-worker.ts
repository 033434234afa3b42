import { combine, hostScriptFile, scriptStep } from "../host/scripts";
import { WRAPPER_INSTALLER } from "./runc-wrapper";
import { HOST_LIB_DIR, HostFile, RenderedComponent } from "../host/steps";

export interface ConcourseWorkerSettings {
    /** Worker name as `fly workers` shows it. */
    name: string;
    version: string;
    tsaHost: string;
    tsaPort: number;
    tsaPublicKey: string;
    team?: string;
    /** Every tag, computed ones first (from the worker's GPU plan). */
    tags: string[];
    workDir: string;
    /** Where the release tarball comes from. */
    binary: { url: string; sha256: string } | { path: string };
    /** Config of the containerd that Concourse starts itself. */
    containerdConfig: string;
    /**
     * Put the runc wrapper (already on the host at `wrapper`, with this sha256) in place of
     * Concourse's own runc: its containerd creates containers with no runtime options, so no
     * containerd setting can reach them. The installer script comes with this component.
     */
    wrapRunc?: { wrapper: string; sha256: string };
}

export const CONCOURSE_UNIT = "concourse-worker.service";
export const CONCOURSE_PATHS = {
    unit: `/etc/systemd/system/${CONCOURSE_UNIT}`,
    env: "/etc/concourse/worker.env",
    tsaPublicKey: "/etc/concourse/tsa_host_key.pub",
    workerKey: "/etc/concourse/worker_key",
    containerdConfig: "/etc/concourse/containerd.toml",
    archive: `${HOST_LIB_DIR}/concourse.tgz`,
    binary: "/usr/local/concourse/bin/concourse",
} as const;

/** The worker's environment file: everything but the tags, which go on the command line. */
export function renderWorkerEnv(s: ConcourseWorkerSettings): string {
    const env: [string, string][] = [
        ["CONCOURSE_NAME", s.name],
        ["CONCOURSE_WORK_DIR", s.workDir],
        ["CONCOURSE_TSA_HOST", `${s.tsaHost}:${s.tsaPort}`],
        ["CONCOURSE_TSA_PUBLIC_KEY", CONCOURSE_PATHS.tsaPublicKey],
        ["CONCOURSE_TSA_WORKER_PRIVATE_KEY", CONCOURSE_PATHS.workerKey],
        ["CONCOURSE_RUNTIME", "containerd"],
        ["CONCOURSE_CONTAINERD_CONFIG", CONCOURSE_PATHS.containerdConfig],
    ];
    if (s.team) env.push(["CONCOURSE_TEAM", s.team]);
    return "# Rendered by gpu-workers.\n" + env.map(([k, v]) => `${k}=${v}`).join("\n") + "\n";
}

/**
 * The systemd unit. Tags are passed as repeated --tag flags rather than CONCOURSE_TAG:
 * the variable is split on commas, which would cut `gpu-devices=0,1` in two.
 */
export function renderWorkerUnit(s: ConcourseWorkerSettings): string {
    const tagFlags = s.tags.map((t) => ` \\\n  --tag=${t}`).join("");
    return [
        "# Rendered by gpu-workers.",
        "[Unit]",
        "Description=Concourse CI worker (gpu-workers)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        `EnvironmentFile=${CONCOURSE_PATHS.env}`,
        `ExecStart=${CONCOURSE_PATHS.binary} worker${tagFlags}`,
        "Restart=on-failure",
        "RestartSec=5",
        "Delegate=yes",
        "LimitNOFILE=1048576",
        "LimitNPROC=infinity",
        "TasksMax=infinity",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

export function renderConcourseWorker(s: ConcourseWorkerSettings): RenderedComponent {
    const files: HostFile[] = [
        { path: CONCOURSE_PATHS.env, mode: "0644", content: renderWorkerEnv(s) },
        { path: CONCOURSE_PATHS.tsaPublicKey, mode: "0644", content: s.tsaPublicKey.trim() + "\n" },
        { path: CONCOURSE_PATHS.workerKey, mode: "0600", content: "", secret: true },
        { path: CONCOURSE_PATHS.containerdConfig, mode: "0644", content: s.containerdConfig },
        { path: CONCOURSE_PATHS.unit, mode: "0644", content: renderWorkerUnit(s) },
    ];
    const source = "url" in s.binary
        ? ["--url", s.binary.url, "--sha256", s.binary.sha256]
        : ["--archive", CONCOURSE_PATHS.archive];
    if ("path" in s.binary) files.push({ path: CONCOURSE_PATHS.archive, mode: "0644", content: "", localPath: s.binary.path });
    const installer = s.wrapRunc ? hostScriptFile(WRAPPER_INSTALLER) : undefined;
    if (installer) files.push(installer);
    const watched = [CONCOURSE_PATHS.unit, CONCOURSE_PATHS.env, CONCOURSE_PATHS.tsaPublicKey, CONCOURSE_PATHS.workerKey, CONCOURSE_PATHS.containerdConfig];
    return combine(
        { files, steps: [] },
        scriptStep({
            name: "concourse-worker",
            script: "concourse-worker.sh",
            args: [
                "--version", s.version, ...source, "--unit", CONCOURSE_UNIT, ...watched.flatMap((w) => ["--watch", w]),
                ...(s.wrapRunc && installer ? ["--wrap-runc", installer.path, "--wrapper", s.wrapRunc.wrapper, "--wrapper-sha256", s.wrapRunc.sha256] : []),
            ],
            removeArgs: ["--unit", CONCOURSE_UNIT, ...(installer ? ["--wrap-runc", installer.path] : [])],
            dependsOn: files.map((f) => f.path),
        }),
    );
}
