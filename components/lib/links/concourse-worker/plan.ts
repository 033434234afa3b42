/** The Concourse worker link: its terms, its plan, and its row of the chain. Pure. */
import type { RuncCvePolicy } from "../../gpu/spec-features";
import type { Artifact } from "../../host/steps";
import type { PrivilegedMode } from "../../gpu/plan";
import type { PlannedRelease } from "../../concourse/release";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSpec } from "../../settings/worker-spec";
import { renderConcourseContainerdConfig } from "../containerd/render";
import type { LinkDef } from "../link";
import { WRAPPER_PATH } from "../runc-wrapper/render";
import { builtin } from "../terms";
import { ConcourseWorkerSettings, renderConcourseWorker } from "./render";

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

/** Why the chain stops before the worker, in one line; undefined where it reaches it. */
export function stoppedBeforeWorker(host: WorkerSpec): string | undefined {
    return host.concourse.binary
        ? undefined
        : `host ${host.name}: concourse.binary is not set (give {url, sha256} or {path}), so the chain stops before the Concourse worker`;
}

/** The worker, where the stack gives a Concourse binary; it goes through the wrapper and after fabricmanager. */
export const concourseWorkerLink: LinkDef<ConcourseWorkerSettings> = {
    suffix: "concourse",
    plan: (host, gpus) => {
        if (!host.concourse.binary) return undefined;
        if (host.concourse.tsaHost === undefined)
            throw new Error(`host ${host.name}: concourse.tsaHost is required to run the worker (the TSA's address as the worker reaches it)`);
        const lxd = host.transport.lxd;
        return planConcourseWorker({
            name: host.name,
            version: host.concourse.version,
            tsaHost: host.concourse.tsaHost,
            tsaPort: host.concourse.tsaPort,
            tsaPublicKey: host.concourse.tsaPublicKey,
            team: host.concourse.team,
            tags: gpus.tags,
            workDir: host.concourse.workDir,
            binary: host.concourse.binary,
            networkMtu: host.concourse.networkMtu,
            privilegedMode: host.concourse.privilegedMode,
            ...(host.registration ? { registration: { ...host.registration, task: host.concourse.taskCheck } } : {}),
            inUserNamespace: host.concourse.userNamespace ?? (lxd !== undefined && lxd.type === "container" && lxd.config["security.privileged"] !== "true"),
            wrapRunc: true,
            runcCves: host.wrapper.runcCves,
            wrapperBinary: host.artifacts.wrapper,
        });
    },
    render: renderConcourseWorker,
    afterBeside: true,
};
