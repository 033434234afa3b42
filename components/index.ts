/**
 * gpu-workers' public API: the component resources, the pure renderers beside them, and the
 * one function that turns an inventory and a GPU selection into tags, devices and settings.
 */
export { inventorySchema, gpuSchema, migInstanceSchema, Gpu, GpuInventory, GpuInventoryInput, MigInstance } from "./gpu/inventory";
export { planWorkerGpus, selectGpus, modelSlug, PlanError, GPU_CONTROL_VARIABLES, HSA_OVERRIDES, WorkerGpuPlan, PlanOptions, GpuSelection } from "./gpu/plan";
export { HostFile, HostStep, RenderedComponent, shellQuote, shellCommand } from "./host-steps";
export { HostAccessArgs } from "./host-component";
export { HostConnection } from "./host-resources";

export { GpuHost, GpuHostArgs, SshHostTransport, LxdHostTransport } from "./gpu-host";
export { GpuDriver, GpuDriverArgs, renderGpuDriver, GpuDriverSettings } from "./gpu-driver";
export { ContainerToolkit, ContainerToolkitArgs, renderContainerToolkit, renderNvidiaRuntimeConfig, ContainerToolkitSettings } from "./container-toolkit";
export { ContainerdRuntime, ContainerdRuntimeArgs } from "./containerd";
export { renderContainerdDropIn, renderConcourseContainerdConfig, renderContainerdRuntimeComponent, ensureImports, ContainerdRuntimeSettings } from "./containerd/render";
export { RuncWrapper, RuncWrapperArgs, renderWrapperConfig, renderRuncWrapperComponent, RuncWrapperSettings } from "./runc-wrapper";
export { FabricManager, FabricManagerArgs, renderFabricManager, renderFabricManagerConfig, FabricManagerSettings } from "./fabric-manager";
export { ConcourseWorker, ConcourseWorkerArgs, renderConcourseWorker, renderWorkerUnit, renderWorkerEnv, ConcourseWorkerSettings } from "./concourse-worker";
export { GpuWorker, GpuWorkerArgs, GpuWorkerSecrets } from "./worker";
export { workerSettings, renderChain, WorkerSettings, ChainLink } from "./worker/settings";

export { HostCommand, HostCommandArgs } from "./remote/host-command";
export { SshKeyPair, generateOpensshKeyPair } from "./keys";
export { HostDriftGuard, renderDriftCheck } from "./drift";
export * as lxd from "./lxd";
export { parseDiscoveryDocument, compareInventory, formatVerification, verifyOptionsSchema, VERIFY_FIELDS } from "./discovery/verify";
export { validateCdiSpec } from "./cdi/schema";
export { renderCdiSpec } from "./cdi/render";
export { parseStackConfig, StackConfigError } from "../stacks/config";
export { HostConfig } from "../stacks/schema";
