/**
 * gpu-workers' public face, what `gpu-workers` resolves to: the components with their
 * arguments (and the types and defaults those arguments name), the schemas they take, a
 * worker host's plan without Pulumi (planHost), and discovery. Nothing the program alone
 * uses: its config's value forms and checks, the reference docs, the board, web and
 * Kubernetes plans the render writes are in components/program.ts, the program's entry.
 * The package's `exports` map lets a consumer import this file and no other.
 */

// The components and their arguments (with the types and defaults those arguments name).
export { GpuWorker, GpuWorkerArgs, GpuWorkerLxdTransport, GpuWorkerArgsError } from "./chain/gpu-worker";
export { GpuHost, GpuHostArgs, SshHostTransport, SshJumpHost, LxdHostTransport } from "./chain/gpu-host";
export { GpuDriver, GpuDriverArgs } from "./chain/gpu-driver";
export { ContainerToolkit, ContainerToolkitArgs } from "./chain/container-toolkit";
export { ContainerdRuntime, ContainerdRuntimeArgs } from "./chain/containerd";
export { RuncWrapper, RuncWrapperArgs } from "./chain/runc-wrapper";
export type { WrapperRuntime } from "./lib/links/runc-wrapper/plan";
export { WorkerValidator, WorkerValidatorArgs } from "./chain/worker-validator";
export { GpuMetrics, GpuMetricsArgs } from "./chain/gpu-metrics";
export { FabricManager, FabricManagerArgs } from "./chain/fabric-manager";
export { FabricServiceVm, FabricServiceVmArgs } from "./chain/fabric-service-vm";
export { SharedGpuBoard, SharedGpuBoardArgs, SharedGpuBoardWorker } from "./chain/shared-gpu-board";
export { ConcourseWorker, ConcourseWorkerArgs } from "./chain/concourse-worker";
export { GpuHealth, GpuHealthArgs } from "./chain/gpu-health";
export { GpuMps, GpuMpsArgs } from "./chain/gpu-mps";
export {
    ConcourseWeb,
    ConcourseWebArgs,
    ConcourseWebArgsError,
    ConcourseWebDatabase,
    LxdWebTransport,
    WebForWorkers,
    WebAdmission,
} from "./chain/concourse-web";
export { KubernetesGpuNodes, KubernetesGpuNodesArgs, KubernetesGpuNodesArgsError } from "./chain/kubernetes-gpu-nodes";
export type { GpuNodeTerms, TenantTerms, RuntimeOffer } from "./lib/kubernetes/objects";
export { RUNTIME_OFFERS, RUNTIME_CLASS_NAMES } from "./lib/kubernetes/objects";
export { GPU_NODE_LABEL } from "./lib/kubernetes/node-labels";
export { HostAccessArgs } from "./chain/host-steps-component";
export type { HostConnection, HostConnectionInput } from "./providers/host/resources";
export type { Transport } from "./lib/host/transport";
export type { ConcourseRelease, PlannedRelease } from "./lib/concourse/release";
export { GpuSelection, FabricManagerMode, PrivilegedMode, PRIVILEGED_MODES } from "./lib/gpu/plan";
export type { WorkerFabricPartition } from "./lib/settings/worker-spec";
export { LXD_TRANSPORT_DEFAULTS, SSH_PORT_DEFAULT, SSH_USER_DEFAULT } from "./lib/host/transport-defaults";
export { SERVICE_VM_DEFAULTS } from "./lib/plan/board-plan";
export * as lxd from "./providers/lxd";
// What a component throws for a selection or partition it cannot plan.
export { PlanError } from "./lib/gpu/plan";
export { PartitionPlanError } from "./lib/fabric/partitions";

// The inventory: its schema, as `npm run discover` prints it and every component takes it.
export { inventorySchema, gpuSchema, migInstanceSchema, Gpu, GpuInventory, GpuInventoryInput, MigInstance } from "./lib/gpu/inventory";

