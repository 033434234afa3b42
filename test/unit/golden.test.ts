/**
 * The whole offline render of each example and fixture stack (test/support/golden-stacks.ts),
 * manifest and files, binaries by digest, against test/golden/<stack>/: any change to what a
 * host receives shows here as a diff (diff -ruN, the real tool). An intended change is taken
 * with `npm run golden:update`, and its diff reviewed like code.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { writeClusters, writeRendered } from "../../cli/render-folder";
import { GOLDEN_DIR, goldenStacks, renderGolden, renderGoldenClusters } from "../support/golden-stacks";
import { makeScratch, scratchName } from "../support/scratch";
import { ensureCommands } from "../support/tools";

/** Lines of the diff shown in a failure; the rest is counted. */
const SHOWN = 150;

describe("golden files: the whole rendered tree of each example and fixture stack", function () {
    this.timeout(60000);
    const work = scratchName("gw-golden-");
    before(() => {
        makeScratch(work);
        ensureCommands(["diff"], ["diffutils"]);
        // Short, machine-free names in the diff: golden/<stack>/... against rendered/<stack>/...
        fs.symlinkSync(GOLDEN_DIR, path.join(work, "golden"));
        fs.mkdirSync(path.join(work, "rendered"));
    });
    after(() => fs.rmSync(work, { recursive: true, force: true }));

    it("every stack folder under test/golden/ is a golden stack", () => {
        const names = goldenStacks()
            .map((s) => s.name)
            .sort();
        assert.deepStrictEqual(fs.existsSync(GOLDEN_DIR) ? fs.readdirSync(GOLDEN_DIR).sort() : [], names, "npm run golden:update writes them");
    });

    for (const stack of goldenStacks()) {
        it(`${stack.name} renders as test/golden/${stack.name}`, () => {
            writeRendered(renderGolden(stack), path.join(work, "rendered", stack.name), "digest");
            writeClusters(renderGoldenClusters(stack), path.join(work, "rendered", stack.name));
            const r = spawnSync("diff", ["-ruN", `golden/${stack.name}`, `rendered/${stack.name}`], {
                cwd: work,
                encoding: "utf8",
                maxBuffer: 64 * 1024 * 1024,
            });
            if (r.status === 0) return;
            // The files' times say nothing here.
            const lines = (r.stdout + r.stderr).split("\n").map((line) => line.replace(/^(---|\+\+\+) (\S+)\t.*$/, "$1 $2"));
            const shown = lines.slice(0, SHOWN).join("\n") + (lines.length > SHOWN ? `\n... ${lines.length - SHOWN} more lines` : "");
            assert.fail(
                `the render of ${stack.name} differs from test/golden/${stack.name} (- golden, + now); if the change is intended, run npm run golden:update and review its diff:\n${shown}`,
            );
        });
    }
});
