/**
 * No import cycles under components/ and stacks/: a cycle makes a module's meaning depend on
 * which of its files loads first, and a reader cannot take one without the other.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { importCycles, importGraph } from "../support/import-graph";

function sources(dir: string): string[] {
    return fs.readdirSync(path.join(PACKAGE_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
        const p = path.posix.join(dir, e.name);
        return e.isDirectory() ? sources(p) : e.name.endsWith(".ts") ? [p] : [];
    });
}

describe("import cycles", () => {
    it("are found, whatever form the imports take", () => {
        const graph = importGraph({
            "s/config.ts": `/** import { x } from "./nowhere" */\nimport {\n    boardSpecOf,\n} from "./board-config";\nimport { z } from "zod";`,
            "s/board-config.ts": `export { boardArgs } from "./boards";`,
            "s/boards.ts": `// from "./config"\nimport * as fleet from "./fleet/index";\nconst s = 'import "./config"';`,
            "s/fleet/index.ts": `import type { StackConfig } from "../config";`,
            "s/leaf.ts": `import { a } from "./board-config";`,
            "s/self.ts": `const again = require("./self");`,
        });
        assert.deepStrictEqual(graph.get("s/config.ts"), ["s/board-config.ts"]);
        assert.deepStrictEqual(graph.get("s/boards.ts"), ["s/fleet/index.ts"]);
        assert.deepStrictEqual(importCycles(graph), [
            ["s/board-config.ts", "s/boards.ts", "s/fleet/index.ts", "s/config.ts", "s/board-config.ts"],
            ["s/self.ts", "s/self.ts"],
        ]);
        graph.set("s/fleet/index.ts", []);
        assert.deepStrictEqual(importCycles(graph), [["s/self.ts", "s/self.ts"]]);
    });

    it("there are none under components/ and stacks/", () => {
        const files = [...sources("components"), ...sources("stacks")];
        assert.ok(files.length > 100, `${files.length} sources`);
        const graph = importGraph(Object.fromEntries(files.map((f) => [f, fs.readFileSync(path.join(PACKAGE_ROOT, f), "utf8")])));
        assert.ok([...graph.values()].flat().length > files.length, "the graph has its edges");
        assert.deepStrictEqual(
            importCycles(graph).map((cycle) => cycle.join(" -> ")),
            [],
        );
    });
});
