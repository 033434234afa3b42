/**
 * Every field of an exported `*Args` or `*Settings` type carries a doc where it is declared: a
 * doc comment, or for a field that comes from a zod schema, `.meta({ description })` (or
 * `.describe()`) on its own schema. Read with the TypeScript checker, so that a field reached
 * through Omit, a mapped type or z.input is found at its declaration.
 */
import * as assert from "assert";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

const EXPORTED_CONTRACT = /(Args|Settings)$/;

function program(): ts.Program {
    const configPath = path.join(PACKAGE_ROOT, "tsconfig.json");
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, (f) => ts.sys.readFile(f)).config, ts.sys, PACKAGE_ROOT);
    return ts.createProgram(
        config.fileNames.filter((f) => f.startsWith(path.join(PACKAGE_ROOT, "components") + path.sep)),
        { ...config.options, noEmit: true },
    );
}

function inProject(d: ts.Declaration): boolean {
    const file = d.getSourceFile().fileName;
    return file.startsWith(PACKAGE_ROOT + path.sep) && !file.includes(`${path.sep}node_modules${path.sep}`);
}

/** The methods called on a schema, outermost first: `a.optional().meta({...})` gives meta, optional. */
function chainCalls(expr: ts.Expression): ts.CallExpression[] {
    const out: ts.CallExpression[] = [];
    let e: ts.Expression = expr;
    while (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression)) {
        out.push(e);
        e = e.expression.expression;
    }
    return out;
}

/** A zod field's own description: `.describe("...")`, or `.meta({ description })` on its chain (not inside its arguments). */
function hasSchemaDescription(d: ts.Declaration): boolean {
    if (!ts.isPropertyAssignment(d)) return false;
    return chainCalls(d.initializer).some((call) => {
        const method = (call.expression as ts.PropertyAccessExpression).name.text;
        if (method === "describe") return true;
        const arg = call.arguments[0];
        return (
            method === "meta" &&
            arg !== undefined &&
            ts.isObjectLiteralExpression(arg) &&
            arg.properties.some((p) => p.name !== undefined && ts.isIdentifier(p.name) && p.name.text === "description")
        );
    });
}

/** Fields without a doc, as `Type.path (file)`, walking into object types declared in the project. */
function undocumented(p: ts.Program): { total: number; missing: string[] } {
    const checker = p.getTypeChecker();
    const seen = new Set<string>();
    const missing: string[] = [];
    let total = 0;
    const walk = (type: ts.Type, where: string, depth: number): void => {
        for (const prop of checker.getPropertiesOfType(type)) {
            const decls = (prop.declarations ?? []).filter(inProject);
            if (decls.length === 0) continue;
            const key = decls.map((d) => `${d.getSourceFile().fileName}:${d.pos}`).join(",");
            if (seen.has(key)) continue;
            seen.add(key);
            total++;
            const name = `${where}.${prop.name}`;
            const doc = ts.displayPartsToString(prop.getDocumentationComment(checker)).trim() !== "" || decls.some(hasSchemaDescription);
            if (!doc) missing.push(`${name} (${path.relative(PACKAGE_ROOT, decls[0].getSourceFile().fileName)})`);
            if (depth >= 4) continue;
            const value = checker.getNonNullableType(checker.getTypeOfSymbol(prop));
            for (const part of value.isUnion() ? value.types : [value]) {
                if (part.flags & ts.TypeFlags.Intersection) {
                    walk(part, name, depth + 1);
                    continue;
                }
                if (!(part.flags & ts.TypeFlags.Object) || checker.isArrayType(part) || part.getCallSignatures().length > 0) continue;
                // Anonymous shapes (type literals, zod shapes, mapped types such as Omit or z.input) belong
                // to this field, wherever the mapping is declared; named types are checked where exported.
                const shapes = part.getSymbol()?.declarations ?? [];
                const anonymous = shapes.every((s) => ts.isTypeLiteralNode(s) || ts.isObjectLiteralExpression(s) || ts.isMappedTypeNode(s));
                if (anonymous) walk(part, name, depth + 1);
            }
        }
    };
    for (const file of p.getSourceFiles()) {
        if (!inProject(file) || file.isDeclarationFile) continue;
        for (const statement of file.statements) {
            if (!ts.isInterfaceDeclaration(statement) && !ts.isTypeAliasDeclaration(statement)) continue;
            if (!EXPORTED_CONTRACT.test(statement.name.text)) continue;
            if (!statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
            walk(checker.getTypeAtLocation(statement.name), statement.name.text, 0);
        }
    }
    return { total, missing };
}

describe("docs of the components' arguments", function () {
    this.timeout(120_000);

    it("every field of an exported *Args or *Settings type carries a doc", () => {
        const { total, missing } = undocumented(program());
        assert.ok(total > 150, `only ${total} fields found: the walk lost its way`);
        assert.deepStrictEqual(missing, []);
    });
});
