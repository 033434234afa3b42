/**
 * `render --against`: what changed between two renders of a stack, as a PR comment shows it. A
 * summary line per host (and per Kubernetes cluster), then a plain unified diff per host: every
 * file that changed, was added or was removed (`--- a/<host>/<path>`, `+++ b/<host>/<path>`;
 * `/dev/null` for a side that has none), the host's own settings with its tags one a line
 * (`<host>/[host]`) and each step (`<host>/[steps]/<name>`: its component, what it waits for,
 * its command with each `--option` on a line of its own). A file or step whose change is the very
 * same on an earlier host is named, not shown again: a fleet's change to one script is read once; so
 * is a file added (a new host's) just as another host of the earlier render has it, or removed
 * just as another host still has it: a new host shows what differs from the hosts there were.
 * The diff is jsdiff's (the `diff` package): a pure function of the two texts, which no git
 * setting, locale or external tool on the machine changes.
 */
import { structuredPatch } from "diff";
import type { HostManifest, ManifestStep } from "../stacks/render/offline-render";
import { FolderHost, KUBERNETES_DIR, RenderFolder } from "./render-folder";

/** One thing a host's diff compares: a file (its host path and mode), or the host's settings, or a step. */
interface Entry {
    /** After `<host>` in the diff's headers: a file's host path, `/[host]`, or `/[steps]/<name>`. */
    name: string;
    text: string;
    /** A file's mode (0644); none for the host's settings and its steps. */
    mode?: string;
}

/** The host's own settings as the diff shows them: its transport, its tags one a line, its web, partitions, notes and warnings. */
export function hostText(m: HostManifest): string {
    const lines = [`transport: ${m.transport}`, "tags:", ...m.tags.map((t) => `  ${t}`)];
    if (m.web) lines.push(`web: ${m.web.externalUrl} (main team user ${m.web.username})`);
    for (const p of m.partitions ?? []) lines.push(`fabric partition ${p.partition} (modules ${p.modules.join(", ")}; ${p.pci.join(", ")}) -> ${p.worker}`);
    if (m.stoppedBeforeWorker) lines.push(`stopped before the worker: ${m.stoppedBeforeWorker}`);
    for (const w of m.warnings ?? []) lines.push(`WARNING: ${w}`);
    return lines.join("\n") + "\n";
}

/** A command with each ` --option` on a line of its own, so that a changed option is a changed line. */
function commandLines(command: string): string {
    return command.split(/ (?=--[A-Za-z])/).join("\n    ");
}

/** A step as the diff shows it: its component, what it waits for (one a line), and its command (and its undo). */
export function stepText(s: ManifestStep): string {
    const lines = [`component: ${s.component}`, "depends on:", ...s.dependsOn.map((d) => `  ${d}`), `run: ${commandLines(s.run)}`];
    if (s.remove) lines.push(`remove: ${commandLines(s.remove)}`);
    return lines.join("\n") + "\n";
}

function entriesOf(host: FolderHost): Entry[] {
    return [
        { name: "/[host]", text: hostText(host.manifest) },
        ...host.manifest.files.map((f) => ({ name: f.path, text: host.files.get(f.path)!, mode: f.mode })),
        ...host.manifest.steps.map((s) => ({ name: `/[steps]/${s.name}`, text: stepText(s) })),
    ];
}

