/**
 * What an end-to-end describe block through the Pulumi engine starts from: the engine, a
 * private LXD daemon and a project. Every stack pushed to `stacks` is destroyed afterwards, then
 * the daemon stops and the folder goes. The hooks do the work: a describe body only declares.
 */
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { ensureEngine, makeProject, makeTempDir, tempDirName, TestLxd } from "./engine";
import { pendingWithout, Supplied } from "./supplied";

export interface EngineSuite {
    root: string;
    lxd: TestLxd;
    stacks: Stack[];
    /** Set in the suite's before hook. */
    env: Record<string, string>;
    project: string;
}

/**
 * Registers the before and after hooks; call it inside describe(). `needs`: what the whole suite
 * needs that is supplied, not installed (it is pending without).
 */
export function engineSuite(prefix: string, ...needs: Supplied[]): EngineSuite {
    const root = tempDirName(prefix);
    const suite: EngineSuite = { root, lxd: new TestLxd(path.join(root, "lxd")), stacks: [], env: {}, project: "" };
    let started = false;
    before(function () {
        pendingWithout(this, ...needs);
        makeTempDir(root);
        suite.env = ensureEngine(path.join(root, "state"));
        started = true;
        suite.lxd.start();
        suite.project = makeProject(path.join(root, "project"));
    });
    after(async () => {
        for (const stack of suite.stacks) {
            try {
                await stack.destroy();
            } catch {
                /* the daemon goes next anyway */
            }
        }
        if (started) suite.lxd.stop();
        fs.rmSync(root, { recursive: true, force: true });
    });
    return suite;
}
