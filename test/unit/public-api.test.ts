/**
 * The package's public face (components/index.ts, what `gpu-workers` resolves to, and the
 * only module its `exports` map lets a consumer import): every component with the argument
 * type its constructor takes, the schemas, planHost and discovery; none of the planner's
 * internals (the chain's settings, the renderers, the rule for a path placed twice, the host
 * step model) and nothing the program alone uses (components/program.ts).
 */
import * as assert from "assert";
import * as fs from "fs";
import { createRequire } from "module";
import * as os from "os";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

const COMPONENTS = [
    "GpuWorker",
    "GpuHost",
    "GpuDriver",
    "ContainerToolkit",
    "ContainerdRuntime",
    "RuncWrapper",
    "WorkerValidator",
    "GpuMetrics",
    "FabricManager",
    "FabricServiceVm",
    "SharedGpuBoard",
    "ConcourseWorker",
    "GpuHealth",
    "GpuMps",
    "ConcourseWeb",
    "KubernetesGpuNodes",
];
/** Every name the package exports, sorted: a name given to or taken from consumers shows here. */
const PUBLIC_FACE = [
    "ALLOCATION_MODES",
    "AccessShape",
    "AllocationMode",
    "Artifact",
    "ArtifactSource",
    "BUILTIN_PARTITION_TABLES",
    "BoardPlan",
    "BuildArtifacts",
    "ConcourseRelease",
    "ConcourseWeb",
    "ConcourseWebArgs",
    "ConcourseWebArgsError",
    "ConcourseWebDatabase",
    "ConcourseWorker",
    "ConcourseWorkerArgs",
    "ConcourseWorkerExtras",
    "ConcourseWorkerGiven",
    "ConcourseWorkerTerms",
    "ContainerToolkit",
    "ContainerToolkitArgs",
    "ContainerToolkitTerms",
    "ContainerdRuntime",
    "ContainerdRuntimeArgs",
    "ContainerdRuntimeTerms",
    "DEFAULT_HOST_STEPS",
    "DEFAULT_PARTITION_TABLE",
    "DatasetTerms",
    "DeviceLink",
    "DiscoveryDocument",
    "DiscoveryDocumentError",
    "DiscoveryResult",
    "FabricManager",
    "FabricManagerArgs",
    "FabricManagerMode",
    "FabricPartition",
    "FabricServiceVm",
    "FabricServiceVmArgs",
    "FoundGpu",
    "FoundVendor",
    "GPU_NODE_LABEL",
    "Gpu",
    "GpuAllocation",
    "GpuDriver",
    "GpuDriverArgs",
    "GpuDriverTerms",
    "GpuHealth",
    "GpuHealthArgs",
    "GpuHealthTerms",
    "GpuHost",
    "GpuHostArgs",
    "GpuInventory",
    "GpuInventoryInput",
    "GpuMetrics",
    "GpuMetricsArgs",
    "GpuMetricsTerms",
    "GpuMps",
    "GpuMpsArgs",
    "GpuMpsTerms",
    "GpuNodeTerms",
    "GpuSelection",
    "GpuUnit",
    "GpuVendor",
    "GpuWorker",
    "GpuWorkerArgs",
    "GpuWorkerArgsError",
    "GpuWorkerLxdTransport",
    "HOST_STEP_TRANSPORTS",
    "HostAccessArgs",
    "HostAccessPlan",
    "HostConnection",
    "HostConnectionInput",
    "HostPlan",
    "HostShape",
    "HostStepTransport",
    "KubernetesGpuNodes",
    "KubernetesGpuNodesArgs",
    "KubernetesGpuNodesArgsError",
    "KubernetesSettingsInput",
    "LXD_TRANSPORT_DEFAULTS",
    "LeafArgs",
    "LxdHostTransport",
    "LxdServerArg",
    "LxdWebTransport",
    "MigInstance",
    "ModelSource",
    "PRIVILEGED_MODES",
    "PartitionPlanError",
    "PartitionTable",
    "PlanError",
    "PlannedFile",
    "PlannedLink",
    "PlannedPart",
    "PlannedPartition",
    "PlannedRelease",
    "PlannedStep",
    "PrivilegedMode",
    "REGISTRATION_TIMEOUT_SECONDS",
    "RUNC_CVE_POLICIES",
    "RUNTIME_CLASS_NAMES",
    "RUNTIME_OFFERS",
    "RuncCvePolicy",
    "RuncWrapper",
    "RuncWrapperArgs",
    "RuncWrapperTerms",
    "RuntimeOffer",
    "SERVICE_VM_DEFAULTS",
    "SPEC_FEATURES",
    "SSH_PORT_DEFAULT",
    "SSH_USER_DEFAULT",
    "ServiceVmSpec",
    "SettingsLayer",
    "SharedGpuBoard",
    "SharedGpuBoardArgs",
    "SharedGpuBoardWorker",
    "SpecFeature",
    "SshHostShape",
    "SshHostTransport",
    "SshJumpHost",
    "SshProxy",
    "SshTarget",
    "StepsLink",
    "TenantTerms",
    "Transport",
    "UnitMount",
    "VERIFY_FIELDS",
    "VerificationResult",
    "VerifyField",
    "VerifyOptions",
    "WORKER_DEFAULTS",
    "WebAdmission",
    "WebForWorkers",
    "WebKeysTarget",
    "WebPlan",
    "WebSettingsInput",
    "WithInputs",
    "WorkerFabricPartition",
    "WorkerGpuPlan",
    "WorkerPlanning",
    "WorkerSettings",
    "WorkerSettingsLayer",
    "WorkerSpec",
    "WorkerValidator",
    "WorkerValidatorArgs",
    "WorkerValidatorTerms",
    "WrapperRuntime",
    "compareInventory",
    "discoveryDocumentSchema",
    "externalDatabaseFields",
    "formatVerification",
    "gpuSchema",
    "hostStepsSchema",
    "inventorySchema",
    "kubernetesSettingsSchema",
    "localDatabaseSchema",
    "lxd",
    "lxdTransportSchema",
    "lxdWebTransportSchema",
    "lxdWorkerTransportSchema",
    "migInstanceSchema",
    "parseDiscoveryDocument",
    "partitionListSchema",
    "planHost",
    "readDiscoveryDocument",
    "renderInventoryYaml",
    "settingsSchema",
    "sshJumpHostSchema",
    "sshPlanSchema",
    "sshTransportSchema",
    "tenantSchema",
    "verifyOptionsSchema",
    "webSettingsSchema",
    "workerSpec",
];
const INTERNAL = [
    "placeOnce",
    "Placement",
    "chainSettings",
    "ChainSettings",
    "renderChain",
    "ChainLink",
    "chainDriftCheck",
    "planGpuHost",
    "GpuHostPlan",
    "HostStepsComponent",
    "HostCommand",
    "HostFile",
    "HostStep",
    "RenderedComponent",
    "shellQuote",
    "shellCommand",
    "asRoot",
    "selectGpus",
    "GPU_CONTROL_VARIABLES",
    "planPartitions",
    "wrapperTerms",
    "toolkitTerms",
    "planRuncWrapper",
    "planContainerToolkit",
    // The program's own (components/program.ts): its config's merge rule, value forms and checks, the docs, the render's other plans.
    "mergeSettings",
    "isPlainObject",
    "WHOLE_VALUES",
    "port",
    "posixUser",
    "onTransport",
    "fieldDocs",
    "settingsTable",
    "planWorkerGpus",
    "planWorkerAdmission",
    "planWebHost",
    "planBoard",
    "boardSpec",
    "webSpec",
    "kubernetesGpuNodesObjects",
    "LOCAL_ARTIFACTS",
    "UNREAD_ARTIFACTS",
    "readHostScript",
    "interpretDiscovery",
];

