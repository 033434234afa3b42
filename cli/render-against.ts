/**
 * `render --against REV`: the render of a git revision of the checkout, made as it was then, so
 * that a pull request that changes the program and the stack config together is compared with
 * what its base rendered. REV's tree (`git archive`, nothing of the checkout changed) goes to a
 * temporary folder with this checkout's node_modules; its build runs as its package.json says,
 * except tsc: REV's TypeScript is transpiled file by file with this checkout's compiler and
 * REV's compiler options (no type check: REV's own CI did that), 3 s where tsc takes 14 s on the
 * project's 2-core machine; its Go binaries build from the Go build cache. Then REV's own render
 * CLI renders REV's Pulumi.<stack>.yaml. The files this checkout has and git ignores (a release
 * under .dev/ that the stack uploads) are linked into REV's tree, so both sides upload the same.
 */
import { spawnSync, SpawnSyncReturns } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as ts from "typescript";
import { PACKAGE_ROOT } from "../components/program";
import { RENDER_RECORD } from "./render-folder";

/** An earlier render to compare with: its folder, the folders its artifacts' paths are relative to, and what to call it. */
export interface Baseline {
    dir: string;
    roots: string[];
    label: string;
    /** What the baseline took to make, to be said beside the diff; empty for a folder given. */
    timing: string;
    cleanup(): void;
}

export class AgainstError extends Error {}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): SpawnSyncReturns<string> {
    return spawnSync(command, args, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, ...options });
}

function git(repo: string, args: string[]): string | undefined {
    const r = run("git", ["-C", repo, ...args]);
    return r.status === 0 ? r.stdout.trim() : undefined;
}

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

/** The tail of a failed command's output, for its error. */
function said(r: SpawnSyncReturns<string>): string {
    const text = `${r.stdout ?? ""}${r.stderr ?? ""}`.trim();
    return text.length > 4000 ? `...${text.slice(-4000)}` : text;
}

/** The project's files (not its tests) of REV's tsconfig, transpiled to where tsc writes them; the number of files. */
function transpile(tree: string, config: string): number {
    const configFile = path.join(tree, config);
    if (!fs.existsSync(configFile)) throw new AgainstError(`its build names ${config}, which it does not have`);
    const problems: string[] = [];
    const parsed = ts.getParsedCommandLineOfConfigFile(
        configFile,
        {},
        { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => problems.push(ts.flattenDiagnosticMessageText(d.messageText, "\n")) },
    );
    if (!parsed || problems.length > 0) throw new AgainstError(`its ${config}: ${problems.join("; ")}`);
    const options: ts.CompilerOptions = {
        ...parsed.options,
        declaration: false,
        sourceMap: false,
        inlineSourceMap: false,
        incremental: false,
        composite: false,
    };
    let count = 0;
    for (const file of parsed.fileNames) {
        const relative = path.relative(tree, file);
        if (file.endsWith(".d.ts") || relative.split(path.sep)[0] === "test") continue;
        const target = ts.getOutputFileNames(parsed, file, false).find((f) => f.endsWith(".js"));
        if (!target) continue;
        const out = ts.transpileModule(fs.readFileSync(file, "utf8"), { compilerOptions: options, fileName: file });
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, out.outputText);
        count++;
    }
    return count;
}

/** `tsc -p FILE`, `tsc --build FILE`, `tsc`, `bash scripts/build-ts.sh` (tsc --build): the config it compiles; undefined for any other step. */
function tscConfig(step: string): string | undefined {
    if (step === "bash scripts/build-ts.sh") return "tsconfig.json";
    const m = /^tsc(?:\s+(?:-p|--project|-b|--build)\s+(\S+))?$/.exec(step);
    return m ? (m[1] ?? "tsconfig.json") : undefined;
}

