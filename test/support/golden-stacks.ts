/**
 * The stacks whose whole offline render is checked into test/golden/<stack>/ (the example stacks,
 * and the fixture stacks the render tests use), and the stand-in artifacts they are rendered
 * with (host scripts, placed as they are, by name and digest): a binary's digest depends on the Go toolchain that built it, so the golden files name
 * each binary by a digest of its name, and every path relative to the checkout.
 */
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import type { ArtifactSource } from "../../components/chain/artifacts";
import { sha256Text } from "../../components/lib/file-hash";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import type { RawStackConfig } from "../../stacks/config/stack";
import { parseStack } from "../../stacks/checks/stack";
import { RenderedCluster, renderClusters, RenderedHost, renderStack } from "../../stacks/render/offline-render";
import { readStackFile } from "../../cli/render";
import { boardStack } from "../fixtures/stacks/boards";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, INTEL_FLEX_170_X2, NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";

export const GOLDEN_DIR = path.join(PACKAGE_ROOT, "test", "golden");
const EXAMPLES_DIR = path.join(PACKAGE_ROOT, "examples", "stacks");

function standIn(relative: string): { path: string; sha256: string } {
    return { path: relative, sha256: sha256Text(`gpu-workers golden stand-in for ${relative}`) };
}

/** Binaries by a digest of their name, paths relative to the checkout: the same on every machine, and no file is read. */
export const GOLDEN_ARTIFACTS: ArtifactSource = {
    built: () => ({
        wrapper: standIn("dist/wrapper/runc-wrapper"),
        containerdToml: standIn("dist/containerd-toml/containerd-toml"),
        cdiCheck: standIn("dist/cdi-check/cdi-check"),
    }),
    release: (binary) => ("sha256" in binary ? binary : standIn(path.relative(PACKAGE_ROOT, binary.path))),
};

const web = { name: "ci", transport: { lxd: { instance: "ci", image: "img", sshPort: 2200, publish: { web: 8080, tsa: 2222 } } } };

/** The fixture stacks, by the name of their folder under test/golden/. */
function fixtureStacks(): Record<string, RawStackConfig> {
    const kinds = stackWith(
        { name: "hgx", inventory: HGX_H100_8X, extra: { selection: [0, 1] } },
        { name: "cpu", inventory: NO_GPU },
        { name: "laptop", inventory: RTX_A500_LAPTOP, extra: { metrics: { nodeExporter: true, dcgmJobMappingDir: "/run/dcgm-jobs" } } },
        { name: "phoenix", inventory: AMD_PHOENIX },
        { name: "mig", inventory: A100_MIG },
        { name: "flex", inventory: INTEL_FLEX_170_X2 },
    );
    return {
        "fixture-kinds": kinds,
        // A web and an LXD worker on its server, the release uploaded from the checkout.
        "fixture-web": {
            defaults: { concourse: { binary: { path: "test/fixtures/concourse-release.tgz" } } },
            web,
            hosts: [{ name: "w", transport: { lxd: { instance: "w", image: "img", sshPort: 2201 } }, vendor: "none" }],
        },
        "fixture-board": boardStack([{ gpus: 4 }, { gpus: 4 }]),
    };
}

/** Every golden stack: name, its config and the folder its relative paths are taken from. */
export function goldenStacks(): { name: string; raw: RawStackConfig; baseDir: string }[] {
    const examples = fs.readdirSync(EXAMPLES_DIR).flatMap((f) => {
        const m = /^Pulumi\.(.+)\.yaml$/.exec(f);
        return m ? [{ name: `example-${m[1]}`, raw: readStackFile(EXAMPLES_DIR, m[1]), baseDir: EXAMPLES_DIR }] : [];
    });
    const fixtures = Object.entries(fixtureStacks()).map(([name, raw]) => ({ name, raw, baseDir: PACKAGE_ROOT }));
    return [...examples, ...fixtures];
}

/**
 * Host scripts go to every host as they are in host/, rendered by nothing: the golden tree names
 * each by its file and digest (the manifest keeps the digest of what the host receives), so it
 * holds what the renderers write, not a copy of host/ per host.
 */
function hostScriptsByName(hosts: RenderedHost[]): RenderedHost[] {
    const dir = path.join(PACKAGE_ROOT, "host");
    const scripts = new Map(fs.readdirSync(dir).map((name) => [fs.readFileSync(path.join(dir, name), "utf8"), name]));
    const named = (content: string): string => {
        const name = scripts.get(content);
        return name === undefined ? content : `host script host/${name}, sha256 ${sha256Text(content)}\n`;
    };
    return hosts.map((host) => ({ ...host, contents: new Map([...host.contents].map(([file, c]) => [file, typeof c === "string" ? named(c) : c])) }));
}

/** A golden stack rendered with the stand-in artifacts. */
export function renderGolden(stack: { raw: RawStackConfig; baseDir: string }): RenderedHost[] {
    return hostScriptsByName(renderStack(stack.raw, stack.baseDir, GOLDEN_ARTIFACTS));
}

/** A golden stack's Kubernetes clusters (their YAML holds no artifact). */
export function renderGoldenClusters(stack: { raw: RawStackConfig }): RenderedCluster[] {
    return renderClusters(parseStack(stack.raw));
}

/** Runs the offline render's CLI (`npm run render`, built) on a stack of examples/stacks/, into `out`. */
export function renderExampleStack(stack: string, out: string): void {
    execFileSync(
        "node",
        [path.join(PACKAGE_ROOT, "dist", "cli", "render.js"), "--project-dir", path.join(PACKAGE_ROOT, "examples", "stacks"), "--stack", stack, "--out", out],
        { stdio: "ignore" },
    );
}
