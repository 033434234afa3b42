/**
 * The package's public API (components/index.ts, what `gpu-workers` resolves to): every
 * component with the argument type its constructor takes, the inventory schema, the plans
 * and discovery; none of the planner's internals (the chain's settings, the renderers, the
 * rule for a path placed twice, the host step model).
 */
import * as assert from "assert";
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
    "FabricManager",
    "FabricServiceVm",
    "SharedGpuBoard",
    "ConcourseWorker",
    "ConcourseWeb",
];
const REQUIRED = [
    "WebForWorkers",
    "inventorySchema",
    "GpuInventory",
    "settingsSchema",
    "WORKER_DEFAULTS",
    "planHost",
    "workerSpec",
    "planBoard",
    "planWebHost",
    "parseDiscoveryDocument",
    "readDiscoveryDocument",
    "compareInventory",
    "HostAccessArgs",
    "lxd",
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
];

describe("the public API (components/index.ts)", function () {
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

    it("exports every component, the argument type its constructor takes, and what a program needs besides", () => {
        const missing = [...COMPONENTS, ...COMPONENTS.map((c) => `${c}Args`), ...REQUIRED].filter((name) => !exported.has(name));
        assert.deepStrictEqual(missing, []);
        for (const component of COMPONENTS) {
            const symbol = exported.get(component)!;
            const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
            const [construct] = checker.getTypeOfSymbol(target).getConstructSignatures();
            const args = checker.getTypeOfSymbol(construct.getParameters()[1]);
            assert.strictEqual(args.aliasSymbol?.name ?? args.getSymbol()?.name, `${component}Args`, `${component} takes ${component}Args`);
        }
    });

    it("exports none of the planner's internals: no renderer, no component's inner settings", () => {
        const leaked = [...exported.keys()].filter(
            (name) =>
                INTERNAL.includes(name) ||
                (/^render/.test(name) && name !== "renderInventoryYaml") ||
                (/^[A-Z]\w*Settings$/.test(name) && name !== "WorkerSettings"),
        );
        assert.deepStrictEqual(leaked, []);
    });
});
