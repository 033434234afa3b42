/**
 * The Concourse worker's files and step, as pure functions: its env file, TSA keys, the config
 * of the containerd Concourse starts itself, and the systemd unit with the tags.
 */
import type { RuncCvePolicy } from "../../gpu/spec-features";
import { combine, hostScriptFile, scriptStep } from "../../host/scripts";
import { HOST_LIB_DIR, HostFile, ProgramCheck, RenderedComponent } from "../../host/steps";
import { concourseReleaseArgs, concourseReleaseFiles, PlannedRelease } from "../../concourse/release";
import { renderEnvFile } from "../../render/env-file";
import { sshPublicKey } from "../../settings/ssh-public-key";
import { CONCOURSE_TAG, isIpAddress } from "../../settings/value-patterns";
import { WRAPPER_INSTALLER } from "../runc-wrapper/render";
import type { PrivilegedMode } from "../../gpu/plan";

export interface ConcourseWorkerSettings {
    /** Worker name as `fly workers` shows it. */
    name: string;
    /** The Concourse release version (the unit's and the installer's). */
    version: string;
    /** The TSA's host name or address, as the worker reaches it. */
    tsaHost: string;
    /** The TSA's port. */
    tsaPort: number;
    /** The TSA's host public key; absent when it is only known during `up` (a web of the same stack generates it). */
    tsaPublicKey?: string;
    /** Register as a worker of this team only; absent: a worker of every team. */
    team?: string;
    /** Every tag, computed ones first (from the worker's GPU plan). */
    tags: string[];
    /** The worker's work dir on the host (deleted on destroy). */
    workDir: string;
    /** Where the release tarball comes from. */
    binary: PlannedRelease;
    /** Config of the containerd that Concourse starts itself. */
    containerdConfig: string;
    /** MTU of the containers' network; absent: Concourse takes the host's outbound interface's (a host without a network needs it). */
    networkMtu?: number;
    /** What a `privileged: true` step gets; always written, so Concourse's own default (full) never applies. */
    privilegedMode: PrivilegedMode;
    /**
     * The worker runs in a user namespace (an unprivileged LXD container): overlayfs refuses
     * `metacopy=on` there, which Concourse's volume driver asks for whenever the kernel offers
     * it, so the unit hides the offer.
     */
    inUserNamespace: boolean;
    /**
     * Put the runc wrapper (already on the host at `wrapper`, with this sha256) in place of
     * Concourse's own runc: its containerd creates containers with no runtime options, so no
     * containerd setting can reach them. The installer script comes with this component.
     */
    wrapRunc?: {
        /** The wrapper's path on the host. */
        wrapper: string;
        /** Its sha256: a new wrapper runs the step again. */
        sha256: string;
        /** What the swap does over a Concourse runc open to a known container breakout: "warn" or "refuse". */
        runcCves: RuncCvePolicy;
    };
    /**
     * Where to check, after the worker step, that the web lists the worker as planned (the
     * password comes at `up`); with `task`, a task tagged with the worker's tags then runs there.
     */
    registration?: {
        /** The web's URL. */
        url: string;
        /** A user of the web that may list workers. */
        username: string;
        /** How long to wait for the web to list the worker as planned, in seconds. */
        timeoutSeconds: number;
        /** Also run one task tagged with the worker's tags through the web. */
        task: boolean;
    };
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

/** The worker's listeners (garden, baggageclaim, health, debug): the TSA forwards what the web needs. */
const LOOPBACK_LISTENERS = [
    "CONCOURSE_BIND_IP",
    "CONCOURSE_DEBUG_BIND_IP",
    "CONCOURSE_HEALTHCHECK_BIND_IP",
    "CONCOURSE_BAGGAGECLAIM_BIND_IP",
    "CONCOURSE_BAGGAGECLAIM_DEBUG_BIND_IP",
];

/** The worker's environment file: everything but the tags, which go on the command line. */
export function renderWorkerEnv(s: ConcourseWorkerSettings): string {
    const env: [string, string][] = [
        ["CONCOURSE_NAME", s.name],
        ["CONCOURSE_WORK_DIR", s.workDir],
        // An IPv6 address goes in brackets, as Go's host:port wants it.
        ["CONCOURSE_TSA_HOST", `${isIpAddress(s.tsaHost) && s.tsaHost.includes(":") ? `[${s.tsaHost}]` : s.tsaHost}:${s.tsaPort}`],
        ["CONCOURSE_TSA_PUBLIC_KEY", CONCOURSE_PATHS.tsaPublicKey],
        ["CONCOURSE_TSA_WORKER_PRIVATE_KEY", CONCOURSE_PATHS.workerKey],
        ["CONCOURSE_RUNTIME", "containerd"],
        ["CONCOURSE_CONTAINERD_CONFIG", CONCOURSE_PATHS.containerdConfig],
        ["CONCOURSE_CONTAINERD_PRIVILEGED_MODE", s.privilegedMode],
        ...LOOPBACK_LISTENERS.map((k): [string, string] => [k, "127.0.0.1"]),
    ];
    if (s.networkMtu !== undefined) env.push(["CONCOURSE_CONTAINERD_MTU", String(s.networkMtu)]);
    if (s.team) env.push(["CONCOURSE_TEAM", s.team]);
    return renderEnvFile(env, "Rendered by gpu-workers.");
}

/**
 * The systemd unit. Tags are passed as repeated --tag flags rather than CONCOURSE_TAG:
 * the variable is split on commas, which would cut `gpu-devices=0,1` in two.
 */
export function renderWorkerUnit(s: ConcourseWorkerSettings): string {
    // A tag is one word of the unit's command line: no space, quote, % (a unit specifier) or line break.
    for (const t of s.tags) if (!CONCOURSE_TAG.test(t)) throw new Error(`concourse worker: the tag ${JSON.stringify(t)} is not one plain word`);
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
        ...(s.inUserNamespace
            ? [
                  "# In a user namespace overlayfs refuses metacopy=on; with the parameter out of sight",
                  "# Concourse's volume driver mounts without it.",
                  "TemporaryFileSystem=/sys/module/overlay/parameters:ro",
              ]
            : []),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

/**
 * The TSA's host key file: one key line (ssh-public-key.ts), as given with its comment, one space
 * between the fields (a second line would be a second key the worker trusts). An output known
 * only at `up` (the web's generated key) is written by the same function.
 */
export function tsaPublicKeyFile(key: string): string {
    return sshPublicKey(key, "concourse worker: the TSA public key (tsaPublicKey)", "tsa").line + "\n";
}

export function renderConcourseWorker(s: ConcourseWorkerSettings): RenderedComponent {
    const files: HostFile[] = [
        { path: CONCOURSE_PATHS.env, mode: "0644", content: renderWorkerEnv(s) },
        s.tsaPublicKey === undefined
            ? { path: CONCOURSE_PATHS.tsaPublicKey, mode: "0644", content: "", generated: "tsa-host-key.public" }
            : { path: CONCOURSE_PATHS.tsaPublicKey, mode: "0644", content: tsaPublicKeyFile(s.tsaPublicKey) },
        { path: CONCOURSE_PATHS.workerKey, mode: "0600", content: "", secret: true },
        { path: CONCOURSE_PATHS.containerdConfig, mode: "0644", content: s.containerdConfig },
        { path: CONCOURSE_PATHS.unit, mode: "0644", content: renderWorkerUnit(s) },
        ...concourseReleaseFiles(s.binary, CONCOURSE_PATHS.archive),
    ];
    const installer = s.wrapRunc ? hostScriptFile(WRAPPER_INSTALLER) : undefined;
    if (installer) files.push(installer);
    const watched = [CONCOURSE_PATHS.unit, CONCOURSE_PATHS.env, CONCOURSE_PATHS.tsaPublicKey, CONCOURSE_PATHS.workerKey, CONCOURSE_PATHS.containerdConfig];
    const checks: ProgramCheck[] = s.registration
        ? [
              {
                  name: "registration",
                  kind: "worker-registration",
                  after: "concourse-worker",
                  worker: s.name,
                  tags: s.tags,
                  ...(s.team ? { team: s.team } : {}),
                  unit: CONCOURSE_UNIT,
                  ...s.registration,
              },
          ]
        : [];
    return combine(
        { files, steps: [], checks },
        scriptStep({
            name: "concourse-worker",
            script: "concourse-worker.sh",
            args: [
                ...concourseReleaseArgs(s.version, s.binary, CONCOURSE_PATHS.archive),
                "--unit",
                CONCOURSE_UNIT,
                "--env",
                CONCOURSE_PATHS.env,
                ...watched.flatMap((w) => ["--watch", w]),
                ...(s.wrapRunc && installer
                    ? [
                          "--wrap-runc",
                          installer.path,
                          "--wrapper",
                          s.wrapRunc.wrapper,
                          "--wrapper-sha256",
                          s.wrapRunc.sha256,
                          "--runc-cves",
                          s.wrapRunc.runcCves,
                      ]
                    : []),
            ],
            removeArgs: ["--unit", CONCOURSE_UNIT, "--env", CONCOURSE_PATHS.env, ...(installer ? ["--wrap-runc", installer.path] : [])],
            dependsOn: files.map((f) => f.path),
        }),
    );
}
