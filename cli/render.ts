/**
 * npm run render -- --stack NAME --out DIR
 * Writes every file each host would receive under DIR/<host>/<absolute path>, and
 * DIR/<host>/manifest.json (ordered steps, files with mode and sha256, tags); each Kubernetes
 * cluster's objects as DIR/_kubernetes/<cluster>.yaml.
 * Needs no Pulumi engine and no host; secrets appear as [secret].
 */
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { parseStack } from "../stacks/checks/stack";
import { namespaceKeysOf } from "../stacks/config/namespace-keys";
import { RawStackConfig, StackConfigError } from "../stacks/config/stack";
import {
    MISSING_PLACEHOLDER,
    RENDER_ARTIFACTS,
    RenderedCluster,
    renderClusters,
    RenderedContent,
    RenderedHost,
    renderPlans,
} from "../stacks/render/offline-render";

/** Where a cluster's objects go: a folder no host can have (a host's name is a DNS label, which has no `_`). */
export const KUBERNETES_DIR = "_kubernetes";

function usage(message: string): never {
    console.error(`render: ${message}\nusage: npm run render -- --stack NAME --out DIR [--project-dir DIR]`);
    process.exit(2);
}

function parseArgs(argv: string[]): { stack: string; out: string; projectDir: string } {
    const args: Record<string, string> = {};
    for (let i = 0; i < argv.length; i += 2) {
        const key = argv[i];
        if (!["--stack", "--out", "--project-dir"].includes(key)) usage(`unknown argument ${key}`);
        if (argv[i + 1] === undefined) usage(`${key} needs a value`);
        args[key.slice(2)] = argv[i + 1];
    }
    if (!args.stack) usage("--stack is required");
    if (!args.out) usage("--out is required");
    return { stack: args.stack, out: args.out, projectDir: args["project-dir"] ?? process.cwd() };
}

/** Reads gpu-workers:defaults, gpu-workers:hosts, gpu-workers:web and gpu-workers:allowNoHosts from Pulumi.<stack>.yaml, and every other gpu-workers: key (a typo is an error). */
export function readStackFile(projectDir: string, stack: string): RawStackConfig {
    const file = path.join(projectDir, `Pulumi.${stack}.yaml`);
    if (!fs.existsSync(file)) usage(`no stack file ${file}`);
    const doc = (parse(fs.readFileSync(file, "utf8")) ?? {}) as { config?: unknown };
    const config = (doc.config ?? {}) as Record<string, unknown>;
    const keys = namespaceKeysOf(config);
    return {
        defaults: config["gpu-workers:defaults"],
        hosts: config["gpu-workers:hosts"],
        web: config["gpu-workers:web"],
        kubernetes: config["gpu-workers:kubernetes"],
        allowNoHosts: config["gpu-workers:allowNoHosts"],
        keys,
    };
}

/**
 * How an artifact (a binary uploaded from here) is written: as its bytes, copied once and then
 * linked at every other host path with the same digest and mode (a fleet of hosts costs one copy
 * of each binary), or, for a tree compared as text (test/golden), as a line naming its digest.
 */
export type ArtifactWrite = "bytes" | "digest";

/** Writes each host's files at their host paths under out/<host>/, and its manifest.json. */
export function writeRendered(hosts: RenderedHost[], out: string, artifacts: ArtifactWrite = "bytes"): void {
    const written = new Map<string, string>();
    // Each folder made once: a fleet's hosts have the same few folders, and mkdir is most of the render's time.
    const folders = new Set<string>();
    const write = (target: string, content: RenderedContent, mode: number): void => {
        if (typeof content === "string") return fs.writeFileSync(target, content, { mode });
        if (artifacts === "digest") return fs.writeFileSync(target, `artifact sha256 ${content.sha256}, uploaded from ${content.path}\n`, { mode });
        const key = `${content.sha256} ${mode}`;
        const first = written.get(key);
        if (first !== undefined) {
            try {
                return fs.linkSync(first, target);
            } catch {
                /* another file system, or no links there: copy */
            }
        }
        fs.copyFileSync(content.path, target);
        fs.chmodSync(target, mode);
        written.set(key, target);
    };
    for (const { manifest, contents } of hosts) {
        const root = path.join(out, manifest.host);
        fs.rmSync(root, { recursive: true, force: true });
        for (const file of manifest.files) {
            const target = path.join(root, file.path);
            const folder = path.dirname(target);
            if (!folders.has(folder)) {
                fs.mkdirSync(folder, { recursive: true });
                folders.add(folder);
            }
            write(target, contents.get(file.path)!, parseInt(file.mode, 8));
        }
        fs.writeFileSync(path.join(root, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
    }
}

/** Each cluster's objects as out/_kubernetes/<cluster>.yaml. */
export function writeClusters(clusters: RenderedCluster[], out: string): void {
    const dir = path.join(out, KUBERNETES_DIR);
    fs.rmSync(dir, { recursive: true, force: true });
    if (clusters.length === 0) return;
    fs.mkdirSync(dir, { recursive: true });
    for (const c of clusters) fs.writeFileSync(path.join(dir, `${c.cluster}.yaml`), c.yaml);
}

function main(): void {
    const { stack, out, projectDir } = parseArgs(process.argv.slice(2));
    let hosts;
    let clusters: RenderedCluster[];
    try {
        // Paths in the stack (a release uploaded from here) are the project folder's, as for pulumi up.
        const raw = readStackFile(projectDir, stack);
        const parsed = parseStack(raw, { baseDir: projectDir, artifacts: RENDER_ARTIFACTS });
        hosts = renderPlans(parsed.plans);
        clusters = renderClusters(parsed);
    } catch (e) {
        if (e instanceof StackConfigError) {
            console.error(e.message);
            process.exit(1);
        }
        console.error(`render: ${(e as Error).message}`);
        process.exit(1);
    }
    if (hosts.length === 0) console.log(`stack ${stack}: no hosts (gpu-workers:allowNoHosts is true), nothing to render`);
    writeRendered(hosts, out);
    writeClusters(clusters, out);
    for (const c of clusters) console.log(`cluster ${c.cluster}: ${c.objects.length} objects -> ${path.join(out, KUBERNETES_DIR, `${c.cluster}.yaml`)}`);
    for (const { manifest } of hosts) {
        const root = path.join(out, manifest.host);
        console.log(`${manifest.host}: ${manifest.files.length} files, ${manifest.steps.length} steps -> ${root}`);
        for (const p of manifest.partitions ?? [])
            console.log(`  fabric partition ${p.partition} (modules ${p.modules.join(", ")}; ${p.pci.join(", ")}) -> ${p.worker}`);
        if (manifest.stoppedBeforeWorker) console.log(`  note: ${manifest.stoppedBeforeWorker}`);
        for (const warning of manifest.warnings ?? []) console.log(`  WARNING: ${warning}`);
        for (const file of manifest.files.filter((f) => f.sha256 === MISSING_PLACEHOLDER)) {
            console.log(`  note: ${file.path} is uploaded from ${file.uploadedFrom}, which is not there yet (pulumi up would stop on it)`);
        }
    }
}

if (require.main === module) main();
