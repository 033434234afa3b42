/**
 * What an end-to-end describe block through the Pulumi engine starts from: the engine, a
 * private LXD daemon, a project and the Concourse release. Every stack pushed to `stacks` is
 * destroyed afterwards, then the daemon stops and the folder goes.
 */
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { concourseRelease } from "./concourse";
import { ensureEngine, makeProject, tempDir, TestLxd } from "./engine";

export interface EngineSuite {
    root: string;
    lxd: TestLxd;
    stacks: Stack[];
    /** Set in the suite's before hook. */
    env: Record<string, string>;
    project: string;
    tarball: string;
}

/** Registers the before and after hooks; call it inside describe(). */
export function engineSuite(prefix: string): EngineSuite {
    const root = tempDir(prefix);
    const suite: EngineSuite = { root, lxd: new TestLxd(path.join(root, "lxd")), stacks: [], env: {}, project: "", tarball: "" };
    before(() => {
        suite.env = ensureEngine(path.join(root, "state"));
        suite.lxd.start();
        suite.project = makeProject(path.join(root, "project"));
        suite.tarball = concourseRelease();
    });
    after(async () => {
        for (const stack of suite.stacks) {
            try {
                await stack.destroy();
            } catch {
                /* the daemon goes next anyway */
            }
        }
        suite.lxd.stop();
        fs.rmSync(root, { recursive: true, force: true });
    });
    return suite;
}
