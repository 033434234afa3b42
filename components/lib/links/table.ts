/**
 * The links of a worker's chain, in the order they converge: the one list the host plan walks
 * and GpuWorker maps to components (its map must name every key here, or it does not compile).
 * Adding a link is a folder beside these (its terms, plan and render) and a row here. Pure.
 */
import { concourseWorkerLink } from "./concourse-worker/plan";
import { containerToolkitLink } from "./container-toolkit/plan";
import { containerdLink } from "./containerd/plan";
import { fabricManagerLink } from "./fabric-manager/plan";
import { gpuDriverLink } from "./gpu-driver/plan";
import { gpuHealthLink } from "./gpu-health/plan";
import { gpuMetricsLink } from "./gpu-metrics/plan";
import { gpuMpsLink } from "./gpu-mps/plan";
import type { LinkDef } from "./link";
import { runcWrapperLink } from "./runc-wrapper/plan";
import { workerValidatorLink } from "./worker-validator/plan";

/** By component type name; the order of the keys is the chain's. */
export const LINKS = {
    GpuDriver: gpuDriverLink,
    FabricManager: fabricManagerLink,
    ContainerToolkit: containerToolkitLink,
    ContainerdRuntime: containerdLink,
    RuncWrapper: runcWrapperLink,
    GpuMps: gpuMpsLink,
    WorkerValidator: workerValidatorLink,
    ConcourseWorker: concourseWorkerLink,
    GpuHealth: gpuHealthLink,
    GpuMetrics: gpuMetricsLink,
};

export type LinkComponent = keyof typeof LINKS;

/** The settings a link plans. */
export type LinkSettings<K extends LinkComponent> = (typeof LINKS)[K] extends LinkDef<infer S> ? S : never;

/** The links in chain order. */
export const LINK_ORDER = Object.keys(LINKS) as LinkComponent[];
