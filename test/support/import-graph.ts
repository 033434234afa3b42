/**
 * The import graph of TypeScript sources, read with the compiler's own pre-processor (so
 * comments and strings are no imports, and `import type` counts: a cycle of types is still a
 * knot a reader has to undo), and the cycles in it.
 */
import * as path from "path";
import * as ts from "typescript";

/** Each file (a path with "/") to the files of the set it imports. Imports from outside the set are left out. */
export function importGraph(sources: Record<string, string>): Map<string, string[]> {
    const graph = new Map<string, string[]>();
    for (const [file, text] of Object.entries(sources)) {
        const imported = ts
            .preProcessFile(text, true, true)
            .importedFiles.map((f) => f.fileName)
            .filter((s) => s.startsWith("."));
        const targets = imported.flatMap((spec) => {
            const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
            const hit = [`${base}.ts`, `${base}/index.ts`].find((candidate) => candidate in sources);
            return hit ? [hit] : [];
        });
        graph.set(file, [...new Set(targets)]);
    }
    return graph;
}

/**
 * One cycle per knot of the graph (a strongly connected component, or a file importing
 * itself), as the files in import order with the first repeated at the end: `a -> b -> a`.
 */
export function importCycles(graph: Map<string, string[]>): string[][] {
    // Tarjan's algorithm: each knot once, however many cycles run through it.
    let next = 0;
    const order = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const knots: string[][] = [];
    const visit = (v: string): void => {
        order.set(v, next);
        low.set(v, next++);
        stack.push(v);
        onStack.add(v);
        for (const w of graph.get(v) ?? []) {
            if (!order.has(w)) {
                visit(w);
                low.set(v, Math.min(low.get(v)!, low.get(w)!));
            } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
        }
        if (low.get(v) !== order.get(v)) return;
        const knot: string[] = [];
        let w: string;
        do {
            w = stack.pop()!;
            onStack.delete(w);
            knot.push(w);
        } while (w !== v);
        if (knot.length > 1 || (graph.get(v) ?? []).includes(v)) knots.push(knot);
    };
    for (const v of [...graph.keys()].sort()) if (!order.has(v)) visit(v);
    return knots.map((knot) => shortestCycle(graph, [...knot].sort()[0], new Set(knot)));
}

/** The shortest way from `start` back to itself inside `knot` (breadth first). */
function shortestCycle(graph: Map<string, string[]>, start: string, knot: Set<string>): string[] {
    const cameFrom = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
        const v = queue.shift()!;
        for (const w of graph.get(v) ?? []) {
            if (!knot.has(w)) continue;
            if (w === start) {
                const way = [start];
                for (let at = v; at !== start; at = cameFrom.get(at)!) way.splice(1, 0, at);
                return [...way, start];
            }
            if (!cameFrom.has(w)) {
                cameFrom.set(w, v);
                queue.push(w);
            }
        }
    }
    return [start, start];
}
