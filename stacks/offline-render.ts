/**
 * The offline render: everything `pulumi up` would place on each host, computed from the
 * stack config alone (no engine, no host). Uses the same settings and renderers as GpuWorker.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import { hostScriptFile } from "../components/host-scripts";
import { HostFile } from "../components/host-steps";
import { renderChain, workerSettings } from "../components/worker/settings";
import { parseStackConfig, RawStackConfig } from "./config";
import { HostConfig } from "./schema";

export const SECRET_PLACEHOLDER = "[secret]";

export interface ManifestFile { path: string; mode: string; sha256: string; component: string; secret?: true; uploadedFrom?: string }
export interface ManifestStep { name: string; component: string; dependsOn: string[]; run: string; remove?: string }
export interface HostManifest {
    host: string;
    transport: "ssh" | "lxd";
    tags: string[];
    steps: ManifestStep[];
    files: ManifestFile[];
    stoppedBeforeWorker?: string;
}
export interface RenderedHost { manifest: HostManifest; contents: Map<string, Buffer> }

const sha256 = (data: Buffer) => crypto.createHash("sha256").update(data).digest("hex");

function fileContent(file: HostFile): Buffer {
    if (file.secret) return Buffer.from(SECRET_PLACEHOLDER + "\n");
    if (file.localPath) {
        if (!fs.existsSync(file.localPath)) throw new Error(`${file.path}: the local file ${file.localPath} to upload does not exist`);
        return fs.readFileSync(file.localPath);
    }
    return Buffer.from(file.content);
}

export function renderHost(host: HostConfig): RenderedHost {
    const settings = workerSettings(host);
    const contents = new Map<string, Buffer>();
    const files: ManifestFile[] = [];
    const steps: ManifestStep[] = [];
    const discover = hostScriptFile("discover-gpus.sh");
    steps.push({ name: `${host.name}-host-discover`, component: "GpuHost", dependsOn: "lxd" in host.transport ? [`${host.name}-host-instance`] : [], run: `bash -s < ${discover.path} (scripts/discover-gpus.sh sent on stdin)` });
    steps.push({ name: `${host.name}-host-inventory`, component: "GpuHost", dependsOn: [`${host.name}-host-discover`], run: "compare the discovered inventory with the declared one (in the program)" });
    for (const link of renderChain(host.name, settings)) {
        for (const file of link.rendered.files) {
            if (contents.has(file.path)) continue;
            const data = fileContent(file);
            contents.set(file.path, data);
            files.push({
                path: file.path, mode: file.mode, component: link.component,
                sha256: file.secret ? SECRET_PLACEHOLDER : sha256(data),
                ...(file.secret ? { secret: true as const } : {}),
                ...(file.localPath ? { uploadedFrom: file.localPath } : {}),
            });
        }
        const upstream = link.dependsOn.length > 0 ? link.dependsOn : [`${host.name}-host-inventory`];
        for (const step of link.rendered.steps) {
            steps.push({
                name: `${link.name}-${step.name}`, component: link.component,
                dependsOn: [...upstream, ...step.dependsOn.map((d) => (d.startsWith("/") ? `file:${d}` : `${link.name}-${d}`))],
                run: step.create,
                ...(step.remove ? { remove: step.remove } : {}),
            });
        }
    }
    return {
        manifest: {
            host: host.name,
            transport: "ssh" in host.transport ? "ssh" : "lxd",
            tags: settings.plan.tags,
            steps,
            files,
            ...(settings.stoppedBeforeWorker ? { stoppedBeforeWorker: settings.stoppedBeforeWorker } : {}),
        },
        contents,
    };
}

export function renderStack(raw: RawStackConfig): RenderedHost[] {
    return parseStackConfig(raw).map(renderHost);
}
