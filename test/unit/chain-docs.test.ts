/**
 * The chain as the docs draw it is the chain the code walks: every link of the table
 * (components/lib/links/table.ts), after GpuHost, is in the README's diagram and in
 * docs/host-steps.md's table of what a host gets, in chain order. A link added to the table
 * and to neither doc fails here.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { LINK_ORDER, LINKS } from "../../components/lib/links/table";

/** GpuWorker makes GpuHost first, then the table's links. */
const CHAIN: string[] = ["GpuHost", ...LINK_ORDER];
/** Links that run beside the line: drawn on a branch of their own, so their place in reading order is free. */
const BESIDE = new Set<string>(LINK_ORDER.filter((k) => LINKS[k].beside));

/** The chain's names in the text, in reading order (line by line, left to right). */
function namesInOrder(text: string, names: readonly string[]): string[] {
    const found: { name: string; at: number }[] = [];
    for (const name of names) for (const m of text.matchAll(new RegExp(`\\b${name}\\b`, "g"))) found.push({ name, at: m.index });
    return found.sort((a, b) => a.at - b.at).map((f) => f.name);
}

/** The README's first fenced block: the chain diagram at its top. */
function readmeDiagram(readme: string): string {
    const m = /^```\n([\s\S]*?)^```$/m.exec(readme);
    assert.ok(m, "README.md: no fenced diagram of the chain");
    assert.ok(readme.indexOf("\n## ") > m.index, "README.md: the chain diagram comes before the first section");
    return m[1];
}

/** The component column of docs/host-steps.md's table of what a host gets. */
function hostStepsRows(doc: string): string[] {
    const start = doc.indexOf("| component | on the host |");
    assert.ok(start >= 0, "docs/host-steps.md: no table headed `| component | on the host |`");
    const rows: string[] = [];
    for (const line of doc.slice(start).split("\n").slice(2)) {
        if (!line.startsWith("|")) break;
        rows.push(line.split("|")[1].trim());
    }
    return rows;
}

/** What is wrong with the diagram: a link missing, or the line's links out of order. */
function diagramProblems(diagram: string): string[] {
    const seen = namesInOrder(diagram, CHAIN);
    const problems = CHAIN.filter((n) => !seen.includes(n)).map((n) => `README.md's chain diagram misses ${n}`);
    const line = CHAIN.filter((n) => !BESIDE.has(n));
    const drawn = seen.filter((n) => line.includes(n));
    if (problems.length === 0 && drawn.join(" ") !== line.join(" "))
        problems.push(`README.md's chain diagram reads ${drawn.join(" → ")}; the chain is ${line.join(" → ")}`);
    return problems;
}

/** What is wrong with the table: a link missing, or the links' rows out of order (rows of other components may sit between). */
function tableProblems(rows: string[]): string[] {
    const problems = CHAIN.filter((n) => !rows.includes(n)).map((n) => `docs/host-steps.md's table misses a row for ${n}`);
    const linkRows = rows.filter((r) => CHAIN.includes(r));
    if (problems.length === 0 && linkRows.join(" ") !== CHAIN.join(" "))
        problems.push(`docs/host-steps.md's table has the links in the order ${linkRows.join(", ")}; the chain is ${CHAIN.join(", ")}`);
    return problems;
}

describe("the chain in the docs (README diagram, docs/host-steps.md table)", () => {
    const readme = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");
    const hostSteps = fs.readFileSync(path.join(PACKAGE_ROOT, "docs", "host-steps.md"), "utf8");

    it("the README's diagram draws every link of the chain, the line's in chain order", () => {
        assert.deepStrictEqual(diagramProblems(readmeDiagram(readme)), []);
    });

    it("docs/host-steps.md's table has a row for every link, in chain order", () => {
        assert.deepStrictEqual(tableProblems(hostStepsRows(hostSteps)), []);
    });

    it("the checks fail on a diagram or a table that misses a link or swaps two", () => {
        const diagram = readmeDiagram(readme);
        const last = LINK_ORDER[LINK_ORDER.length - 1];
        assert.deepStrictEqual(diagramProblems(diagram.replace(new RegExp(`\\b${last}\\b`, "g"), "Something")), [`README.md's chain diagram misses ${last}`]);
        const swapped = diagram.replace("WorkerValidator", "@@").replace("ConcourseWorker", "WorkerValidator").replace("@@", "ConcourseWorker");
        assert.match(diagramProblems(swapped).join("\n"), /diagram reads .*ConcourseWorker → WorkerValidator/);

        const rows = hostStepsRows(hostSteps);
        assert.deepStrictEqual(tableProblems(rows.filter((r) => r !== "GpuHealth")), ["docs/host-steps.md's table misses a row for GpuHealth"]);
        const i = rows.indexOf("GpuMps");
        const reordered = [...rows];
        [reordered[i], reordered[i - 1]] = [reordered[i - 1], reordered[i]];
        assert.match(tableProblems(reordered).join("\n"), /in the order .*GpuMps, RuncWrapper/);
    });
});
