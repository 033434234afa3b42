/** The README's example of importing components from another repo type-checks against the API. */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

describe("README examples", () => {
    const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const start = readme.indexOf("## Using the components from another repo");
    const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
    const examples = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);

    it("the section on other repos has its examples", () => {
        assert.ok(examples.length >= 2, "a component-by-component example and a GpuWorker one");
    });

    examples.forEach((code, i) =>
        it(`example ${i + 1} compiles against components/index.ts`, function () {
            this.timeout(60000);
            const file = path.join(PACKAGE_ROOT, "test", "readme-example.generated.ts");
            fs.writeFileSync(file, code.replace(/from "gpu-workers"/g, 'from "../components"'));
            try {
                const program = ts.createProgram([file], {
                    strict: true,
                    noEmit: true,
                    module: ts.ModuleKind.CommonJS,
                    target: ts.ScriptTarget.ES2022,
                    esModuleInterop: true,
                    skipLibCheck: true,
                    types: ["node"],
                });
                const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
                assert.deepStrictEqual(problems, []);
            } finally {
                fs.rmSync(file, { force: true });
            }
        }),
    );
});
