/**
 * One worker host as planning sees it: its name, how it is reached (without the secrets of
 * reaching it), its declared inventory and every setting with defaults applied. GpuWorker
 * derives it from its arguments; the stack config's hosts already have this shape. Pure.
 */
import type { GpuInventory } from "../gpu/inventory";
import type { LxdInstanceType } from "../lxd/types";
import type { Transport } from "../host/transport";
import type { Artifact } from "../host/steps";
import type { PlannedRelease } from "../concourse/release";
import type { WorkerSettings } from "./settings";

/** A machine reached over SSH. */
export interface SshHostShape {
    /** Login user; commands run through `sudo -n` unless it is root. */
    user: string;
}

/** An LXD instance the same `up` creates, reached over SSH through a loopback proxy device. */
export interface LxdHostShape {
    /** Instance name on the LXD server. */
    instance: string;
    /** Image alias or fingerprint on the server. */
    image: string;
    type: LxdInstanceType;
    profiles: string[];
    /** Instance config keys besides the ones the worker needs (security.nesting, nvidia.runtime). */
    config: Record<string, string>;
    /** Folder on the LXD server whose subfolders become the worker's datasets. */
    datasetSource?: string;
    /** The subfolders of datasetSource attached each on its own (absent: all of it, read-only). */
    datasetFolders?: string[];
    /** Loopback address and port on the LXD server that forward to the instance's sshd. */
    sshAddress: string;
    sshPort: number;
    /** Login user inside the instance (root: the key placed there is root's). */
    user: string;
    /** Pass GPUs to the instance by CDI id instead of PCI address. */
    gpuCdi: boolean;
    /** idmap-shift writable dataset disks. */
    shiftWritable: boolean;
    /** Ports of the LXD server the instance reaches as its own 127.0.0.1:<port>, by device name. */
    serverPorts: Record<string, { port: number; server: { address: string; port: number } }>;
    /** virtual-machine only: the managed bridge network and the VM's static IPv4 address on it. */
    network?: string;
    address?: string;
}

export type HostShape = Transport<SshHostShape, LxdHostShape>;

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
