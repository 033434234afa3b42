/**
 * The folder `npm run render` writes (DIR/<host>/ with every file at its host path and
 * manifest.json, DIR/_kubernetes/<cluster>.yaml), and what `render --against` reads back from
 * it. The render keeps a record of the host folders it wrote (DIR/.gpu-workers-render.json), so
 * that the next render into the same folder removes the folder of a host no longer in the stack,
 * and touches no folder it did not write.
 */
import * as fs from "fs";
import * as path from "path";
import { HostManifest, RenderedCluster, RenderedContent, RenderedHost, SECRET_PLACEHOLDER } from "../stacks/render/offline-render";

/** Where a cluster's objects go: a folder no host can have (a host's name is a DNS label, which has no `_`). */
export const KUBERNETES_DIR = "_kubernetes";

/** The render's record of the host folders it wrote: a name no host can have (a DNS label has no leading `.`). */
export const RENDER_RECORD = ".gpu-workers-render.json";

/** A host's name as the stack config allows it: a folder name with no `/`, `.` or `..`. */
const HOST_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * How an artifact (a binary uploaded from here) is written: as its bytes, copied once and then
 * linked at every other host path with the same digest and mode (a fleet of hosts costs one copy
 * of each binary), or, for a tree compared as text (test/golden), as a line naming its digest.
 */
export type ArtifactWrite = "bytes" | "digest";

