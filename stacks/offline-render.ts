/**
 * The offline render: the plan of each host (planHost, the same one GpuWorker builds from)
 * written out with no Pulumi engine and no host: every file at its host path, and a
 * manifest of the steps, files and tags.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import { BoardPlan, HostPlan, planBoard, planHost, PlannedFile, planWebHost, planWorkerAdmission, WebPlan, webSpec, workerSpec } from "../components";
import type { PlannedStep } from "../components";
import * as pulumi from "@pulumi/pulumi";
import { boardSpecOf, SECRET_PLACEHOLDER } from "./board-config";
import { parseStack, RawStackConfig, StackConfig } from "./config";
import { StackWeb, webArgs, workerArgs } from "./component-args";
import type { HostConfig } from "./schema";

export { SECRET_PLACEHOLDER };
export const GENERATED_PLACEHOLDER = "[generated during up]";
/** A file uploaded from here that is not there yet (a release tarball not built yet): the render says so; `up` would fail. */
export const MISSING_PLACEHOLDER = "[not on this machine yet]";

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
    /** For the web node: where users reach it, and its main team user. */
    web?: { externalUrl: string; username: string };
    /** What pulumi preview and up warn about too (a web the network reaches over plain HTTP). */
    warnings?: string[];
    /** A shared board: the partition each worker got, its module ids and the GPUs' PCI addresses. */
    partitions?: { worker: string; partition: number; modules: number[]; pci: string[] }[];
}
export interface RenderedHost { manifest: HostManifest; contents: Map<string, Buffer> }

/** The bytes written for a file: what the host receives, or a placeholder for a secret or a generated key. */
function renderedBytes(file: PlannedFile): Buffer {
    if (file.secret) return Buffer.from(SECRET_PLACEHOLDER + "\n");
    if (file.generated) return Buffer.from(`${GENERATED_PLACEHOLDER}: ${file.generated}\n`);
    if (file.localPath) return fs.existsSync(file.localPath) ? fs.readFileSync(file.localPath) : Buffer.from(`${MISSING_PLACEHOLDER}: ${file.localPath}\n`);
    return Buffer.from(file.content);
}

function manifestFile(file: PlannedFile, bytes: Buffer): ManifestFile {
    return {
        path: file.path, mode: file.mode,
        sha256: file.secret ? SECRET_PLACEHOLDER : file.generated ? GENERATED_PLACEHOLDER : file.localPath && !fs.existsSync(file.localPath) ? MISSING_PLACEHOLDER : crypto.createHash("sha256").update(bytes).digest("hex"),
        component: file.component, resource: file.resource,
        ...(file.secret ? { secret: true as const } : {}),
        ...(file.generated ? { generated: file.generated } : {}),
        ...(file.localPath ? { uploadedFrom: file.localPath } : {}),
    };
}

/** A plan's files as the render writes them: each file's bytes (or placeholder), and its manifest entry. */
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

export function renderWebPlan(plan: WebPlan): RenderedHost {
    const { files, contents } = renderFiles(plan.files);
    return {
        manifest: {
            host: plan.name, transport: plan.transport, tags: [], steps: plan.steps, files, web: { externalUrl: plan.settings.externalUrl, username: plan.settings.mainTeamUser },
            ...(plan.warnings.length > 0 ? { warnings: plan.warnings } : {}),
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

export interface StackPlans {
    web?: WebPlan;
    hosts: HostPlan[];
    boards: BoardPlan[];
}

/**
 * The plans of a stack, through the same mapping `pulumi up` takes (stacks/component-args.ts);
 * what only `up` knows (secrets, generated keys) stands in as placeholders.
 */
export function planStack(stack: Pick<StackConfig, "hosts" | "web"> & Partial<Pick<StackConfig, "boards">>, baseDir: string): StackPlans {
    const secret = () => SECRET_PLACEHOLDER;
    let web: StackWeb | undefined;
    let webPlan: WebPlan | undefined;
    if (stack.web) {
        webPlan = planWebHost(webSpec(stack.web.name, webArgs(stack.web, secret, baseDir)));
        web = {
            config: stack.web,
            forWorkers: {
                tsaHost: webPlan.tsaForWorkers?.host, tsaPort: webPlan.tsaForWorkers?.port,
                // An output: the key is the web's, generated during up.
                tsaPublicKey: pulumi.output(GENERATED_PLACEHOLDER),
                url: webPlan.settings.externalUrl, username: webPlan.settings.mainTeamUser, password: SECRET_PLACEHOLDER,
            },
        };
    }
    const hosts = stack.hosts.map((host) => planHost(workerSpec(host.name, workerArgs(host, secret, baseDir, web))));
    const boards = (stack.boards ?? []).map((board) => planBoard(boardSpecOf(board, baseDir, web)));
    if (webPlan) webPlan = withAdmissions(webPlan, [...hosts, ...boards.flatMap((b) => b.workers)]);
    return { ...(webPlan ? { web: webPlan } : {}), hosts, boards };
}

/** The web's plan with what each worker of the stack places and runs on the web's host to be admitted. */
function withAdmissions(web: WebPlan, workers: HostPlan[]): WebPlan {
    const admissions = workers.flatMap((plan) => {
        const link = plan.links.find((l) => l.component === "ConcourseWorker");
        return link && plan.settings.concourse ? [planWorkerAdmission(web, link.name, plan.settings.concourse.name)] : [];
    });
    return { ...web, files: [...web.files, ...admissions.flatMap((a) => a.files)], steps: [...web.steps, ...admissions.flatMap((a) => a.steps)] };
}

/** One host of a stack without a web, rendered. */
export function renderHost(host: HostConfig, baseDir = process.cwd()): RenderedHost {
    return renderPlan(planStack({ hosts: [host] }, baseDir).hosts[0]);
}

export function renderStack(raw: RawStackConfig, baseDir = process.cwd()): RenderedHost[] {
    const plans = planStack(parseStack(raw), baseDir);
    return [...(plans.web ? [renderWebPlan(plans.web)] : []), ...plans.hosts.map(renderPlan), ...plans.boards.flatMap(renderBoardPlan)];
}