describe("the public face (components/index.ts)", function () {
    this.timeout(60000);
    let checker: ts.TypeChecker;
    let exported: Map<string, ts.Symbol>;

    before(() => {
        const entry = path.join(PACKAGE_ROOT, "components", "index.ts");
        const program = ts.createProgram([entry], {
            strict: true,
            noEmit: true,
            module: ts.ModuleKind.CommonJS,
            target: ts.ScriptTarget.ES2022,
            esModuleInterop: true,
            skipLibCheck: true,
            types: ["node"],
        });
        checker = program.getTypeChecker();
        exported = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!).map((s) => [s.name, s]));
    });

    it("exports exactly the names of its list", () => {
        assert.deepStrictEqual([...exported.keys()].sort(), PUBLIC_FACE);
    });

    it("exports every component and the argument type its constructor takes", () => {
        const missing = [...COMPONENTS, ...COMPONENTS.map((c) => `${c}Args`)].filter((name) => !exported.has(name));
        assert.deepStrictEqual(missing, []);
        for (const component of COMPONENTS) {
            const symbol = exported.get(component)!;
            const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
            const [construct] = checker.getTypeOfSymbol(target).getConstructSignatures();
            const args = checker.getTypeOfSymbol(construct.getParameters()[1]);
            assert.strictEqual(args.aliasSymbol?.name ?? args.getSymbol()?.name, `${component}Args`, `${component} takes ${component}Args`);
        }
    });

    it("exports none of the planner's internals and none of the program's own: no renderer, no component's inner settings, no validator", () => {
        const leaked = [...exported.keys()].filter(
            (name) =>
                INTERNAL.includes(name) ||
                (/^render/.test(name) && name !== "renderInventoryYaml") ||
                /Problems?$/.test(name) ||
                (/^[A-Z]\w*Settings$/.test(name) && name !== "WorkerSettings"),
        );
        assert.deepStrictEqual(leaked, []);
    });
});

describe("the package's exports map, as a consumer's require sees it", () => {
    let consumer: string;
    let requireFromConsumer: NodeJS.Require;

    before(() => {
        // A consumer's project with the package installed: its package.json and built dist/, linked.
        consumer = fs.mkdtempSync(path.join(os.tmpdir(), "gw-exports-"));
        const installed = path.join(consumer, "node_modules", "gpu-workers");
        fs.mkdirSync(installed, { recursive: true });
        for (const entry of ["package.json", "dist"]) fs.symlinkSync(path.join(PACKAGE_ROOT, entry), path.join(installed, entry));
        requireFromConsumer = createRequire(path.join(consumer, "index.js"));
    });

    after(() => fs.rmSync(consumer, { recursive: true, force: true }));

    it("resolves the package to the public face", () => {
        assert.strictEqual(requireFromConsumer.resolve("gpu-workers"), path.join(PACKAGE_ROOT, "dist", "components", "index.js"));
    });

    for (const internal of ["gpu-workers/dist/components/lib/plan/host-plan", "gpu-workers/dist/components/program", "gpu-workers/dist/components/index.js"]) {
        it(`refuses ${internal}`, () => {
            assert.throws(() => requireFromConsumer.resolve(internal), { code: "ERR_PACKAGE_PATH_NOT_EXPORTED" });
        });
    }
});
