/**
 * gpu-workers' public API: what a program needs to build GPU workers, and nothing of how the
 * components plan and render inside. The components take what a user knows (the inventory, the
 * GPU selection, datasets, versions) and plan the rest themselves; the planner's internals
 * (the chain's settings, the renderers, the rule for a path placed twice) stay behind them.
 * Nothing here reads a stack config: that is the program's (stacks/), which maps its config
 * onto these components through this entry point alone (test/unit/house.test.ts).
 */

// The components and their arguments (with the types those arguments name).
export { GpuWorker, GpuWorkerArgs, GpuWorkerLxdTransport, GpuWorkerArgsError } from "./chain/gpu-worker";
export { GpuHost, GpuHostArgs, SshHostTransport, SshJumpHost, LxdHostTransport } from "./chain/gpu-host";
export { GpuDriver, GpuDriverArgs } from "./chain/gpu-driver";
export { ContainerToolkit, ContainerToolkitArgs } from "./chain/container-toolkit";
export { ContainerdRuntime, ContainerdRuntimeArgs } from "./chain/containerd";
export { RuncWrapper, RuncWrapperArgs } from "./chain/runc-wrapper";
export type { WrapperRuntime } from "./lib/links/runc-wrapper/plan";
export { WorkerValidator, WorkerValidatorArgs } from "./chain/worker-validator";
export { FabricManager, FabricManagerArgs } from "./chain/fabric-manager";
export { FabricServiceVm, FabricServiceVmArgs } from "./chain/fabric-service-vm";
export { SharedGpuBoard, SharedGpuBoardArgs, SharedGpuBoardWorker } from "./chain/shared-gpu-board";
export { ConcourseWorker, ConcourseWorkerArgs } from "./chain/concourse-worker";
export {
    ConcourseWeb,
    ConcourseWebArgs,
    ConcourseWebArgsError,
    ConcourseWebDatabase,
    LxdWebTransport,
    WebForWorkers,
    WebAdmission,
} from "./chain/concourse-web";
export { KubernetesGpuNodes, KubernetesGpuNodesArgs, KubernetesGpuNodesArgsError, kubernetesGpuNodesObjects } from "./chain/kubernetes-gpu-nodes";
export type { GpuNodeTerms, TenantTerms, KubeObject, PlannedObject, RuntimeOffer } from "./lib/kubernetes/objects";
export { RUNTIME_OFFERS, RUNTIME_CLASS_NAMES } from "./lib/kubernetes/objects";
export { GPU_NODE_LABEL } from "./lib/kubernetes/node-labels";
export { HostAccessArgs } from "./chain/host-steps-component";
export type { HostConnection } from "./providers/host/resources";
export { Transport, onTransport } from "./lib/host/transport";
export type { ConcourseRelease, PlannedRelease } from "./lib/concourse/release";
// What is uploaded from this machine as it is (the built binaries, a release by path): hashed once per run, handed to the plans.
export type { Artifact } from "./lib/host/steps";
export type { BuildArtifacts } from "./lib/settings/worker-spec";
export { ArtifactSource, LOCAL_ARTIFACTS, UNREAD_ARTIFACTS, DIGEST_NOT_TAKEN, localArtifact, builtArtifact } from "./chain/artifacts";
export { GpuSelection, FabricManagerMode, PrivilegedMode, PRIVILEGED_MODES } from "./lib/gpu/plan";
export type { WorkerFabricPartition } from "./lib/settings/worker-spec";
export * as lxd from "./providers/lxd";

// The inventory: its schema, as `npm run discover` prints it and every component takes it.
export { inventorySchema, gpuSchema, migInstanceSchema, Gpu, GpuInventory, GpuInventoryInput, MigInstance } from "./lib/gpu/inventory";

// The components' settings: one schema and its defaults, and how layers of settings merge
// (the stack config layers its defaults and hosts over WORKER_DEFAULTS by this rule: plain
// objects merge key by key, the values in WHOLE_VALUES and everything else are replaced).
export {
    settingsSchema,
    WORKER_DEFAULTS,
    SettingsLayer,
    WorkerSettings,
    mergeSettings,
    isPlainObject,
    WHOLE_VALUES,
    REGISTRATION_TIMEOUT_SECONDS,
} from "./lib/settings/settings";
export { webSettingsSchema, localDatabaseSchema, externalDatabaseFields } from "./lib/settings/web-settings";
export { kubernetesSettingsSchema, tenantSchema, nodeName, imageReference } from "./lib/kubernetes/settings";
export { LXD_TRANSPORT_DEFAULTS, SSH_PORT_DEFAULT, SSH_USER_DEFAULT } from "./lib/host/transport-defaults";
export { lxdConfigKeyProblem } from "./lib/lxd/config-keys";
export { DEFAULT_HOST_STEPS, HOST_STEP_TRANSPORTS, HostStepTransport, hostStepsSchema } from "./lib/host/step-transport";
// Reference docs read from those schemas (each field's description and default), as the README's tables are written.
export { fieldDocs, settingsTable, FieldDoc } from "./lib/settings/schema-docs";
export {
    BUILTIN_PARTITION_TABLES,
    DEFAULT_PARTITION_TABLE,
    partitionListSchema,
    partitionTable,
    partitionIdProblem,
    FabricPartition,
    PartitionTable,
} from "./lib/fabric/partition-table";
// The value forms those schemas are built from, so that a program's own config (stacks/schema.ts)
// accepts and refuses values exactly as the components do, with the same messages.
export { port, version, absolutePath } from "./lib/settings/settings";
export { pgName } from "./lib/settings/web-settings";
export { datasetRoot, hostAddress, httpUrl, ipAddress, libvirtUri, plainName, posixUser, workDirAndDatasetsProblem } from "./lib/settings/value-patterns";

// Plans without Pulumi: a host's whole plan (every step, file and tag), as the components
// build it and `npm run render` writes it out; for a worker, a shared board and a web.
export { workerSpec } from "./chain/gpu-worker";
export { boardSpec } from "./chain/shared-gpu-board";
export { webSpec } from "./chain/concourse-web";
export { planHost, HostPlan, PlannedLink, PlannedFile } from "./lib/plan/host-plan";
export { linkOf } from "./lib/plan/chain";
export type { PlannedStep } from "./lib/plan/gpu-host";
export type { WorkerSpec } from "./lib/settings/worker-spec";
export { planBoard, BoardPlan, BoardSpec, SERVICE_VM_DEFAULTS } from "./lib/plan/board-plan";
export { planWebHost, planWorkerAdmission, WebPlan } from "./lib/plan/web-plan";
// The GPU plan (tags, env, devices) and the checks a program runs on its whole config before
// building anything, to report every problem at once with its path (stacks/config.ts).
export { planWorkerGpus, normalizeFabricMode, PlanError, WorkerGpuPlan, PlanOptions } from "./lib/gpu/plan";
export { toolkitVersion, toolkitVersionProblems } from "./lib/toolkit/versions";
export { PartitionPlanError } from "./lib/fabric/partitions";

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
export { validateCdiSpec } from "./lib/cdi/schema";
