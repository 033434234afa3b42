/**
 * The package as another repo gets it: `npm pack`, installed into an empty consumer project
 * outside this repo, and a small TypeScript program there (a GpuWorker for one SSH host),
 * run once under Pulumi mocks and once as `pulumi preview` through the real engine against
 * a host nobody listens on: by the builtin transport, which needs no plugin, and by the
 * command transport where its plugin is supplied (pending without). Every ```ts example of the
 * README's section on other repos, exactly as written there, is compiled in the same consumer
 * project and previewed through the real engine, its config set as the example reads it. The
 * package's program and its `gpu-workers-fleet` bin run there too: a fleet of two racks whose
 * Pulumi.yaml names the packed program as its `main`, previewed by the bin through the real engine.
 */
import * as assert from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { ensureKubernetesTools, KUBERNETES_TOOLS_TIMEOUT_MS } from "../support/control-plane";
import { ensureEngine, setStackConfig } from "../support/engine";
import { makeScratch, scratchName } from "../support/scratch";
import { pendingWithout } from "../support/supplied";
import { HOST_KEY, PUB, TSA_KEY } from "../fixtures/ssh-keys/keys";

/** The files of the package's program and of its fleet driver: all the package holds outside the library. */
const PROGRAM_FILES = /^package\/dist\/(index\.js|stacks\/.+\.js|cli\/fleet\.js|cli\/fleet\/.+\.js)$/;

/** A package.json of this checkout's (its own, or an installed package's), read when the suite starts, never while mocha loads the file. */
function packageJson(file: string): { version: string; devDependencies: Record<string, string> } {
    return JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, file), "utf8"));
}