// The components' settings: one schema each and its defaults; each transport's contract (what its args take).
export { settingsSchema, WORKER_DEFAULTS, SettingsLayer, WorkerSettings, REGISTRATION_TIMEOUT_SECONDS } from "./lib/settings/settings";
export type { WorkerSettingsLayer } from "./lib/settings/settings-layer.generated";
export { webSettingsSchema, localDatabaseSchema, externalDatabaseFields } from "./lib/settings/web-settings";
export type { WebSettingsInput } from "./lib/settings/web-settings.generated";
export { kubernetesSettingsSchema, tenantSchema } from "./lib/kubernetes/settings";
export type { KubernetesSettingsInput } from "./lib/kubernetes/settings.generated";
export { lxdTransportSchema, lxdWebTransportSchema, lxdWorkerTransportSchema, sshJumpHostSchema, sshTransportSchema } from "./lib/settings/transport-schema";
export { DEFAULT_HOST_STEPS, HOST_STEP_TRANSPORTS, HostStepTransport, hostStepsSchema } from "./lib/host/step-transport";
export { BUILTIN_PARTITION_TABLES, DEFAULT_PARTITION_TABLE, partitionListSchema, FabricPartition, PartitionTable } from "./lib/fabric/partition-table";

// A worker host's whole plan without Pulumi (every step, file and tag): planHost(workerSpec(name, args)).
export { workerSpec } from "./chain/gpu-worker";
export { planHost, HostPlan, PlannedLink, PlannedFile } from "./lib/plan/host-plan";
export type { PlannedStep } from "./lib/plan/gpu-host";
export type { WorkerSpec } from "./lib/settings/worker-spec";

// Discovery: what a host has, read from the discovery script's output, and how it compares with the declared inventory.
export { readDiscoveryDocument, DiscoveryDocumentError } from "./lib/discovery/document";
export {
    parseDiscoveryDocument,
    compareInventory,
    formatVerification,
    verifyOptionsSchema,
    VERIFY_FIELDS,
    VerifyField,
    DiscoveryResult,
} from "./lib/discovery/verify";
export { renderInventoryYaml } from "./lib/discovery/yaml-block";

// The types the arguments and results above name, so that a consumer can write each by its name.
export type { LeafArgs } from "./chain/host-steps-component";
export type { WithInputs, LxdServerArg } from "./chain/host-access";
export type { SshTarget, SshProxy } from "./providers/host/ssh";
export type { RuncWrapperTerms } from "./lib/links/runc-wrapper/plan";
export type { ContainerToolkitTerms } from "./lib/links/container-toolkit/plan";
export type { ContainerdRuntimeTerms } from "./lib/links/containerd/plan";
export type { GpuDriverTerms } from "./lib/links/gpu-driver/plan";
export type { GpuHealthTerms } from "./lib/links/gpu-health/plan";
export type { GpuMetricsTerms } from "./lib/links/gpu-metrics/plan";
export type { GpuMpsTerms } from "./lib/links/gpu-mps/plan";
export type { WorkerValidatorTerms } from "./lib/links/worker-validator/plan";
export type { ConcourseWorkerExtras, ConcourseWorkerGiven } from "./chain/concourse-worker";
export type { WorkerPlanning } from "./chain/gpu-worker";
export type { Artifact } from "./lib/host/steps";
export type { AccessShape } from "./lib/plan/host-access";
export type { BoardPlan, ServiceVmSpec } from "./lib/plan/board-plan";
export type { WebPlan } from "./lib/plan/web-plan";
export type { WebKeysTarget } from "./lib/render/concourse-web";
export type { BuildArtifacts, HostShape } from "./lib/settings/worker-spec";
export type { WorkerGpuPlan } from "./lib/gpu/plan";
export type { DiscoveryDocument } from "./lib/discovery/document";
export type { FoundVendor, GpuVendor } from "./lib/discovery/result";
export type { VerificationResult, VerifyOptions } from "./lib/discovery/verify";
export type { PlannedPart } from "./lib/links/link";
export type { DatasetTerms } from "./lib/links/terms";
export { SpecFeature, RuncCvePolicy, SPEC_FEATURES, RUNC_CVE_POLICIES } from "./lib/gpu/spec-features";
export type { ConcourseWorkerTerms } from "./lib/links/concourse-worker/plan";
export type { ArtifactSource } from "./chain/artifacts";
export type { FoundGpu, ModelSource } from "./lib/discovery/result";
export { GpuAllocation, AllocationMode, GpuUnit, UnitMount, ALLOCATION_MODES } from "./lib/gpu/allocation";
export type { DeviceLink } from "./lib/gpu/nodes";
export type { HostAccessPlan } from "./lib/plan/host-access";
export type { PlannedPartition } from "./lib/fabric/partitions";
export type { SshHostShape } from "./lib/settings/worker-spec";
export type { StepsLink } from "./lib/plan/host-plan";
export { discoveryDocumentSchema } from "./lib/discovery/document";
export { sshPlanSchema } from "./lib/settings/transport-schema";