/** The hunks of a unified diff with three lines of context, as `diff -u` writes them. */
function hunks(oldText: string, newText: string): string[] {
    return structuredPatch("", "", oldText, newText, undefined, undefined, { context: 3 }).hunks.flatMap((h) => [
        // Unified diff writes an empty side's start one lower (`@@ -0,0 +1,3 @@`).
        `@@ -${h.oldLines === 0 ? h.oldStart - 1 : h.oldStart},${h.oldLines} +${h.newLines === 0 ? h.newStart - 1 : h.newStart},${h.newLines} @@`,
        ...h.lines,
    ]);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

interface Counts {
    changed: number;
    added: number;
    removed: number;
}
const counted = (c: Counts, what: string): string[] => {
    const kinds = (["changed", "added", "removed"] as const).filter((k) => c[k] > 0);
    if (kinds.length === 0) return [];
    if (kinds.length === 1) return [`${plural(c[kinds[0]], what)} ${kinds[0]}`];
    return [`${plural(c.changed + c.added + c.removed, what)}: ${kinds.map((k) => `${c[k]} ${k}`).join(", ")}`];
};

/** What differs between two renders: the report's text, and whether anything differs. */
export interface RenderDiff {
    text: string;
    changed: boolean;
}

/** Where each side of the diff comes from, for the report's first line. */
export interface Sides {
    a: string;
    b: string;
}

/** The diff of two renders of a stack (`a` the earlier, `b` this one), as `render --against` prints it. */
export function diffRenders(stack: string, a: RenderFolder, b: RenderFolder, sides: Sides): RenderDiff {
    const summary: string[] = [];
    const patches: string[] = [];
    /** The first host that showed each file's change, by the path and the change's hunks. */
    const shownOn = new Map<string, string>();
    const tally = { changed: 0, added: 0, removed: 0, same: 0 };
    /** Each file of a render by its path: the hosts that have it, with its text and mode. */
    const byPath = (render: RenderFolder) => {
        const index = new Map<string, { host: string; text: string; mode: string }[]>();
        for (const h of render.hosts)
            for (const f of h.manifest.files)
                index.set(f.path, [...(index.get(f.path) ?? []), { host: h.manifest.host, text: h.files.get(f.path)!, mode: f.mode }]);
        return index;
    };
    const inA = byPath(a);
    const inB = byPath(b);
    /** Another host of `render` with the file at `entry`, with that text and mode. */
    const twin = (index: typeof inA, host: string, entry: string, e: Entry) =>
        index.get(entry)?.find((f) => f.host !== host && f.text === e.text && f.mode === e.mode)?.host;

    const hostDiff = (name: string, before: FolderHost | undefined, after: FolderHost | undefined): void => {
        const old = new Map((before ? entriesOf(before) : []).map((e) => [e.name, e]));
        const now = new Map((after ? entriesOf(after) : []).map((e) => [e.name, e]));
        const names = [...now.keys(), ...[...old.keys()].filter((n) => !now.has(n))];
        const files: Counts = { changed: 0, added: 0, removed: 0 };
        const steps: Counts = { changed: 0, added: 0, removed: 0 };
        let settings = false;
        const lines: string[] = [];
        /** Files whose change an earlier host showed, and files added or removed as another host has them: by what the note says. */
        const same = new Map<string, string[]>();
        const note = (what: string, entry: string) => same.set(what, [...(same.get(what) ?? []), entry]);
        for (const entry of names) {
            const o = old.get(entry);
            const n = now.get(entry);
            const modeChanged = o?.mode !== undefined && n?.mode !== undefined && o.mode !== n.mode;
            if (o && n && o.text === n.text && !modeChanged) continue;
            const body = hunks(o?.text ?? "", n?.text ?? "");
            const isFile = (o ?? n)!.mode !== undefined;
            const counts = isFile ? files : entry.startsWith("/[steps]/") ? steps : undefined;
            if (counts) counts[!o ? "added" : !n ? "removed" : "changed"]++;
            else settings = true;
            if (isFile && !o) {
                const host = twin(inA, name, entry, n!);
                if (host !== undefined) {
                    note(`added, as on a/${host}`, entry);
                    continue;
                }
            }
            if (isFile && !n) {
                const host = twin(inB, name, entry, o!);
                if (host !== undefined) {
                    note(`removed, as on b/${host}`, entry);
                    continue;
                }
            }
            if (counts) {
                // A step is named after its host (`<host>-runc-wrapper-...`): the same step of another host is the same name without it.
                const alike = isFile || !entry.startsWith(`/[steps]/${name}-`) ? entry : `/[steps]/*${entry.slice(`/[steps]/${name}`.length)}`;
                const key = `${alike}\0${o ? (o.mode ?? "") : "-"}\0${n ? (n.mode ?? "") : "-"}\0${body.join("\n")}`;
                const first = shownOn.get(key);
                if (first !== undefined) {
                    note(`the same change as on ${first}`, entry.startsWith("/") && !isFile ? entry.slice(1) : entry);
                    continue;
                }
                shownOn.set(key, name);
            }
            const mode = (e: Entry | undefined) => (isFile && e && (!o || !n || modeChanged) ? `\tmode ${e.mode}` : "");
            lines.push(o ? `--- a/${name}${entry}${mode(o)}` : "--- /dev/null", n ? `+++ b/${name}${entry}${mode(n)}` : "+++ /dev/null", ...body);
        }
        const notes = [...same].flatMap(([what, entries]) => [`${name}: ${what}:`, ...entries.map((e) => `  ${e}`)]);
        if (!before || !after) {
            const m = (after ?? before)!.manifest;
            summary.push(
                after
                    ? `${name}: new host, ${plural(m.files.length, "file")}, ${plural(m.steps.length, "step")}; tags ${m.tags.join(" ") || "none"}`
                    : `${name}: removed (it had ${plural(m.files.length, "file")}, ${plural(m.steps.length, "step")})`,
            );
            tally[after ? "added" : "removed"]++;
        } else if (lines.length + notes.length === 0) {
            summary.push(`${name}: no changes`);
            tally.same++;
        } else {
            const gone = before.manifest.tags.filter((t) => !after.manifest.tags.includes(t));
            const came = after.manifest.tags.filter((t) => !before.manifest.tags.includes(t));
            const tags = gone.length + came.length > 0 ? [`tags ${[...came.map((t) => `+${t}`), ...gone.map((t) => `-${t}`)].join(" ")}`] : [];
            const other = settings && tags.length === 0 ? ["its settings"] : [];
            summary.push(`${name}: ${[...counted(files, "file"), ...counted(steps, "step"), ...tags, ...other].join("; ")}`);
            tally.changed++;
        }
        patches.push(...notes, ...lines);
    };

    const before = new Map(a.hosts.map((h) => [h.manifest.host, h]));
    const after = new Map(b.hosts.map((h) => [h.manifest.host, h]));
    for (const host of [...after.keys(), ...[...before.keys()].filter((h) => !after.has(h))]) hostDiff(host, before.get(host), after.get(host));

    let clustersChanged = 0;
    for (const cluster of [...b.clusters.keys(), ...[...a.clusters.keys()].filter((c) => !b.clusters.has(c))]) {
        const o = a.clusters.get(cluster);
        const n = b.clusters.get(cluster);
        const file = `${KUBERNETES_DIR}/${cluster}.yaml`;
        if (o === n) {
            summary.push(`cluster ${cluster}: no changes`);
            continue;
        }
        clustersChanged++;
        summary.push(`cluster ${cluster}: ${o === undefined ? "new" : n === undefined ? "removed" : "changed"}`);
        patches.push(o === undefined ? "--- /dev/null" : `--- a/${file}`, n === undefined ? "+++ /dev/null" : `+++ b/${file}`, ...hunks(o ?? "", n ?? ""));
    }

    const changed = tally.changed + tally.added + tally.removed + clustersChanged > 0;
    const hosts = tally.changed + tally.added + tally.removed + tally.same;
    const total = changed
        ? `${plural(hosts, "host")}: ${tally.changed} changed, ${tally.added} new, ${tally.removed} removed, ${tally.same} unchanged` +
          (clustersChanged ? `; ${plural(clustersChanged, "cluster")} changed` : "")
        : `no changes (${plural(hosts, "host")}${a.clusters.size + b.clusters.size > 0 ? `, ${plural(b.clusters.size, "cluster")}` : ""})`;
    const text =
        [`render of stack ${stack}: a/ is ${sides.a}, b/ is ${sides.b}`, ...summary, total, ...(patches.length ? ["", ...patches] : [])].join("\n") + "\n";
    return { text, changed };
}