/** The ```ts blocks of the README's section on using the components from another repo, verbatim. */
function readmeExamples(): string[] {
    const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const start = readme.indexOf("## Using the components from another repo");
    assert.ok(start >= 0, "the README has its section on other repos");
    const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
    return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** The components an example constructs (`new Name(`), as the engine's types end. */
function constructed(code: string): string[] {
    return [...new Set([...code.matchAll(/\bnew (\w+)\(/g)].map((m) => m[1]))].filter((name) => name !== "Config");
}

const PROGRAM = `import * as pulumi from "@pulumi/pulumi";
import { GpuWorker, hostStepsSchema, inventorySchema } from "gpu-workers";

const config = new pulumi.Config();
const worker = new GpuWorker("gpu-a", {
    transport: { ssh: { host: "127.0.0.1", port: 1, privateKey: config.requireSecret("sshKey"), hostKey: config.require("hostKey") } },
    // The program's own SSH client (no plugin to install), unless the consumer's config says command.
    hostSteps: hostStepsSchema.parse(config.get("hostSteps") ?? "builtin"),
    inventory: inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA L4", memoryMiB: 23034 }] }),
    concourse: {
        tsaHost: "ci.example.test",
        tsaPublicKey: "${TSA_KEY}",
        binary: { url: "https://downloads.example.test/concourse.tgz", sha256: "${"0".repeat(64)}" },
    },
});
export const tags = worker.tags;
`;

const MOCKED = `const pulumi = require("@pulumi/pulumi");
const types = [];
pulumi.runtime.setMocks({
    newResource: (args) => {
        types.push(args.type + "::" + args.name);
        // A mock must give the outputs the program uses: the worker's generated key among them.
        const generated = args.type === "pulumi-nodejs:dynamic/gpu-workers:GeneratedSecret"
            ? { value: "-----BEGIN RSA PRIVATE KEY-----\\nmock\\n-----END RSA PRIVATE KEY-----\\n", publicKeyOpenssh: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABMock mock" }
            : {};
        return { id: args.name + "-id", state: { ...args.inputs, ...generated } };
    },
    call: (args) => args.inputs,
}, "consumer", "mocks", false);
pulumi.runtime.setConfig("consumer:sshKey", "-----BEGIN OPENSSH PRIVATE KEY-----\\nmock\\n-----END OPENSSH PRIVATE KEY-----");
pulumi.runtime.setConfig("consumer:hostKey", "${HOST_KEY}");
const program = require("./dist/index");
program.tags.apply((tags) => setTimeout(() => console.log(JSON.stringify({ tags, types })), 500));
`;

/** A kubeconfig of a cluster at an address nobody listens on: what a preview of KubernetesGpuNodes needs of one. */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: lab, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: admin, user: { token: readme-example } }]
contexts: [{ name: lab, context: { cluster: lab, user: admin } }]
current-context: lab
`;

function npm(cwd: string, args: string[]): string {
    return execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 300_000,
    });
}

describe("the npm package, installed by another project", function () {
    this.timeout(600_000);
    const root = scratchName("gw-consumer-");
    const consumer = path.join(root, "consumer");
    let tarball: string;
    const examples = readmeExamples();
    const exampleFile = (i: number) => `readme-${i + 1}.ts`;

    before(() => {
        makeScratch(root);
        // npm test has built everything: pack what is there, as `npm pack` would after its prepack build.
        const packed = JSON.parse(npm(PACKAGE_ROOT, ["pack", "--ignore-scripts", "--json", "--pack-destination", root]));
        tarball = path.join(root, packed[0].filename);
        fs.mkdirSync(consumer);
        fs.writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true }, null, 2));
        const pulumiVersion = packageJson("package.json").devDependencies["@pulumi/pulumi"];
        const typesNode = packageJson("node_modules/@types/node/package.json").version;
        npm(consumer, ["install", "--prefer-offline", tarball, `@pulumi/pulumi@${pulumiVersion}`, `@types/node@${typesNode}`]);
        fs.writeFileSync(path.join(consumer, "index.ts"), PROGRAM);
        examples.forEach((code, i) => fs.writeFileSync(path.join(consumer, exampleFile(i)), code));
        fs.writeFileSync(
            path.join(consumer, "tsconfig.json"),
            JSON.stringify(
                {
                    compilerOptions: {
                        strict: true,
                        target: "ES2022",
                        module: "commonjs",
                        outDir: "dist",
                        esModuleInterop: true,
                        skipLibCheck: true,
                        types: ["node"],
                    },
                    files: ["index.ts", ...examples.map((_, i) => exampleFile(i))],
                },
                null,
                2,
            ),
        );
        // tsc names each problem by file and line, on stdout: the README's examples among them.
        const tsc = spawnSync(process.execPath, [path.join(PACKAGE_ROOT, "node_modules/typescript/bin/tsc"), "-p", consumer], { encoding: "utf8" });
        assert.strictEqual(tsc.status, 0, `the consumer's program and the README's examples compile against the package:\n${tsc.stdout}${tsc.stderr}`);
    });

    after(() => fs.rmSync(root, { recursive: true, force: true }));

    it("the tarball holds the compiled JS, the types, the host scripts, the built wrapper, the program and the fleet driver, and no tests or tooling", () => {
        const list = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n").filter(Boolean);
        for (const f of [
            "package/dist/components/index.js",
            "package/dist/components/index.d.ts",
            "package/dist/wrapper/runc-wrapper",
            "package/dist/containerd-toml/containerd-toml",
            "package/dist/cdi-check/cdi-check",
            "package/host/install-runc-wrapper.sh",
            "package/host/discover-gpus.sh",
            "package/dist/components/providers/registry.js",
            "package/dist/index.js",
            "package/dist/stacks/program.js",
            "package/dist/cli/fleet.js",
            "package/dist/cli/fleet/member.js",
        ]) {
            assert.ok(list.includes(f), `${f} is packed`);
        }
        assert.deepStrictEqual(
            list.filter(
                (f) =>
                    /\/(test|bench|dev|wrapper\/[^/]+\.go)\b|\.ts$(?<!\.d\.ts)|\.map$/.test(f) ||
                    (/^package\/(dist\/index\.|dist\/stacks\/|dist\/cli\/)/.test(f) && !PROGRAM_FILES.test(f)),
            ),
            [],
            "nothing but the library, the program and the fleet driver: no other cli, no tests, benchmarks, Go sources or maps",
        );
        // What the program and the driver load, from the installed copy: every module is packed, and none is this checkout's.
        const installedDist = path.join(consumer, "node_modules/gpu-workers/dist");
        const walk = spawnSync(
            process.execPath,
            [
                "-e",
                `for (const f of ["cli/fleet.js", "cli/fleet/member.js", "index.js", "stacks/program.js"]) require(${JSON.stringify(installedDist)} + "/" + f);
                console.log(JSON.stringify(Object.keys(require.cache)));`,
            ],
            { cwd: consumer, encoding: "utf8", timeout: 60_000 },
        );
        assert.strictEqual(walk.status, 0, walk.stderr);
        const loaded = (JSON.parse(walk.stdout) as string[]).map((f) => fs.realpathSync(f));
        const ours = loaded.filter((f) => f.startsWith(fs.realpathSync(installedDist) + path.sep));
        assert.ok(ours.length > 20, `the installed program's modules: ${ours.join(", ")}`);
        assert.deepStrictEqual(
            loaded.filter((f) => f.startsWith(PACKAGE_ROOT + path.sep)),
            [],
            "nothing loaded from this checkout",
        );
        const installed = path.join(consumer, "node_modules/gpu-workers");
        assert.ok(
            !fs.existsSync(path.join(installed, "node_modules/@pulumi/pulumi")),
            "@pulumi/pulumi is the consumer's (a peer dependency), not a second copy",
        );
        assert.strictEqual(
            fs.realpathSync(path.join(consumer, "node_modules/.bin/gpu-workers-fleet")),
            fs.realpathSync(path.join(installed, "dist/cli/fleet.js")),
            "the bin is the fleet driver",
        );
    });

    it("a GpuWorker for one SSH host builds its whole chain under Pulumi mocks", () => {
        const r = spawnSync(process.execPath, ["-e", MOCKED], { cwd: consumer, encoding: "utf8", timeout: 60_000 });
        assert.strictEqual(r.status, 0, r.stderr);
        const { tags, types } = JSON.parse(r.stdout.trim().split("\n").pop()!) as { tags: string[]; types: string[] };
        assert.deepStrictEqual(tags.slice(0, 4), ["gpu", "gpu-type=nvidia", "gpu-count=1", "gpu-devices=0"]);
        for (const t of [
            "gpu-workers:worker:GpuWorker::gpu-a",
            "gpu-workers:driver:GpuDriver::gpu-a-driver",
            "gpu-workers:concourse:ConcourseWorker::gpu-a-concourse",
            "pulumi-nodejs:dynamic/gpu-workers:SshCommand::gpu-a-runc-wrapper-runc-wrapper",
        ]) {
            assert.ok(types.includes(t), `${t} in ${types.join(", ")}`);
        }
    });

    /** A stack of the consumer project whose program is `main` (a file of dist/). */
    async function consumerStack(stackName: string, main: string) {
        const env = ensureEngine(path.join(root, "state"));
        fs.writeFileSync(path.join(consumer, "Pulumi.yaml"), `name: consumer\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: ${main}\n`);
        return LocalWorkspace.createOrSelectStack({ stackName, workDir: consumer }, { envVars: env });
    }

    /** `pulumi preview` of the consumer's program through the real engine, its host steps by `hostSteps` (unset: the program's builtin); the type of the wrapper's step. */
    async function preview(stackName: string, hostSteps?: "command") {
        const stack = await consumerStack(stackName, "dist/index.js");
        await stack.setConfig("consumer:sshKey", { value: generateOpensshKeyPair("consumer").privateKeyOpenssh, secret: true });
        // The host key as its .pub file holds it, comment and all.
        await stack.setConfig("consumer:hostKey", { value: PUB.ed25519.trim() });
        if (hostSteps) await stack.setConfig("consumer:hostSteps", { value: hostSteps });
        // The engine's events name each resource's type; the terminal view does not.
        const types = new Map<string, string>();
        const result = await stack.preview({
            diff: true,
            onEvent: (e) => {
                const m = e.resourcePreEvent?.metadata;
                if (m) types.set(m.urn.split("::").pop()!, m.type);
            },
        });
        assert.match(result.stdout, /gpu-a-runc-wrapper-runc-wrapper/);
        assert.match(result.stdout, /\/etc\/systemd\/system\/concourse-worker\.service/);
        assert.ok(result.stdout.includes('"gpu-devices=0"'), "the tags are in the outputs");
        assert.ok((result.changeSummary.create ?? 0) > 20, JSON.stringify(result.changeSummary));
        return types.get("gpu-a-runc-wrapper-runc-wrapper");
    }

    it("pulumi preview through the real engine by the builtin transport, with the host unreachable, shows the chain and the tags", async () => {
        assert.strictEqual(await preview("preview"), "pulumi-nodejs:dynamic/gpu-workers:SshCommand", "the step is the program's own SshCommand");
    });

    it("with the Command provider's plugin: the same preview by the command transport", async function () {
        pendingWithout(this, "command-plugin");
        assert.strictEqual(await preview("preview-command", "command"), "command:remote:Command");
    });

    it("the README's section on other repos has its examples: the components alone, one with a connection of its own, a GpuWorker, KubernetesGpuNodes", () => {
        assert.deepStrictEqual(
            examples.map((code) => constructed(code).join(" ")),
            ["GpuHost GpuDriver RuncWrapper", "RuncWrapper", "GpuWorker", "KubernetesGpuNodes"],
        );
    });

    examples.forEach((code, i) =>
        it(`the README's example ${i + 1} (${constructed(code).join(", ")}), as written: pulumi preview through the real engine`, async function () {
            if (code.includes("KubernetesGpuNodes")) {
                // @pulumi/kubernetes's resources need its plugin (built and cached as the Kubernetes tests build it), and no cluster to preview.
                this.timeout(KUBERNETES_TOOLS_TIMEOUT_MS);
                process.env.PATH = `${ensureKubernetesTools().bin}:${process.env.PATH}`;
            }
            const stack = await consumerStack(`readme-${i + 1}`, `dist/${exampleFile(i).replace(/\.ts$/, ".js")}`);
            // The config each example reads, in the forms it takes: real keys, a kubeconfig naming a cluster nobody serves.
            const values: Record<string, { value: string; secret?: boolean }> = {
                sshKey: { value: generateOpensshKeyPair("readme").privateKeyOpenssh, secret: true },
                hostKey: { value: PUB.ed25519.trim() },
                tsaPublicKey: { value: PUB.rsa3072.trim() },
                concourseSha256: { value: "0".repeat(64) },
                kubeconfig: { value: KUBECONFIG, secret: true },
            };
            for (const [key, value] of Object.entries(values)) if (code.includes(`"${key}"`)) await stack.setConfig(`consumer:${key}`, value);
            const types: string[] = [];
            const result = await stack.preview({
                onEvent: (e) => {
                    const m = e.resourcePreEvent?.metadata;
                    if (m) types.push(m.type);
                },
            });
            for (const name of constructed(code)) {
                assert.ok(
                    types.some((t) => t.endsWith(`:${name}`)),
                    `the preview has a ${name}: ${[...new Set(types)].join(", ")}`,
                );
            }
            assert.ok((result.changeSummary.create ?? 0) > 1, JSON.stringify(result.changeSummary));
            assert.ok(!types.some((t) => t.startsWith("command:")), "no step needs the Command provider's plugin");
        }),
    );

    describe("the gpu-workers-fleet bin, on a fleet whose program is the packed one", () => {
        const bin = path.join(consumer, "node_modules/.bin/gpu-workers-fleet");
        let env: Record<string, string>;

        /** Runs the bin as a person would, by its #! line (the node running the tests first on PATH); its exit status and output. */
        function fleet(...args: string[]): { status: number | null; out: string } {
            const r = spawnSync(bin, args, {
                cwd: consumer,
                env: { ...process.env, ...env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, CI: "true" },
                encoding: "utf8",
                timeout: 300_000,
            });
            return { status: r.status, out: `${r.stdout}${r.stderr}` };
        }

        before(async () => {
            const stack = await consumerStack("fleet", "node_modules/gpu-workers/dist/index.js");
            env = ensureEngine(path.join(root, "state"));
            // Two hosts in racks a and b, over SSH to ports nobody listens on (one machine is one host): a preview reaches neither.
            const hosts = ["a", "b"].map((rack, i) => ({
                name: `gpu-${rack}1`,
                rack,
                transport: { ssh: { host: "127.0.0.1", port: i + 1, privateKeySecret: `gpu-${rack}1-ssh-key`, hostKey: HOST_KEY } },
                vendor: "nvidia",
                gpus: [{ index: 0, model: "NVIDIA L4", memoryMiB: 23034 }],
            }));
            await setStackConfig(stack, {
                defaults: {
                    concourse: {
                        tsaHost: "ci.example.test",
                        tsaPublicKey: TSA_KEY,
                        binary: { url: "https://downloads.example.test/concourse.tgz", sha256: "0".repeat(64) },
                    },
                },
                hosts,
                secrets: Object.fromEntries(hosts.map((h) => [`${h.name}-ssh-key`, generateOpensshKeyPair(h.name).privateKeyOpenssh])),
            });
        });

        it("with no arguments it exits 2 and prints its usage", () => {
            const r = fleet();
            assert.strictEqual(r.status, 2, r.out);
            assert.match(r.out, /usage: .*up\|preview\|destroy\|refresh\|status --stack NAME/);
        });

        it("status names both racks of the consumer's stack", () => {
            const r = fleet("status", "--stack", "fleet", "--project-dir", consumer);
            assert.strictEqual(r.status, 0, r.out);
            assert.match(r.out, /^a\s+fleet-a\s+1\s+no\b/m, r.out);
            assert.match(r.out, /^b\s+fleet-b\s+1\s+no\b/m, r.out);
        });

        it("preview through the real engine runs each rack's stack of the packed program, and its summary creates both racks' hosts", () => {
            const r = fleet("preview", "--stack", "fleet");
            assert.strictEqual(r.status, 0, r.out);
            for (const rack of ["a", "b"]) {
                assert.match(r.out, new RegExp(`^rack ${rack} \\(fleet-${rack}\\): \\d+ create`, "m"), r.out);
                assert.match(r.out, new RegExp(`^ {2}gpu-${rack}1: \\d+ create`, "m"), r.out);
                assert.match(r.out, new RegExp(`^ {4}create {3}gpu-${rack}1-runc-wrapper-runc-wrapper$`, "m"), r.out);
            }
        });
    });
});
