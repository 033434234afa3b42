/**
 * The README's example of GpuHost, GpuDriver and RuncWrapper used alone, as a consumer writes
 * it: compiled by tsc against the package's entry point (its package.json types, as an
 * installed package resolves) and run under Pulumi mocks, where it must build the graph it
 * describes.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { RUNC_REAL_PATH } from "../../components/lib/links/runc-wrapper/render";
import { GraphRecorder, HOST_COMMAND_TYPES, recordGraph, RecordedResource, settle } from "../support/pulumi-graph";
import { PUB } from "../fixtures/ssh-keys/keys";

/** The README's ```ts block that builds a RuncWrapper by itself. */
function componentsExample(): string {
    const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)]
        .map((m) => m[1])
        .filter((code) => code.includes("new GpuHost(") && code.includes("new RuncWrapper(") && !code.includes("new GpuWorker("));
    assert.strictEqual(blocks.length, 1, "the README has one example of the components used alone");
    return blocks[0];
}

/** A consumer project whose node_modules hold this package and the packages it takes from its consumer. */
function consumerProject(code: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-readme-"));
    fs.mkdirSync(path.join(dir, "node_modules"));
    fs.symlinkSync(PACKAGE_ROOT, path.join(dir, "node_modules", "gpu-workers"));
    for (const scope of ["@pulumi", "@types"]) fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules", scope), path.join(dir, "node_modules", scope));
    fs.writeFileSync(path.join(dir, "index.ts"), code);
    return dir;
}

describe("the README's components-alone example (tsc, then Pulumi mocks)", function () {
    this.timeout(120000);
    let project: string;
    let graph: GraphRecorder;
    const component = (type: string, name: string) => graph.resources.find((r) => r.type === type && r.name === name);
    /** The host commands (files and steps) a component made, by whichever transport the example chose. */
    const children = (parent: RecordedResource) => graph.resources.filter((r) => r.parent === parent.urn && HOST_COMMAND_TYPES.includes(r.type));

    before(async () => {
        project = consumerProject(componentsExample());
        const program = ts.createProgram([path.join(project, "index.ts")], {
            strict: true,
            module: ts.ModuleKind.CommonJS,
            moduleResolution: ts.ModuleResolutionKind.Node10,
            target: ts.ScriptTarget.ES2022,
            esModuleInterop: true,
            skipLibCheck: true,
            types: ["node"],
            outDir: path.join(project, "out"),
        });
        const emitted = program.emit();
        const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map(
            (d) => `${d.file ? path.relative(project, d.file.fileName) : ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
        );
        assert.deepStrictEqual(problems, [], "the example compiles against the package's entry point");
        graph = recordGraph();
        pulumi.runtime.setConfig("gpu-workers:sshKey", "-----BEGIN OPENSSH PRIVATE KEY-----\nmock\n-----END OPENSSH PRIVATE KEY-----\n");
        pulumi.runtime.setConfig("gpu-workers:hostKey", PUB.ed25519);
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- runs the example the test just compiled, as Pulumi would
        require(path.join(project, "out", "index.js"));
        await settle(graph);
    });

    after(() => {
        if (project) fs.rmSync(project, { recursive: true, force: true });
    });

    it("resolves gpu-workers to the package's declared entry point", () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as { main: string; types: string };
        assert.strictEqual(require.resolve("gpu-workers", { paths: [project] }), fs.realpathSync(path.join(PACKAGE_ROOT, pkg.main)));
        assert.ok(fs.existsSync(path.join(PACKAGE_ROOT, pkg.types)));
    });

    it("builds GpuHost, GpuDriver and RuncWrapper, and nothing of the rest of the chain", () => {
        const components = graph.resources
            .filter((r) => r.type.startsWith("gpu-workers:"))
            .map((r) => `${r.type}::${r.name}`)
            .sort();
        assert.deepStrictEqual(components, [
            "gpu-workers:driver:GpuDriver::gpu-a-driver",
            "gpu-workers:host:GpuHost::gpu-a",
            "gpu-workers:wrapper:RuncWrapper::gpu-a-wrapper",
        ]);
    });

    it("the wrapper planned from the inventory, selection and datasets: the AMD device nodes, runc behind it", () => {
        const wrapper = component("gpu-workers:wrapper:RuncWrapper", "gpu-a-wrapper")!;
        const config = graph.placed("/etc/gpu-workers/runc-wrapper.json");
        assert.ok(children(wrapper).includes(config.resource), "the wrapper's settings file is placed by one of its resources");
        const body = JSON.parse(config.content) as Record<string, unknown>;
        assert.deepStrictEqual(body.deviceNodes, ["/dev/kfd", "/dev/dri/renderD128"]);
        assert.deepStrictEqual((body.env as Record<string, string>).AMD_VISIBLE_DEVICES, "0");
        assert.strictEqual(body.datasetRoot, "/srv");
        assert.deepStrictEqual(body.writableSuffixes, ["_rw"]);
        assert.strictEqual(body.realRuntime, RUNC_REAL_PATH, "no toolkit on an AMD host: the wrapper hands containers to runc");
        assert.strictEqual(body.allowPrivileged, false);
    });

    it("its host steps run by the program's own SSH client, as the README's hostSteps says: no plugin to install", () => {
        const commands = graph.resources.filter((r) => HOST_COMMAND_TYPES.includes(r.type));
        assert.ok(commands.length > 0);
        assert.deepStrictEqual([...new Set(commands.map((r) => r.type))], ["pulumi-nodejs:dynamic/gpu-workers:SshCommand"]);
    });

    it("each component's host commands wait for the one before", () => {
        const host = component("gpu-workers:host:GpuHost", "gpu-a")!;
        const driver = component("gpu-workers:driver:GpuDriver", "gpu-a-driver")!;
        const wrapper = component("gpu-workers:wrapper:RuncWrapper", "gpu-a-wrapper")!;
        const hostResources = graph.resources.filter((r) => r.parent === host.urn);
        assert.ok(hostResources.length > 0 && children(driver).length > 0 && children(wrapper).length > 0);
        for (const d of children(driver)) for (const h of hostResources) assert.ok(graph.dependsOn(d, h), `${d.name} waits for ${h.name}`);
        for (const w of children(wrapper)) for (const d of children(driver)) assert.ok(graph.dependsOn(w, d), `${w.name} waits for ${d.name}`);
    });
});
