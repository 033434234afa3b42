/**
 * One worker host as planning sees it: its name, how it is reached (without the secrets of
 * reaching it), its declared inventory and every setting with defaults applied. GpuWorker
 * derives it from its arguments; the stack config's hosts already have this shape. Pure.
 */
import type { z } from "zod";
import type { GpuInventory } from "../gpu/inventory";
import type { Transport } from "../host/transport";
import type { Artifact } from "../host/steps";
import type { PlannedRelease } from "../concourse/release";
import type { WorkerSettings } from "./settings";
import type { lxdWorkerTransportSchema, sshPlanSchema } from "./transport-schema";

/** A machine reached over SSH, as planning reads it: its login user (commands run through `sudo -n` unless it is root). */
export type SshHostShape = z.output<typeof sshPlanSchema>;

/** The worker's host as planning reads it: its login user, or the LXD instance the same `up` creates for it (lxdWorkerTransportSchema's output). */
export type HostShape = Transport<SshHostShape, z.output<typeof lxdWorkerTransportSchema>>;

/** The fabric partition a worker VM of a shared board gets (from lib/fabric/partitions.ts). */
export interface WorkerFabricPartition {
    /** The partition id: the gpu-fabric-partition tag. */
    id: number;
    /** Host PCI address of each of the VM's GPUs, by the index the VM numbers it with. */
    hostPciBusIds: string[];
}

/** The binaries every worker uploads, built by `npm run build`: hashed once per program run where the build is known, and shared by every host's plan. */
export interface BuildArtifacts {
    /** The runc wrapper (wrapper/). */
    wrapper: Artifact;
    /** The TOML merger the containerd step runs on the host (containerd-toml/). */
    containerdToml: Artifact;
    /** The CDI spec checker (the CDI project's library) the toolkit's CDI step runs on the host (cdi-check/). */
    cdiCheck: Artifact;
}

export interface WorkerSpec extends Omit<WorkerSettings, "concourse"> {
    /** The host's name: every resource of the host is named from it. */
    name: string;
    /** The settings' concourse, its release with the digest of one uploaded from here. */
    concourse: Omit<WorkerSettings["concourse"], "binary"> & { binary?: PlannedRelease };
    artifacts: BuildArtifacts;
    transport: HostShape;
    inventory: GpuInventory;
    /** Where to check, after the worker step, that the web lists the worker as planned. */
    registration?: { url: string; username: string; timeoutSeconds: number };
    /** A worker VM of a shared board: its partition (the inventory is then the VM's own view of the GPUs). */
    fabricPartition?: WorkerFabricPartition;
}
