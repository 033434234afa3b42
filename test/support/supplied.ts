/**
 * What no package registry serves, and the tests that need it: the Concourse release (supplied
 * with GPU_WORKERS_CONCOURSE_RELEASE, concourse.ts) and the Command provider's plugin (supplied on
 * PATH). Where one is missing, those tests are pending, each suite saying in one line what is
 * missing; where it is supplied they run, and a failure is a failure.
 */
import { spawnSync } from "child_process";
import Mocha from "mocha";
import { ConcourseRelease, suppliedRelease } from "./concourse";

/** What a test can need that is supplied, not installed. */
export type Supplied = "concourse" | "command-plugin";

/** What to supply, as the pending line says it. */
const WHAT: Record<Supplied, string> = {
    concourse: "the Concourse release: set GPU_WORKERS_CONCOURSE_RELEASE to the official concourse-<version>-linux-amd64.tgz, or the folder it unpacks to",
    "command-plugin": "the Command provider's plugin: put pulumi-resource-command (of @pulumi/command's version) on PATH",
};

/** The Command provider's plugin on PATH, or undefined. */
export function commandPlugin(): string | undefined {
    const r = spawnSync("bash", ["-c", "command -v pulumi-resource-command"], { encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : undefined;
}

function missing(needs: Supplied[]): Supplied[] {
    return needs.filter((n) => (n === "concourse" ? suppliedRelease() === undefined : commandPlugin() === undefined));
}

/**
 * In a before hook or a test: marks the rest pending when something it needs is not supplied,
 * after one line naming what and how to supply it.
 */
export function pendingWithout(ctx: Mocha.Context, ...needs: Supplied[]): void {
    const absent = missing(needs);
    if (absent.length === 0) return;
    // A test names itself; a hook names its suite.
    const runnable = ctx.test;
    const title = (runnable instanceof Mocha.Test ? runnable.fullTitle() : runnable?.parent?.fullTitle()) ?? "";
    console.log(`    pending: ${title}: needs ${absent.map((n) => WHAT[n]).join("; and ")}`);
    ctx.skip();
}

/** The supplied release; call pendingWithout(ctx, "concourse") first. */
export function release(): ConcourseRelease {
    const r = suppliedRelease();
    if (!r) throw new Error("no Concourse release is supplied (call pendingWithout first)");
    return r;
}