/** Writes each host's files at their host paths under out/<host>/, and its manifest.json. */
export function writeRendered(hosts: RenderedHost[], out: string, artifacts: ArtifactWrite = "bytes"): void {
    const written = new Map<string, string>();
    // Each folder made once: a fleet's hosts have the same few folders, and mkdir is most of the render's time.
    const folders = new Set<string>();
    const write = (target: string, content: RenderedContent, mode: number): void => {
        if (typeof content === "string") return fs.writeFileSync(target, content, { mode });
        if (artifacts === "digest") return fs.writeFileSync(target, `artifact sha256 ${content.sha256}, uploaded from ${content.path}\n`, { mode });
        const key = `${content.sha256} ${mode}`;
        const first = written.get(key);
        if (first !== undefined) {
            try {
                return fs.linkSync(first, target);
            } catch {
                /* another file system, or no links there: copy */
            }
        }
        fs.copyFileSync(content.path, target);
        fs.chmodSync(target, mode);
        written.set(key, target);
    };
    for (const { manifest, contents } of hosts) {
        const root = path.join(out, manifest.host);
        fs.rmSync(root, { recursive: true, force: true });
        for (const file of manifest.files) {
            const target = path.join(root, file.path);
            const folder = path.dirname(target);
            if (!folders.has(folder)) {
                fs.mkdirSync(folder, { recursive: true });
                folders.add(folder);
            }
            write(target, contents.get(file.path)!, parseInt(file.mode, 8));
        }
        fs.writeFileSync(path.join(root, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
    }
}

/** Each cluster's objects as out/_kubernetes/<cluster>.yaml. */
export function writeClusters(clusters: RenderedCluster[], out: string): void {
    const dir = path.join(out, KUBERNETES_DIR);
    fs.rmSync(dir, { recursive: true, force: true });
    if (clusters.length === 0) return;
    fs.mkdirSync(dir, { recursive: true });
    for (const c of clusters) fs.writeFileSync(path.join(dir, `${c.cluster}.yaml`), c.yaml);
}

/** The host folders the render's record in `out` names (those a render wrote there), or undefined where it has none. */
export function recordedHosts(out: string): string[] | undefined {
    const file = path.join(out, RENDER_RECORD);
    if (!fs.existsSync(file)) return undefined;
    let hosts: unknown;
    try {
        hosts = (JSON.parse(fs.readFileSync(file, "utf8")) as { hosts?: unknown }).hosts;
    } catch (e) {
        throw new Error(`${file}: not the render's record (${(e as Error).message}); remove it, or choose another folder`, { cause: e });
    }
    if (!Array.isArray(hosts) || !hosts.every((h): h is string => typeof h === "string" && HOST_NAME.test(h)))
        throw new Error(`${file}: not the render's record (its hosts are not a list of host names); remove it, or choose another folder`);
    return hosts;
}

/** A folder a render made before it kept a record: its manifest.json names the host of the folder's name. */
function earlierRenderOf(folder: string, host: string): boolean {
    try {
        return (JSON.parse(fs.readFileSync(path.join(folder, "manifest.json"), "utf8")) as { host?: unknown }).host === host;
    } catch {
        return false;
    }
}

/**
 * Writes a render into `out`: each host's folder, the clusters and the record. The folder of a
 * host that an earlier render wrote there and that the stack no longer has is removed (returned,
 * to be said); a folder in the way that no render wrote is left alone, and the render stops.
 */
export function writeRenderFolder(hosts: RenderedHost[], clusters: RenderedCluster[], out: string, artifacts: ArtifactWrite = "bytes"): { removed: string[] } {
    const earlier = recordedHosts(out) ?? [];
    const names = new Set(hosts.map((h) => h.manifest.host));
    for (const host of names) {
        const folder = path.join(out, host);
        if (fs.existsSync(folder) && !earlier.includes(host) && !earlierRenderOf(folder, host))
            throw new Error(
                `${folder} is in the way: the render did not write it (it is in no record of ${path.join(out, RENDER_RECORD)}); move it, or choose another --out`,
            );
    }
    const removed = earlier.filter((host) => !names.has(host) && fs.existsSync(path.join(out, host)));
    fs.mkdirSync(out, { recursive: true });
    // The record first names every folder this render may leave behind, so a render cut short still owns them.
    const record = (list: string[]) => fs.writeFileSync(path.join(out, RENDER_RECORD), JSON.stringify({ hosts: list }, null, 2) + "\n");
    record([...new Set([...earlier, ...names])]);
    for (const host of removed) fs.rmSync(path.join(out, host), { recursive: true, force: true });
    writeRendered(hosts, out, artifacts);
    writeClusters(clusters, out);
    record([...names]);
    return { removed };
}

/** A host of a render folder read back: its manifest, and each file's text as `render --against` compares it. */
export interface FolderHost {
    manifest: HostManifest;
    /** By host path: the file's text; a secret as the render's placeholder (never read); an artifact as a line naming its digest and where it is uploaded from. */
    files: Map<string, string>;
}
export interface RenderFolder {
    hosts: FolderHost[];
    /** By cluster name: its objects' YAML. */
    clusters: Map<string, string>;
}

/**
 * Reads a render folder back. `roots` are the folders an artifact's path is shown relative to
 * (the project folder and the checkout the render ran in), so that two checkouts compare equal.
 */
export function readRenderFolder(dir: string, roots: string[]): RenderFolder {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new Error(`${dir}: no such folder`);
    const recorded = recordedHosts(dir);
    const names =
        recorded ??
        fs
            .readdirSync(dir)
            .filter((name) => HOST_NAME.test(name) && earlierRenderOf(path.join(dir, name), name))
            .sort();
    const clusterDir = path.join(dir, KUBERNETES_DIR);
    const clusters = new Map(
        fs.existsSync(clusterDir)
            ? fs
                  .readdirSync(clusterDir)
                  .filter((f) => f.endsWith(".yaml"))
                  .sort()
                  .map((f) => [f.slice(0, -".yaml".length), fs.readFileSync(path.join(clusterDir, f), "utf8")] as const)
            : [],
    );
    if (recorded === undefined && names.length === 0 && clusters.size === 0)
        throw new Error(`${dir} holds no render: no ${RENDER_RECORD}, no <host>/manifest.json, no ${KUBERNETES_DIR}/`);
    const shown = (p: string): string => {
        const root = roots.find((r) => p.startsWith(r + path.sep));
        return root === undefined ? p : path.relative(root, p);
    };
    const hosts = names.map((host) => {
        const manifestFile = path.join(dir, host, "manifest.json");
        if (!fs.existsSync(manifestFile)) throw new Error(`${manifestFile} is missing: the render's record names ${host}, but its folder is not whole`);
        const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8")) as HostManifest;
        const files = new Map<string, string>();
        for (const file of manifest.files) {
            if (file.secret) files.set(file.path, SECRET_PLACEHOLDER + "\n");
            else if (file.uploadedFrom !== undefined) files.set(file.path, `artifact sha256 ${file.sha256}, uploaded from ${shown(file.uploadedFrom)}\n`);
            else {
                const onDisk = path.join(dir, host, file.path);
                if (!fs.existsSync(onDisk)) throw new Error(`${onDisk} is missing: ${manifestFile} lists it`);
                files.set(file.path, fs.readFileSync(onDisk, "utf8"));
            }
        }
        return { manifest, files };
    });
    return { hosts, clusters };
}
