/**
 * Every type the public face names can be named by a consumer: the built entry's `.d.ts`
 * (dist/components/index.d.ts, what an installed package's `types` resolves to) is walked
 * with the TypeScript compiler, from each exported declaration through every type and value
 * its public parts name (type references, `extends` and `implements`, `typeof`), and each one
 * declared in the package must be exported from the entry too (or from a namespace it exports,
 * such as `lxd`). A consumer who writes the type of an argument by its name can then import it.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

const DIST = path.join(PACKAGE_ROOT, "dist", "components");

/** The exports of a module and of the namespaces it exports, aliases resolved: what a consumer can name. */
function reachableExports(checker: ts.TypeChecker, module: ts.Symbol, seen = new Set<ts.Symbol>()): Set<ts.Symbol> {
    for (const exported of checker.getExportsOfModule(module)) {
        const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
        if (seen.has(target)) continue;
        seen.add(target);
        if (target.flags & ts.SymbolFlags.ValueModule || target.flags & ts.SymbolFlags.NamespaceModule) reachableExports(checker, target, seen);
    }
    return seen;
}

/** Whether a declaration is the package's own (its .d.ts files under `root`), not TypeScript's, Node's, zod's or Pulumi's. */
function inPackage(declaration: ts.Declaration, root: string): boolean {
    const file = declaration.getSourceFile().fileName;
    return file.startsWith(root + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
}

/** A member no consumer sees: private or protected (the `.d.ts` names no type of it anyway). */
function hidden(node: ts.Node): boolean {
    return (
        ts.canHaveModifiers(node) &&
        (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword)
    );
}

/** The names a declaration's public parts use, each with the node that names it. */
function namesUsed(declaration: ts.Node): ts.Node[] {
    const out: ts.Node[] = [];
    const visit = (node: ts.Node): void => {
        if (hidden(node)) return;
        if (ts.isTypeReferenceNode(node)) out.push(node.typeName);
        else if (ts.isExpressionWithTypeArguments(node)) out.push(node.expression);
        else if (ts.isTypeQueryNode(node)) out.push(node.exprName);
        else if (ts.isImportTypeNode(node) && node.qualifier) out.push(node.qualifier);
        ts.forEachChild(node, visit);
    };
    visit(declaration);
    return out;
}

/** Every type or value declared in the package that an exported declaration names but the entry does not export, with the exports that name it. */
export function unexportedNames(entry: string, root = path.dirname(entry)): Map<string, string[]> {
    const program = ts.createProgram([entry], { strict: true, noEmit: true, skipLibCheck: true, types: ["node"] });
    const checker = program.getTypeChecker();
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
    const exported = reachableExports(checker, module);
    const named = new Map<string, Set<string>>();
    for (const symbol of exported) {
        for (const declaration of symbol.declarations ?? []) {
            if (!inPackage(declaration, root) || ts.isSourceFile(declaration) || ts.isModuleDeclaration(declaration)) continue;
            for (const name of namesUsed(declaration)) {
                let used = checker.getSymbolAtLocation(name);
                if (!used) continue;
                if (used.flags & ts.SymbolFlags.Alias) used = checker.getAliasedSymbol(used);
                if (used.flags & ts.SymbolFlags.TypeParameter || exported.has(used)) continue;
                if (!(used.declarations ?? []).some((d) => inPackage(d, root))) continue;
                named.set(used.name, (named.get(used.name) ?? new Set()).add(symbol.name));
            }
        }
    }
    return new Map([...named].sort(([a], [b]) => a.localeCompare(b)).map(([name, by]) => [name, [...by].sort()]));
}

/**
 * The planner's internals that public types name and the public face keeps out all the same
 * (public-api.test.ts: the host step model, the chain's links, each component's inner settings):
 * a consumer meets them only as values GpuWorker's plan hands a component (`planned`, planHost's
 * result) or as the components' common base class, and never writes one. Each must still be named
 * (a stale entry fails), and nothing else may be left out.
 */
const INTERNAL_NAMED = [
    "ChainLink",
    "ConcourseWebSettings",
    "ConcourseWorkerSettings",
    "ContainerToolkitSettings",
    "ContainerdRuntimeSettings",
    "FabricManagerSettings",
    "FabricServiceVmSettings",
    "GpuDriverSettings",
    "GpuHealthSettings",
    "GpuHostPlan",
    "GpuMetricsSettings",
    "GpuMpsSettings",
    "HostFile",
    "HostStepsComponent",
    "RenderedComponent",
    "RuncWrapperSettings",
    "WorkerValidatorSettings",
];

describe("the types the public face names (dist/components/index.d.ts)", function () {
    this.timeout(60000);
    const entry = path.join(DIST, "index.d.ts");

    it("names no type the package does not export, but the planner's internals the public face keeps out: a consumer can import each", () => {
        assert.ok(fs.existsSync(entry), `${entry} is built (npm run build)`);
        const named = unexportedNames(entry);
        const left = [...named].filter(([name]) => !INTERNAL_NAMED.includes(name)).map(([name, by]) => `${name} (named by ${by.join(", ")})`);
        assert.deepStrictEqual(left, [], "export each from components/index.ts (or from the namespace that names it)");
        assert.deepStrictEqual(
            INTERNAL_NAMED.filter((name) => !named.has(name)),
            [],
            "no public type names these any more: take them off INTERNAL_NAMED",
        );
    });

    it("the walk finds a type left unexported: a public interface naming one of the module's own", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-walk-"));
        try {
            fs.writeFileSync(path.join(dir, "inner.d.ts"), "export interface Hidden { a: string }\nexport interface Shown { b: string }\n");
            fs.writeFileSync(
                path.join(dir, "index.d.ts"),
                'import { Hidden, Shown } from "./inner";\nexport { Shown } from "./inner";\nexport interface Args { hidden: Hidden; shown: Shown; private?: Promise<Hidden[]> }\n',
            );
            assert.deepStrictEqual([...unexportedNames(path.join(dir, "index.d.ts"))], [["Hidden", ["Args"]]]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
