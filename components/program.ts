/**
 * The program's own entry (stacks/, cli/, bench/): the public face (components/index.ts) and
 * what only the program uses besides: the rule by which its config's layers merge, the value
 * forms and checks its config runs before building anything, the reference docs read from the
 * schemas, and the plans the render writes for boards, webs and Kubernetes nodes. Not importable
 * from the package (its `exports` map names components/index.ts alone).
 */
export * from "./index";

// How layers of settings merge (the stack config layers its defaults and hosts over
// WORKER_DEFAULTS by this rule: plain objects merge key by key, the values in WHOLE_VALUES and
// everything else are replaced).
export { mergeSettings, isPlainObject, WHOLE_VALUES } from "./lib/settings/settings";
// The one parse of a worker's settings, which the stack config's hosts go through as GpuWorker's own arguments do.
export { parseSettings } from "./lib/settings/settings";
// The value forms the schemas are built from, so that the program's own config (stacks/config/schema.ts)
// accepts and refuses values exactly as the components do, with the same messages.
export { port, version, absolutePath } from "./lib/settings/settings";
export { pgName } from "./lib/settings/web-settings";
export { nodeName, imageReference } from "./lib/kubernetes/settings";
export {
    datasetRoot,
    hostAddress,
    httpUrl,
    ipAddress,
    libvirtUri,
    jobMappingAndFoldersProblem,
    plainName,
    posixUser,
    workDirAndDatasetsProblem,
} from "./lib/settings/value-patterns";
export { lxdConfigKeyProblem } from "./lib/lxd/config-keys";
export { partitionTable, partitionIdProblem } from "./lib/fabric/partition-table";
export { onTransport } from "./lib/host/transport";
// Reference docs read from those schemas (each field's description and default), as the README's tables are written.
export { fieldDocs, settingsTable, FieldDoc, defaultOf, formatDefault, groupOf, metaOf } from "./lib/settings/schema-docs";

// What is uploaded from this machine as it is (the built binaries, a release by path): hashed once per run, handed to the plans.
export type { Artifact } from "./lib/host/steps";
export type { BuildArtifacts } from "./lib/settings/worker-spec";
export { ArtifactSource, LOCAL_ARTIFACTS, UNREAD_ARTIFACTS, DIGEST_NOT_TAKEN, localArtifact, builtArtifact } from "./chain/artifacts";

// Plans without Pulumi for a shared board, a web and a cluster's GPU nodes, as `npm run render` writes them out.
export { boardSpec } from "./chain/shared-gpu-board";
// The one plan of a worker and of a shared board from their arguments: the program plans each once and hands the plan over (`planned`).
export { planWorker, WorkerPlanning } from "./chain/gpu-worker";
export { planSharedBoard } from "./chain/shared-gpu-board";
export { webForWorkers, webSpec } from "./chain/concourse-web";
export { setOwnerStack } from "./providers/host/resources";
export { kubernetesGpuNodesObjects } from "./chain/kubernetes-gpu-nodes";
export type { KubeObject, PlannedObject } from "./lib/kubernetes/objects";
// A host plan's link of one component type, typed by it (the offline render reads the worker's).
export { linkOf } from "./lib/plan/chain";
export { planBoard, BoardPlan, BoardSpec } from "./lib/plan/board-plan";
export { planWebHost, planWorkerAdmission, WebPlan } from "./lib/plan/web-plan";
// The GPU plan (tags, env, devices) and the checks the program runs on its whole config before
// building anything, to report every problem at once with its path (stacks/config/, stacks/checks/).
export { planWorkerGpus, normalizeFabricMode, WorkerGpuPlan, PlanOptions } from "./lib/gpu/plan";
export { toolkitVersion, toolkitVersionProblems } from "./lib/toolkit/versions";

// What `npm run discover` reads besides the public discovery: the script it runs, its document's interpretation,
// why it found no GPU and the indent of a host's keys in a stack file;
// and the checkout `npm run render -- --against REV` takes node_modules from.
export { readHostScript, PACKAGE_ROOT } from "./lib/host/scripts";
export { interpretDiscovery } from "./lib/discovery/parse";
export { whyNoGpu } from "./lib/discovery/why-none";
export { PASTE_INDENT } from "./lib/discovery/yaml-block";

// What `npm run bench:wrapper` writes for the wrapper it measures.
export { renderWrapperConfig } from "./lib/links/runc-wrapper/render";
