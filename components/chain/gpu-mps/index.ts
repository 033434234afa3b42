import * as pulumi from "@pulumi/pulumi";
import { partOf } from "../../lib/links/link";
import { GpuMpsTerms, planGpuMps } from "../../lib/links/gpu-mps/plan";
import { GpuMpsSettings, renderGpuMps } from "../../lib/links/gpu-mps/render";
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The host, its inventory, the GPUs that get a daemon, the replicas and the worker unit to start before, or GpuWorker's planned part. */
export type GpuMpsArgs = LeafArgs<GpuMpsTerms, GpuMpsSettings>;

/**
 * An MPS control daemon per selected NVIDIA GPU (systemd's gpu-workers-mps@N.service): the GPU
 * in EXCLUSIVE_PROCESS compute mode, each client limited to total/replicas of its memory pinned
 * and floor(100/replicas) % of its threads, its control pipe in /run/gpu-workers/mps/N/pipe and
 * its own tmpfs as /dev/shm (docs/gpu-mps.md). Delete stops every daemon, puts each GPU's
 * compute mode back as it was, and removes the folders and records it made.
 */
export class GpuMps extends HostStepsComponent {
    constructor(name: string, args: GpuMpsArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:mps:GpuMps", name, opts);
        this.placeOnHost(partOf(args, (terms) => planGpuMps(terms), renderGpuMps).rendered, args);
        this.registerOutputs({ files: this.files, steps: this.steps });
    }
}
