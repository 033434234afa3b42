/** The README's example of importing components from another repo type-checks against the API. */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/host-scripts";

describe("README example", () => {
    it("compiles against components/index.ts", function () {
        this.timeout(60000);
        const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
        const section = readme.slice(readme.indexOf("## Using the components from another repo"));
        const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
        assert.ok(code, "the README has a ts example in that section");
        const file = path.join(PACKAGE_ROOT, "test", "readme-example.generated.ts");
        fs.writeFileSync(file, code.replace(/from "gpu-workers"/g, 'from "../components"'));
        try {
            const program = ts.createProgram([file], { strict: true, noEmit: true, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, skipLibCheck: true, types: ["node"] });
            const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
            assert.deepStrictEqual(problems, []);
        } finally {
            fs.rmSync(file, { force: true });
        }
    });
});
