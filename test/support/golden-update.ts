/**
 * npm run golden:update: renders every golden stack (test/support/golden-stacks.ts) into
 * test/golden/<stack>/ afresh, and removes the folder of a stack no longer listed. The diff it
 * leaves is reviewed like code.
 */
import * as fs from "fs";
import * as path from "path";
import { writeClusters, writeRendered } from "../../cli/render-folder";
import { GOLDEN_DIR, goldenStacks, renderGolden, renderGoldenClusters } from "./golden-stacks";

function main(): void {
    const stacks = goldenStacks();
    fs.mkdirSync(GOLDEN_DIR, { recursive: true });
    for (const entry of fs.readdirSync(GOLDEN_DIR)) {
        if (!stacks.some((s) => s.name === entry)) {
            fs.rmSync(path.join(GOLDEN_DIR, entry), { recursive: true, force: true });
            console.log(`removed test/golden/${entry} (no such stack any more)`);
        }
    }
    for (const stack of stacks) {
        const dir = path.join(GOLDEN_DIR, stack.name);
        fs.rmSync(dir, { recursive: true, force: true });
        const hosts = renderGolden(stack);
        writeRendered(hosts, dir, "digest");
        writeClusters(renderGoldenClusters(stack), dir);
        console.log(`test/golden/${stack.name}: ${hosts.map((h) => h.manifest.host).join(", ")}`);
    }
}

main();