/** The entries this checkout has that git ignores (but its build output and node_modules), linked into REV's tree where it has none. */
function linkIgnored(repo: string, tree: string): void {
    const r = run("git", ["-C", repo, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"]);
    if (r.status !== 0) return;
    for (const entry of r.stdout.split("\0").filter(Boolean)) {
        const relative = entry.replace(/\/$/, "");
        if (["dist", "node_modules"].includes(relative.split("/")[0])) continue;
        const target = path.join(tree, relative);
        if (fs.existsSync(target) || !fs.existsSync(path.dirname(target))) continue;
        fs.symlinkSync(path.join(repo, relative), target);
    }
}

/** Renders the stack as REV has it, with REV's program; the caller compares and then calls cleanup. */
export function renderRevision(rev: string, stack: string, projectDir: string): Baseline {
    const project = fs.realpathSync(projectDir);
    const repo = git(project, ["rev-parse", "--show-toplevel"]);
    if (repo === undefined) throw new AgainstError(`--against ${rev}: no such folder, and ${projectDir} is in no git checkout to take a revision from`);
    const commit = git(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${rev}^{commit}`]);
    if (commit === undefined) throw new AgainstError(`--against ${rev}: neither a folder nor a revision of ${repo}`);
    const label = `${rev} (${commit.slice(0, 12)})`;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gw-against-"));
    const cleanup = () => fs.rmSync(tmp, { recursive: true, force: true });
    try {
        const started = Date.now();
        const tree = path.join(tmp, "tree");
        fs.mkdirSync(tree);
        const tar = path.join(tmp, "rev.tar");
        const archived = run("git", ["-C", repo, "archive", "--format=tar", "-o", tar, commit]);
        if (archived.status !== 0) throw new AgainstError(`git archive ${label}: ${said(archived)}`);
        const unpacked = run("tar", ["-xf", tar, "-C", tree]);
        if (unpacked.status !== 0) throw new AgainstError(`unpacking ${label}: ${said(unpacked)}`);
        fs.rmSync(tar);

        const relative = path.relative(fs.realpathSync(repo), project);
        const projectAtRev = path.join(tree, relative);
        if (!fs.existsSync(path.join(projectAtRev, `Pulumi.${stack}.yaml`))) {
            // A stack the pull request adds: every host is new.
            const empty = path.join(tmp, "out");
            fs.mkdirSync(empty);
            fs.writeFileSync(path.join(empty, RENDER_RECORD), JSON.stringify({ hosts: [] }) + "\n");
            return { dir: empty, roots: [], label: `${label}, which has no ${path.join(relative, `Pulumi.${stack}.yaml`)}`, timing: "", cleanup };
        }
        const pkg = JSON.parse(fs.readFileSync(path.join(tree, "package.json"), "utf8")) as { scripts?: Record<string, string> };
        const entry = /\bnode\s+(\S+render\S*\.js)/.exec(pkg.scripts?.render ?? "")?.[1];
        if (!pkg.scripts?.build || entry === undefined) throw new AgainstError(`${label} has no npm run build and npm run render to render with`);

        const modules = fs.existsSync(path.join(repo, "node_modules")) ? path.join(repo, "node_modules") : path.join(PACKAGE_ROOT, "node_modules");
        fs.symlinkSync(fs.realpathSync(modules), path.join(tree, "node_modules"));
        linkIgnored(repo, tree);

        const built = Date.now();
        let transpiled = "";
        const env = { ...process.env, PATH: `${path.join(tree, "node_modules", ".bin")}${path.delimiter}${process.env.PATH ?? ""}` };
        for (const step of pkg.scripts.build.split("&&").map((s) => s.trim())) {
            const config = tscConfig(step);
            if (config !== undefined) {
                const since = Date.now();
                let count: number;
                try {
                    count = transpile(tree, config);
                } catch (e) {
                    throw new AgainstError(`building ${label}: ${(e as Error).message}`);
                }
                transpiled = `${count} TypeScript files transpiled in ${seconds(since)}`;
                continue;
            }
            const r = run("bash", ["-c", step], { cwd: tree, env });
            if (r.status !== 0) throw new AgainstError(`building ${label}: ${step} failed (exit ${r.status}):\n${said(r)}`);
        }
        const buildTime = seconds(built);

        const out = path.join(tmp, "out");
        const rendered = run("node", [path.join(tree, entry), "--stack", stack, "--out", out, "--project-dir", projectAtRev], { cwd: tree });
        if (rendered.status !== 0) throw new AgainstError(`the render of ${label} failed (exit ${rendered.status}):\n${said(rendered)}`);
        return {
            dir: out,
            roots: [projectAtRev, tree],
            label,
            timing: `${label} rendered in ${seconds(started)} (its build ${buildTime}${transpiled ? `: ${transpiled}` : ""})`,
            cleanup,
        };
    } catch (e) {
        cleanup();
        throw e;
    }
}
