/**
 * The offline render: everything `pulumi up` would place on each host, computed from the
 * stack config alone (no engine, no host). Uses the same settings and renderers as GpuWorker.
 */
import * as fs from "fs";
import { sha256Text } from "../components/file-hash";
import { readHostScript } from "../components/host-scripts";
import { lxdSshProxyDevice } from "../components/lxd/devices";
import { HostFile } from "../components/host-steps";
import { ChainLink, lxdInstanceSettings, renderChain, workerSettings } from "../components/worker/settings";
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


/** The bytes the host receives, as rendered here (a secret's are only compared, never written out). */
function hostBytes(file: HostFile): Buffer {
    if (file.localPath) {
        if (!fs.existsSync(file.localPath)) throw new Error(`${file.path}: the local file ${file.localPath} to upload does not exist`);
        return fs.readFileSync(file.localPath);
    }
    return Buffer.from(file.content);
}

/**
 * Every file the chain places, once per path. Two components placing one path with the same
 * bytes place one file; with different bytes the host would keep whichever ran last, so that
 * is refused rather than one of them silently dropped.
 */
export function placeFiles(hostName: string, links: ChainLink[]): { files: ManifestFile[]; contents: Map<string, Buffer> } {
    const files: ManifestFile[] = [];
    const contents = new Map<string, Buffer>();
    const placed = new Map<string, { component: string; bytes: Buffer }>();
    for (const link of links) {
        for (const file of link.rendered.files) {
            const bytes = hostBytes(file);
            const earlier = placed.get(file.path);
            if (earlier) {
                if (!earlier.bytes.equals(bytes)) {
                    throw new Error(`host ${hostName}: ${file.path} is placed by both ${earlier.component} and ${link.component} with different contents`);
                }
                continue;
            }
            placed.set(file.path, { component: link.component, bytes });
            contents.set(file.path, file.secret ? Buffer.from(SECRET_PLACEHOLDER + "\n") : bytes);
            files.push({
                path: file.path, mode: file.mode, component: link.component,
                sha256: file.secret ? SECRET_PLACEHOLDER : sha256Text(bytes),
                ...(file.secret ? { secret: true as const } : {}),
                ...(file.localPath ? { uploadedFrom: file.localPath } : {}),
            });
        }
    }
    return { files, contents };
}

export function renderHost(host: HostConfig): RenderedHost {
    const settings = workerSettings(host);
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
    const chain = renderChain(host.name, settings);
    const { files, contents } = placeFiles(host.name, chain);
    const stepsOfLink = new Map<string, string[]>();
    for (const link of chain) {
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
