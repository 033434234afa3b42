/**
 * scripts/langhost-options.js, run by node as the engine bootstrap's language-host launcher runs
 * it: the runtime options of the Pulumi.yaml around the working folder, as the flags of the
 * older language host; a project it cannot read stops the launch with the file named.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

const READER = path.join(PACKAGE_ROOT, "scripts", "langhost-options.js");

describe("the language host's options reader", () => {
    let project: string;
    beforeEach(() => {
        project = fs.mkdtempSync(path.join(os.tmpdir(), "langhost-options-"));
        // @pulumi/pulumi (and js-yaml with it) as a project has it installed.
        fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules"), path.join(project, "node_modules"));
        fs.mkdirSync(path.join(project, "dist"));
    });
    afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

    function read(yaml: string, cwd = path.join(project, "dist"), file = "Pulumi.yaml") {
        fs.writeFileSync(path.join(project, file), yaml);
        const r = spawnSync(process.execPath, [READER], { cwd, encoding: "utf8" });
        return { status: r.status, flags: r.stdout.split("\n").filter(Boolean), stderr: r.stderr };
    }

    it("passes typescript, tsconfig and nodeargs from the project above the program's folder, one flag a line", () => {
        const r = read(
            [
                "name: p",
                "runtime:",
                "  name: nodejs",
                "  options:",
                "    typescript: false",
                "    nodeargs: --max-old-space-size=4096 --trace-warnings",
                "    tsconfig: tsconfig.build.json",
                "    packagemanager: npm",
                "main: dist/index.js",
                "",
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(r.flags, ["-typescript=false", "-tsconfig=tsconfig.build.json", "-nodeargs=--max-old-space-size=4096 --trace-warnings"]);
    });

    it("passes nothing where the project sets no options (the host's defaults), and reads Pulumi.yml too", () => {
        assert.deepStrictEqual(read("name: p\nruntime: nodejs\n", project).flags, []);
        fs.rmSync(path.join(project, "Pulumi.yaml"));
        assert.deepStrictEqual(read("name: p\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n", project, "Pulumi.yml").flags, [
            "-typescript=false",
        ]);
    });

    it("stops with the file named where the project cannot be read or an option is not a plain value", () => {
        const broken = read("name: p\nruntime: [nodejs\n");
        assert.strictEqual(broken.status, 1);
        assert.match(broken.stderr, /^pulumi-language-nodejs: .*Pulumi\.yaml: /);
        const nested = read("name: p\nruntime:\n  name: nodejs\n  options:\n    nodeargs: [--a]\n");
        assert.strictEqual(nested.status, 1);
        assert.match(nested.stderr, /Pulumi\.yaml: runtime\.options\.nodeargs must be a string or a boolean/);
    });
});
