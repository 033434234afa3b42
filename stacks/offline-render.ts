/**
 * The offline render: the plan of each host (planHost, the same one GpuWorker builds from)
 * written out with no Pulumi engine and no host: every file at its host path, and a
 * manifest of the steps, files and tags.
 */
import * as fs from "fs";
import { sha256Text } from "../components/lib/file-hash";
import { BoardPlan, planBoard } from "../components/lib/plan/board-plan";
import { HostPlan, planHost, PlannedFile } from "../components/lib/plan/host-plan";
import type { PlannedStep } from "../components/lib/plan/gpu-host";
import { boardSpecOf } from "./board-config";
import { parseStack, RawStackConfig } from "./config";
import { BoardConfig, HostConfig } from "./schema";

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
    /** A shared board: the partition each worker got, its module ids and the GPUs' PCI addresses. */
    partitions?: { worker: string; partition: number; modules: number[]; pci: string[] }[];
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

function renderFiles(planned: PlannedFile[]): { files: ManifestFile[]; contents: Map<string, Buffer> } {
    const contents = new Map<string, Buffer>();
    const files = planned.map((file) => {
        const bytes = renderedBytes(file);
        contents.set(file.path, bytes);
        return manifestFile(file, bytes);
    });
    return { files, contents };
}

export function renderPlan(plan: HostPlan): RenderedHost {
    const { files, contents } = renderFiles(plan.files);
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

/** A shared board: the board host itself (no tags: it is no worker), then each of its worker VMs. */
export function renderBoardPlan(plan: BoardPlan): RenderedHost[] {
    const { files, contents } = renderFiles(plan.files);
    const board: RenderedHost = {
        manifest: {
            host: plan.name,
            transport: "ssh",
            tags: [],
            steps: plan.steps,
            files,
            partitions: plan.partitions.map((p) => ({ worker: p.worker, partition: p.partition.id, modules: p.partition.modules, pci: p.gpus.map((g) => g.pciBusId ?? "") })),
        },
        contents,
    };
    return [board, ...plan.workers.map(renderPlan)];
}

export function renderHost(host: HostConfig): RenderedHost {
    return renderPlan(planHost(host));
}

export function renderBoard(board: BoardConfig): RenderedHost[] {
    return renderBoardPlan(planBoard(boardSpecOf(board)));
}

export function renderStack(raw: RawStackConfig): RenderedHost[] {
    const stack = parseStack(raw);
    return [...stack.hosts.map(renderHost), ...stack.boards.flatMap(renderBoard)];
}
