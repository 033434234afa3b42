/**
 * The settings' docs reach the package's `.d.ts` as JSDoc, written once: the interface the build
 * writes from the schema (settings-layer.generated.ts) is what the schema gives, and the built
 * entry's GpuWorkerArgs (dist/components/index.d.ts, as a consumer's editor reads it) carries
 * each setting's description and default on its field, read with the TypeScript checker.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";
import { z } from "zod";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { fieldDocs } from "../../components/lib/settings/schema-docs";
import { SETTINGS_INTERFACE_FILE, settingsInterfaceSource } from "../../components/lib/settings/settings-interface";
import { settingsSchema } from "../../components/lib/settings/settings";

/** GpuWorkerArgs' own fields, which it writes itself in place of the schema's. */
const OWN_FIELDS = ["concourse.tsaPublicKey"];

describe("the settings' docs as JSDoc, from the one schema", function () {
    this.timeout(60000);

    it("settings-layer.generated.ts is what the schema gives (npm run build writes it)", () => {
        assert.strictEqual(fs.readFileSync(path.join(PACKAGE_ROOT, SETTINGS_INTERFACE_FILE), "utf8"), settingsInterfaceSource());
    });

    it("the built entry's GpuWorkerArgs carries each setting's description and default on its field", () => {
        const entry = path.join(PACKAGE_ROOT, "dist", "components", "index.d.ts");
        const program = ts.createProgram([entry], { strict: true, noEmit: true, skipLibCheck: true, types: ["node"] });
        const checker = program.getTypeChecker();
        const args = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!).find((s) => s.name === "GpuWorkerArgs");
        assert.ok(args, "the entry exports GpuWorkerArgs");
        const argsType = checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(args));
        const docOf = (type: ts.Type, key: string): { doc: string; type: ts.Type } | undefined => {
            const property = checker.getPropertyOfType(type, key);
            if (!property) return undefined;
            const doc = ts.displayPartsToString(property.getDocumentationComment(checker));
            return { doc, type: checker.getNonNullableType(checker.getTypeOfSymbol(property)) };
        };
        const problems: string[] = [];
        const docs = fieldDocs(settingsSchema).filter((d) => !OWN_FIELDS.includes(d.path));
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
        assert.ok(docs.length > 20, `${docs.length} settings`);
    });

    it("a setting without a description is refused, by its path", () => {
        const schema = z.strictObject({ group: z.strictObject({ bare: z.string() }).meta({ description: "a group" }) });
        assert.throws(() => settingsInterfaceSource(schema), /group\.bare: the schema gives no description/);
    });
});
