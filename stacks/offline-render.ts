/**
 * The offline render: everything `pulumi up` would place on each host, computed from the
 * stack config alone (no engine, no host). Uses the same settings and renderers as GpuWorker.
 */
import * as fs from "fs";
import { sha256Text } from "../components/file-hash";
import { readHostScript } from "../components/host-scripts";
import { lxdSshProxyDevice } from "../components/lxd/devices";
import { HostFile } from "../components/host-steps";
import { lxdInstanceSettings, renderChain, workerSettings } from "../components/worker/settings";
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
    const discover = sha256Text(readHostScript("discover-gpus.sh"));
    const access: string[] = [];
    if ("lxd" in host.transport) {
        const lxd = host.transport.lxd;
        const { config, devices } = lxdInstanceSettings(host, lxd, settings.plan);
        devices.sshd = lxdSshProxyDevice({ address: lxd.sshAddress, port: lxd.sshPort });
        const instance = `${host.name}-host-instance`;
        steps.push({ name: instance, component: "GpuHost", dependsOn: [], run: `LXD: create ${lxd.type} ${lxd.instance} from image ${lxd.image} with config ${JSON.stringify(config)} and devices ${JSON.stringify(devices)}, push the SSH keys, start it and wait for sshd` });
        access.push(instance);
    }
    steps.push({ name: `${host.name}-host-discover`, component: "GpuHost", dependsOn: access, run: `bash -s (stdin: scripts/discover-gpus.sh, sha256 ${discover})` });
    steps.push({ name: `${host.name}-host-inventory`, component: "GpuHost", dependsOn: [`${host.name}-host-discover`], run: "compare the discovered inventory with the declared one (in the program)" });
    const stepsOfLink = new Map<string, string[]>();
    for (const link of renderChain(host.name, settings)) {
        for (const file of link.rendered.files) {
            if (contents.has(file.path)) continue;
            const data = fileContent(file);
            contents.set(file.path, data);
            files.push({
                path: file.path, mode: file.mode, component: link.component,
                sha256: file.secret ? SECRET_PLACEHOLDER : sha256Text(data),
                ...(file.secret ? { secret: true as const } : {}),
                ...(file.localPath ? { uploadedFrom: file.localPath } : {}),
            });
        }
        const upstream = link.dependsOn.length > 0 ? link.dependsOn.flatMap((l) => stepsOfLink.get(l) ?? []) : [`${host.name}-host-inventory`];
        stepsOfLink.set(link.name, link.rendered.steps.map((step) => `${link.name}-${step.name}`));
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
