/**
 * The settings' docs reach the package's `.d.ts` as JSDoc, written once: each interface the build
 * writes from a schema (the `*.generated.ts` of SETTINGS_INTERFACES) is what the schema gives, and
 * the built entry's GpuWorkerArgs, ConcourseWebArgs and KubernetesGpuNodesArgs
 * (dist/components/index.d.ts, as a consumer's editor reads it) carry each setting's description
 * and default on its field, read with the TypeScript checker.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";
import { z } from "zod";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { fieldDocs } from "../../components/lib/settings/schema-docs";
import { SETTINGS_INTERFACES, settingsInterfaceSource } from "../../stacks/config/settings-types";
import { settingsSchema } from "../../components/lib/settings/settings";
import { webSettingsSchema } from "../../components/lib/settings/web-settings";
import { kubernetesSettingsSchema } from "../../components/lib/kubernetes/settings";

/** Each component's args with the schema of its settings, and the fields it writes itself in place of the schema's. */
const ARGS: { args: string; schema: z.ZodObject; own: string[] }[] = [
    { args: "GpuWorkerArgs", schema: settingsSchema, own: ["concourse.tsaPublicKey"] },
    { args: "ConcourseWebArgs", schema: webSettingsSchema, own: [] },
    { args: "KubernetesGpuNodesArgs", schema: kubernetesSettingsSchema, own: [] },
];

describe("the settings' docs as JSDoc, from the one schema", function () {
    this.timeout(60000);

    for (const spec of SETTINGS_INTERFACES) {
        it(`${spec.file} is what ${spec.schemaName} gives (npm run build writes it)`, () => {
            assert.strictEqual(fs.readFileSync(path.join(PACKAGE_ROOT, spec.file), "utf8"), settingsInterfaceSource(spec));
        });
    }

    it("each interface is written from one of the components' settings schemas, and each of those has one", () => {
        assert.deepStrictEqual(
            SETTINGS_INTERFACES.map((s) => s.schema),
            ARGS.map((a) => a.schema),
        );
    });

    for (const { args: argsName, schema, own } of ARGS)
        it(`the built entry's ${argsName} carries each setting's description and default on its field`, () => {
            const entry = path.join(PACKAGE_ROOT, "dist", "components", "index.d.ts");
            const program = ts.createProgram([entry], { strict: true, noEmit: true, skipLibCheck: true, types: ["node"] });
            const checker = program.getTypeChecker();
            const args = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!).find((s) => s.name === argsName);
            assert.ok(args, `the entry exports ${argsName}`);
            const argsType = checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(args));
            const docOf = (type: ts.Type, key: string): { doc: string; type: ts.Type } | undefined => {
                const property = checker.getPropertyOfType(type, key);
                if (!property) return undefined;
                const doc = ts.displayPartsToString(property.getDocumentationComment(checker));
                return { doc, type: checker.getNonNullableType(checker.getTypeOfSymbol(property)) };
            };
            const problems: string[] = [];
            const docs = fieldDocs(schema).filter((d) => !own.includes(d.path));
            for (const d of docs) {
                const [group, field] = d.path.split(".");
                const outer = docOf(argsType, group);
                const found = field === undefined ? outer : outer && docOf(outer.type, field);
                if (!found) problems.push(`${d.path}: no such field`);
                else if (!found.doc.includes(d.description!)) problems.push(`${d.path}: its JSDoc is ${JSON.stringify(found.doc)}`);
                else if (d.default !== undefined && !found.doc.includes(`Default: ${d.default}.`))
                    problems.push(`${d.path}: its JSDoc gives no default ${d.default}`);
            }
            assert.deepStrictEqual(problems, []);
            assert.ok(docs.length > 3, `${docs.length} settings`);
        });

    it("a setting without a description is refused, by its path", () => {
        const schema = z.strictObject({ group: z.strictObject({ bare: z.string() }).meta({ description: "a group" }) });
        assert.throws(() => settingsInterfaceSource({ ...SETTINGS_INTERFACES[0], schema, layer: false }), /group\.bare: the schema gives no description/);
    });
});
