/**
 * The offline render: the plan of each host (planHost, the same one GpuWorker builds from)
 * written out with no Pulumi engine and no host: every file at its host path, and a
 * manifest of the steps, files and tags.
 */
import * as fs from "fs";
import { sha256Text } from "../components/lib/file-hash";
import { HostPlan, planHost, PlannedFile } from "../components/lib/plan/host-plan";
import type { PlannedStep } from "../components/lib/plan/gpu-host";
import { parseStackConfig, RawStackConfig } from "./config";
import { HostConfig } from "./schema";

export const SECRET_PLACEHOLDER = "[secret]";
export const GENERATED_PLACEHOLDER = "[generated during up]";

export interface ManifestFile {
    path: string; mode: string; sha256: string; component: string; resource: string;
    secret?: true; generated?: string; uploadedFrom?: string;
}
export type ManifestStep = PlannedStep;
export interface HostManifest {
    host: string;
    transport: "ssh" | "lxd";
    tags: string[];
    steps: ManifestStep[];
    files: ManifestFile[];
    stoppedBeforeWorker?: string;
}
export interface RenderedHost { manifest: HostManifest; contents: Map<string, Buffer> }

/** The bytes written for a file: what the host receives, or a placeholder for a secret or a generated key. */
function renderedBytes(file: PlannedFile): Buffer {
    if (file.secret) return Buffer.from(SECRET_PLACEHOLDER + "\n");
    if (file.generated) return Buffer.from(`${GENERATED_PLACEHOLDER}: ${file.generated}\n`);
    if (file.localPath) {
        if (!fs.existsSync(file.localPath)) throw new Error(`${file.path}: the local file ${file.localPath} to upload does not exist`);
        return fs.readFileSync(file.localPath);
    }
    return Buffer.from(file.content);
}

function manifestFile(file: PlannedFile, bytes: Buffer): ManifestFile {
    return {
        path: file.path, mode: file.mode,
        sha256: file.secret ? SECRET_PLACEHOLDER : file.generated ? GENERATED_PLACEHOLDER : sha256Text(bytes),
        component: file.component, resource: file.resource,
        ...(file.secret ? { secret: true as const } : {}),
        ...(file.generated ? { generated: file.generated } : {}),
        ...(file.localPath ? { uploadedFrom: file.localPath } : {}),
    };
}

export function renderPlan(plan: HostPlan): RenderedHost {
    const contents = new Map<string, Buffer>();
    const files = plan.files.map((file) => {
        const bytes = renderedBytes(file);
        contents.set(file.path, bytes);
        return manifestFile(file, bytes);
    });
    return {
        manifest: {
            host: plan.name,
            transport: plan.transport,
            tags: plan.gpu.tags,
            steps: plan.steps,
            files,
            ...(plan.stoppedBeforeWorker ? { stoppedBeforeWorker: plan.stoppedBeforeWorker } : {}),
        },
        contents,
    };
}

export function renderHost(host: HostConfig): RenderedHost {
    return renderPlan(planHost(host));
}

export function renderStack(raw: RawStackConfig): RenderedHost[] {
    return parseStackConfig(raw).map(renderHost);
}
