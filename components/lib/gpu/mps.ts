/**
 * Where an MPS control daemon of ours lives on a host (allocation mode mps, issue 41 item 5): one
 * daemon per GPU, so a container that holds a GPU's unit gets that GPU's pipe and shm folders and
 * nothing of another GPU's. The GPU MPS link places and runs the daemons; the runc wrapper's
 * settings hand a holder its GPU's folders. Both take the paths from here. Pure.
 */

/** Each GPU's folders are under `<root>/<index>/`. */
export const MPS_RUN_ROOT = "/run/gpu-workers/mps";
/** The daemons' logs, root's alone (0700), never mounted into a container. */
export const MPS_LOG_ROOT = "/var/log/gpu-workers/mps";
/** The systemd template unit; GPU N's daemon is `gpu-workers-mps@N.service`. */
export const MPS_UNIT_TEMPLATE = "gpu-workers-mps@.service";
/** What the daemon and its clients read to find each other. */
export const MPS_PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY";

/** GPU `gpu`'s daemon's unit. */
export function mpsUnit(gpu: number | string): string {
    return MPS_UNIT_TEMPLATE.replace("@", `@${gpu}`);
}

/** GPU `gpu`'s pipe folder: the daemon's control pipe and the servers' sockets; bind-mounted, at the same path, into a holder. */
export function mpsPipeDir(gpu: number | string): string {
    return `${MPS_RUN_ROOT}/${gpu}/pipe`;
}

/** GPU `gpu`'s shared memory: a tmpfs of its own, the daemon's /dev/shm, and a holder's /dev/shm. */
export function mpsShmDir(gpu: number | string): string {
    return `${MPS_RUN_ROOT}/${gpu}/shm`;
}

/** GPU `gpu`'s log folder. */
export function mpsLogDir(gpu: number | string): string {
    return `${MPS_LOG_ROOT}/${gpu}`;
}

/** The most clients of one GPU's daemon: each gets floor(100 / replicas) percent of its threads, at least 1. */
export const MAX_MPS_REPLICAS = 100;

/** The share of a GPU's threads (set_default_active_thread_percentage) each of `replicas` clients gets, as NVIDIA's device plugin sets it. */
export function mpsThreadPercentage(replicas: number): number {
    return Math.floor(100 / replicas);
}
