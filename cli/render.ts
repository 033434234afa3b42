/**
 * npm run render -- --stack NAME --out DIR | --against REV|DIR [--expect-no-changes] (--help: every option)
 * Writes every file each host would receive under DIR/<host>/<absolute path>, and
 * DIR/<host>/manifest.json (ordered steps, files with mode and sha256, tags); each Kubernetes
 * cluster's objects as DIR/_kubernetes/<cluster>.yaml. With --against, prints what changed
 * since an earlier render (a folder) or since a git revision (cli/render-diff.ts).
 * Needs no Pulumi engine and no host; secrets appear as [secret].
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse } from "yaml";
import { PACKAGE_ROOT } from "../components/program";
import { parseStack } from "../stacks/checks/stack";
import { namespaceKeysOf } from "../stacks/config/namespace-keys";
import { RawStackConfig, StackConfigError } from "../stacks/config/stack";
import { MISSING_PLACEHOLDER, RENDER_ARTIFACTS, RenderedCluster, renderClusters, RenderedHost, renderPlans } from "../stacks/render/offline-render";
import { AgainstError, Baseline, renderRevision } from "./render-against";
import { diffRenders } from "./render-diff";
import { KUBERNETES_DIR, readRenderFolder, writeRenderFolder } from "./render-folder";

export { KUBERNETES_DIR };

export const USAGE = `usage: npm run render -- --stack NAME (--out DIR | --against REV|DIR) [options]
  --stack NAME         the stack: its config is Pulumi.NAME.yaml in the project folder
  --out DIR            write each host's files at their host paths and its manifest.json under
                       DIR/<host>/, each cluster's objects as DIR/_kubernetes/<cluster>.yaml; a host
                       folder an earlier render wrote there for a host the stack no longer has is removed
  --project-dir DIR    the folder of Pulumi.NAME.yaml, and of the paths it names (default: this folder)
  --against REV|DIR    print what changed, as a unified diff per host (files, steps, tags), against
                       DIR, a folder an earlier render wrote, or REV, a git revision: REV's program
                       rendering REV's Pulumi.NAME.yaml (a folder of that name wins; ./NAME says so);
                       --out is then optional
  --expect-no-changes  with --against: exit 1 when anything differs, 0 when nothing does
  -h, --help           print this and exit`;

export class UsageError extends Error {}

export interface RenderArgs {
    stack: string;
    out?: string;
    projectDir: string;
    against?: string;
    expectNoChanges: boolean;
}

/** The command line; --help is a UsageError with no message. */
export function parseArgs(argv: string[]): RenderArgs {
    const values: Record<string, string> = {};
    let expectNoChanges = false;
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i];
        if (key === "-h" || key === "--help") throw new UsageError("");
        if (key === "--expect-no-changes") {
            expectNoChanges = true;
            continue;
        }
        if (!["--stack", "--out", "--project-dir", "--against"].includes(key)) throw new UsageError(`unknown argument ${key}`);
        const value = argv[i + 1];
        if (value === undefined || value.startsWith("--")) throw new UsageError(`${key} needs a value`);
        if (values[key.slice(2)] !== undefined) throw new UsageError(`${key} is given twice`);
        values[key.slice(2)] = value;
        i++;
    }
    if (!values.stack) throw new UsageError("--stack is required");
    if (!values.out && !values.against) throw new UsageError("--out is required (or --against, to print what changed)");
    if (expectNoChanges && !values.against) throw new UsageError("--expect-no-changes goes with --against");
    return { stack: values.stack, out: values.out, projectDir: values["project-dir"] ?? process.cwd(), against: values.against, expectNoChanges };
}

