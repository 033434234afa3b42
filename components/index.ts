/**
 * gpu-workers' public API, in its three kinds: the chain's components (ComponentResources),
 * the providers that reach hosts and LXD (dynamic resources), and the pure libraries (the GPU
 * plan, the host plan, the renderers, discovery and CDI). Nothing here reads a stack config:
 * that is the program's (stacks/), which maps its config onto these components.
 */

// The chain's components.
export { GpuWorker, GpuWorkerArgs, GpuWorkerLxdTransport, GpuWorkerArgsError, workerSpec } from "./chain/gpu-worker";
export { GpuHost, GpuHostArgs, SshHostTransport, LxdHostTransport } from "./chain/gpu-host";
export { GpuDriver, GpuDriverArgs } from "./chain/gpu-driver";
export { ContainerToolkit, ContainerToolkitArgs } from "./chain/container-toolkit";
export { ContainerdRuntime, ContainerdRuntimeArgs } from "./chain/containerd";
export { RuncWrapper, RuncWrapperArgs } from "./chain/runc-wrapper";
export { WorkerValidator, WorkerValidatorArgs } from "./chain/worker-validator";
export { FabricManager, FabricManagerArgs } from "./chain/fabric-manager";
export { FabricServiceVm, FabricServiceVmArgs } from "./chain/fabric-service-vm";
export { SharedGpuBoard, SharedGpuBoardArgs, SharedGpuBoardWorker, boardSpec } from "./chain/shared-gpu-board";
export { ConcourseWorker, ConcourseWorkerArgs } from "./chain/concourse-worker";
export { HostAccessArgs, HostStepsComponent } from "./chain/host-steps-component";

// Providers: what reaches hosts and LXD.
export { HostCommand, HostCommandArgs } from "./providers/host/host-command";
export { HostConnection } from "./providers/host/resources";
export { SshKeyPair, generateOpensshKeyPair } from "./providers/keys";
export { HostDriftGuard } from "./providers/drift";
export { InventoryCheck } from "./providers/checks/inventory-check";
export { CdiSpecCheck } from "./providers/checks/cdi-spec-check";
export * as lxd from "./providers/lxd";

// Pure libraries.
export { inventorySchema, gpuSchema, migInstanceSchema, Gpu, GpuInventory, GpuInventoryInput, MigInstance } from "./lib/gpu/inventory";
export { planWorkerGpus, selectGpus, modelSlug, normalizeFabricMode, PlanError, GPU_CONTROL_VARIABLES, HSA_OVERRIDES, WorkerGpuPlan, PlanOptions, GpuSelection, FabricManagerMode, PrivilegedMode, PRIVILEGED_MODES } from "./lib/gpu/plan";
export { HostFile, HostStep, RenderedComponent, ProgramCheck, shellQuote, shellCommand, asRoot } from "./lib/host/steps";
export { Transport, onTransport } from "./lib/host/transport";
export { settingsSchema, WORKER_DEFAULTS, WorkerSettings, mergeSettings } from "./lib/plan/settings";
export { WorkerSpec, HostShape, SshHostShape, LxdHostShape, WorkerFabricPartition } from "./lib/plan/worker-spec";
export { planHost, HostPlan, PlannedLink, PlannedFile } from "./lib/plan/host-plan";
export { planGpuHost, GpuHostPlan, PlannedStep } from "./lib/plan/gpu-host";
export { placeOnce, Placement } from "./lib/plan/place-files";
export { chainSettings, renderChain, chainDriftCheck, ChainSettings, ChainLink } from "./lib/plan/chain";
export { renderGpuDriver, GpuDriverSettings } from "./lib/render/gpu-driver";
export { renderContainerToolkit, renderNvidiaRuntimeConfig, ContainerToolkitSettings } from "./lib/render/container-toolkit";
export { renderContainerdDropIn, renderConcourseContainerdConfig, renderContainerdRuntimeComponent, ensureImports, ContainerdRuntimeSettings } from "./lib/render/containerd";
export { renderWrapperConfig, renderRuncWrapperComponent, RuncWrapperSettings } from "./lib/render/runc-wrapper";
export { renderWorkerValidator, WorkerValidatorSettings } from "./lib/render/worker-validator";
export { TOOLKITS, toolkitVersionProblems, VendorToolkit, ToolkitCve } from "./lib/toolkit/versions";
export { renderFabricManager, renderFabricManagerConfig, FabricManagerSettings } from "./lib/render/fabric-manager";
export { renderFabricServiceVm, renderServiceVmDomain, renderServiceVmUserData, renderServiceVmMetaData, FabricServiceVmSettings } from "./lib/render/fabric-service-vm";
export { planPartitions, possibleShapes, PartitionPlanError, PartitionRequest, PlannedPartition } from "./lib/fabric/partitions";
export { HGX_H100_8GPU, BUILTIN_PARTITION_TABLES, partitionTable, partitionListSchema, FabricPartition, PartitionTable } from "./lib/fabric/partition-table";
export { planBoard, partitionWorkerSpec, BoardPlan, BoardSpec, ServiceVmSpec } from "./lib/plan/board-plan";
export { renderConcourseWorker, renderWorkerUnit, renderWorkerEnv, ConcourseWorkerSettings } from "./lib/render/concourse-worker";
export { renderDriftCheck } from "./lib/render/drift-check";
export { parseDiscoveryDocument, compareInventory, formatVerification, verifyOptionsSchema, VERIFY_FIELDS, VerifyField } from "./lib/discovery/verify";
export { validateCdiSpec } from "./lib/cdi/schema";
export { renderCdiSpec } from "./lib/cdi/render";
