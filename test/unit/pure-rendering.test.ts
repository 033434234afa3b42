/**
 * Planning and rendering are pure: the digests of what is uploaded from here come in as
 * artifacts, so lib/render and lib/plan read no file. Checked on the sources, and by planning
 * whole stacks while every read of the file system is refused, save the package's own data
 * (host/ scripts and vendor-repos/, read once per run like its modules).
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
// The module object itself (the default import; `* as` is a wrapper of getters), so what every module calls can be replaced.
import nodeFs from "fs";
import { HOST_FILES_DIR, PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { VENDOR_REPOS_DIR } from "../../components/lib/repos/vendor-repos";
import { parseStack } from "../../stacks/checks/stack";
import { planStack, renderBoardPlan, renderPlan, renderWebPlan } from "../../stacks/render/offline-render";
import { GOLDEN_ARTIFACTS, goldenStacks } from "../support/golden-stacks";

function sources(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? sources(p) : e.name.endsWith(".ts") ? [p] : [];
    });
}

const READERS = [
    "readFileSync",
    "existsSync",
    "statSync",
    "lstatSync",
    "openSync",
    "readdirSync",
    "accessSync",
    "realpathSync",
    "readFile",
    "stat",
    "open",
    "createReadStream",
] as const;

/** Runs fn with every fs read refused (and recorded) outside the package's own data folders. */
function withFilesRefused<T>(fn: () => T): { result: T; refused: string[] } {
    const refused: string[] = [];
    const allowed = (p: unknown) => typeof p === "string" && [HOST_FILES_DIR, VENDOR_REPOS_DIR].some((dir) => path.resolve(p).startsWith(dir + path.sep));
    const saved = new Map<string, unknown>();
    const mutable = nodeFs as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of READERS) {
        const original = mutable[name];
        saved.set(name, original);
        mutable[name] = (...args: unknown[]) => {
            if (allowed(args[0])) return original.apply(nodeFs, args);
            refused.push(`fs.${name}(${String(args[0])})`);
            throw new Error(`planning read the file system: fs.${name}(${String(args[0])})`);
        };
    }
    try {
        return { result: fn(), refused };
    } finally {
        for (const [name, original] of saved) mutable[name] = original as (...args: unknown[]) => unknown;
    }
}

describe("pure rendering: planning reads no file", () => {
    it("no source under components/lib/render or components/lib/plan uses fs", () => {
        const offenders = ["components/lib/render", "components/lib/plan"]
            .flatMap((dir) => sources(path.join(PACKAGE_ROOT, dir)))
            .filter((f) => /(?:from\s+|require\()["'](?:node:)?fs(?:\/promises)?["']/.test(fs.readFileSync(f, "utf8")))
            .map((f) => path.relative(PACKAGE_ROOT, f));
        assert.deepStrictEqual(offenders, []);
    });

    it("plans and renders every golden stack (web, hosts of each kind, a shared board, a release uploaded from here) with the file system refused", () => {
        const stacks = goldenStacks().map((s) => ({ ...s, config: parseStack(s.raw) }));
        assert.ok(stacks.some((s) => s.config.web) && stacks.some((s) => (s.config.boards ?? []).length > 0), "the stacks cover a web and a board");
        const { result, refused } = withFilesRefused(() =>
            stacks.map((s) => {
                const plans = planStack(s.config, s.baseDir, GOLDEN_ARTIFACTS);
                return [...(plans.web ? [renderWebPlan(plans.web)] : []), ...plans.hosts.map(renderPlan), ...plans.boards.flatMap(renderBoardPlan)];
            }),
        );
        assert.deepStrictEqual(refused, []);
        const wrapper = GOLDEN_ARTIFACTS.built().wrapper;
        const uploaded = result.flat().flatMap((h) => h.manifest.files.filter((f) => f.uploadedFrom === wrapper.path));
        assert.ok(uploaded.length > 1 && uploaded.every((f) => f.sha256 === wrapper.sha256), "each worker uploads the wrapper by the digest it was given");
    });
});