function usage(message: string): never {
    console.error(`render: ${message}\n${USAGE}`);
    process.exit(2);
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

/** Each host as the render's console shows it: its files, steps, tags, partitions, notes and warnings. */
function consoleLines(hosts: RenderedHost[], out: string): string[] {
    return hosts.flatMap(({ manifest }) => [
        `${manifest.host}: ${manifest.files.length} files, ${manifest.steps.length} steps -> ${path.join(out, manifest.host)}`,
        `  tags: ${manifest.tags.length > 0 ? manifest.tags.join(" ") : "none"}`,
        ...(manifest.partitions ?? []).map((p) => `  fabric partition ${p.partition} (modules ${p.modules.join(", ")}; ${p.pci.join(", ")}) -> ${p.worker}`),
        ...(manifest.stoppedBeforeWorker ? [`  note: ${manifest.stoppedBeforeWorker}`] : []),
        ...(manifest.warnings ?? []).map((w) => `  WARNING: ${w}`),
        ...manifest.files
            .filter((f) => f.sha256 === MISSING_PLACEHOLDER)
            .map((f) => `  note: ${f.path} is uploaded from ${f.uploadedFrom}, which is not there yet (pulumi up would stop on it)`),
    ]);
}

/** The earlier render --against names: a folder, else a git revision rendered now. */
function baselineOf(against: string, stack: string, projectDir: string): Baseline {
    if (fs.existsSync(against) && fs.statSync(against).isDirectory()) {
        const dir = path.resolve(against);
        return { dir, roots: [path.resolve(projectDir), PACKAGE_ROOT], label: against, timing: "", cleanup: () => undefined };
    }
    return renderRevision(against, stack, projectDir);
}

/** The command; returns its exit status (0 done, 1 a bad stack or a difference under --expect-no-changes, 2 bad arguments). */
export function main(argv: string[]): number {
    let args: RenderArgs;
    try {
        args = parseArgs(argv);
    } catch (e) {
        if (!(e instanceof UsageError)) throw e;
        if (e.message === "") {
            console.log(USAGE);
            return 0;
        }
        console.error(`render: ${e.message}\n${USAGE}`);
        return 2;
    }
    const { stack, projectDir, against } = args;
    let hosts: RenderedHost[];
    let clusters: RenderedCluster[];
    try {
        // Paths in the stack (a release uploaded from here) are the project folder's, as for pulumi up.
        const raw = readStackFile(projectDir, stack);
        const parsed = parseStack(raw, { baseDir: projectDir, artifacts: RENDER_ARTIFACTS });
        hosts = renderPlans(parsed.plans);
        clusters = renderClusters(parsed);
    } catch (e) {
        console.error(e instanceof StackConfigError ? e.message : `render: ${(e as Error).message}`);
        return 1;
    }
    if (against === undefined) {
        const out = args.out!;
        if (hosts.length === 0) console.log(`stack ${stack}: no hosts (gpu-workers:allowNoHosts is true), nothing to render`);
        let removed: string[];
        try {
            ({ removed } = writeRenderFolder(hosts, clusters, out));
        } catch (e) {
            console.error(`render: ${(e as Error).message}`);
            return 1;
        }
        for (const host of removed) console.log(`${host}: removed ${path.join(out, host)} (an earlier render's; the stack has no such host now)`);
        for (const c of clusters) console.log(`cluster ${c.cluster}: ${c.objects.length} objects -> ${path.join(out, KUBERNETES_DIR, `${c.cluster}.yaml`)}`);
        for (const line of consoleLines(hosts, out)) console.log(line);
        return 0;
    }
    // The earlier render is read before this one is written: --out may be the very folder --against names.
    let baseline: Baseline | undefined;
    let scratch: string | undefined;
    try {
        baseline = baselineOf(against, stack, projectDir);
        const before = readRenderFolder(baseline.dir, baseline.roots);
        const out = args.out ?? (scratch = fs.mkdtempSync(path.join(os.tmpdir(), "gw-render-")));
        writeRenderFolder(hosts, clusters, out, args.out ? "bytes" : "digest");
        const now = readRenderFolder(out, [path.resolve(projectDir), PACKAGE_ROOT]);
        const diff = diffRenders(stack, before, now, { a: baseline.label, b: args.out ? `this checkout, written to ${args.out}` : "this checkout" });
        if (baseline.timing) console.error(`render: ${baseline.timing}`);
        process.stdout.write(diff.text);
        return args.expectNoChanges && diff.changed ? 1 : 0;
    } catch (e) {
        console.error(e instanceof AgainstError ? `render: ${e.message}` : `render: --against ${against}: ${(e as Error).message}`);
        return 1;
    } finally {
        baseline?.cleanup();
        if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
