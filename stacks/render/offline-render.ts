/**
 * The offline render: the plan of each host (the one the stack's checks make and GpuWorker
 * builds from) written out with no Pulumi engine and no host: every file at its host path, and
 * a manifest of the steps, files and tags.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import { stringify } from "yaml";
import {
    ArtifactSource,
    kubernetesGpuNodesObjects,
    PlannedObject,
    BoardPlan,
    HostPlan,
    LOCAL_ARTIFACTS,
    linkOf,
    PlannedFile,
    planWorkerAdmission,
    WebPlan,
} from "../../components/program";
import type { Artifact, PlannedStep } from "../../components/program";
import { kubernetesArgs } from "../args/component-args";
import { parseStack } from "../checks/stack";
import { GENERATED_PLACEHOLDER, planValidStack, SECRET_PLACEHOLDER, StackPlans } from "../checks/stack-plans";
import type { HostConfig } from "../config/schema";
import type { RawStackConfig, StackConfig } from "../config/stack";

export { SECRET_PLACEHOLDER, GENERATED_PLACEHOLDER, StackPlans };
/** A file uploaded from here that is not there yet (a release tarball not built yet): the render says so; `up` would fail. */
export const MISSING_PLACEHOLDER = "[not on this machine yet]";

export interface ManifestFile {
    path: string;
    mode: string;
    sha256: string;
    component: string;
    resource: string;
    secret?: true;
    generated?: string;
    uploadedFrom?: string;
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
/**
 * What the render writes at a file's path: text (what the host receives, or a placeholder for a
 * secret or a generated key), or an artifact uploaded from here, which the writer copies. Hosts
 * share one artifact and the text of one host script, so a fleet holds neither per host.
 */
export type RenderedContent = string | Artifact;
export interface RenderedHost {
    manifest: HostManifest;
    contents: Map<string, RenderedContent>;
}

/** An uploaded file that is not on this machine yet (a release tarball not built yet): its render says so. */
function missing(artifact: Artifact): boolean {
    return artifact.sha256 === MISSING_PLACEHOLDER;
}

function renderedContent(file: PlannedFile): RenderedContent {
    if (file.secret) return SECRET_PLACEHOLDER + "\n";
    if (file.generated) return `${GENERATED_PLACEHOLDER}: ${file.generated}\n`;
    if (file.artifact) return missing(file.artifact) ? `${MISSING_PLACEHOLDER}: ${file.artifact.path}\n` : file.artifact;
    return file.content;
}

function manifestFile(file: PlannedFile, content: RenderedContent): ManifestFile {
    return {
        path: file.path,
        mode: file.mode,
        sha256: file.secret
            ? SECRET_PLACEHOLDER
            : file.generated
              ? GENERATED_PLACEHOLDER
              : file.artifact
                ? file.artifact.sha256
                : crypto
                      .createHash("sha256")
                      .update(content as string)
                      .digest("hex"),
        component: file.component,
        resource: file.resource,
        ...(file.secret ? { secret: true as const } : {}),
        ...(file.generated ? { generated: file.generated } : {}),
        ...(file.artifact ? { uploadedFrom: file.artifact.path } : {}),
    };
}

/** A plan's files as the render writes them: each file's content (or placeholder), and its manifest entry. */
function renderFiles(planned: PlannedFile[]): { files: ManifestFile[]; contents: Map<string, RenderedContent> } {
    const contents = new Map<string, RenderedContent>();
    const files = planned.map((file) => {
        const content = renderedContent(file);
        contents.set(file.path, content);
        return manifestFile(file, content);
    });
    return { files, contents };
}

/**
 * The artifacts of the render: this checkout's build, and a release named by path with its
 * digest, or, where it is not on this machine yet, a placeholder the render shows (up would stop on it).
 */
export const RENDER_ARTIFACTS: ArtifactSource = {
    built: () => LOCAL_ARTIFACTS.built(),
    release: (binary) =>
        "path" in binary && !("sha256" in binary) && !fs.existsSync(binary.path)
            ? { path: binary.path, sha256: MISSING_PLACEHOLDER }
            : LOCAL_ARTIFACTS.release(binary),
};

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
            host: plan.name,
            transport: plan.transport,
            tags: [],
            steps: plan.steps,
            files,
            web: { externalUrl: plan.settings.externalUrl, username: plan.settings.mainTeamUser },
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
            partitions: plan.partitions.map((p) => ({
                worker: p.worker,
                partition: p.partition.id,
                modules: p.partition.modules,
                pci: p.gpus.map((g) => g.pciBusId ?? ""),
            })),
        },
        contents,
    };
    return [board, ...plan.workers.map(renderPlan)];
}

/** A stack's plans as the render writes them: the web's with what each worker places and runs on its host to be admitted. */
export function renderedPlans(plans: StackPlans): StackPlans {
    return plans.web ? { ...plans, web: withAdmissions(plans.web, [...plans.hosts, ...plans.boards.flatMap((b) => b.workers)]) } : plans;
}

/** The plans of a stack validated otherwise than by parseStack (which plans as it checks), as the render writes them. */
export function planStack(
    stack: Pick<StackConfig, "hosts" | "web"> & Partial<Pick<StackConfig, "boards">>,
    baseDir: string,
    artifacts: ArtifactSource = RENDER_ARTIFACTS,
): StackPlans {
    return renderedPlans(planValidStack(stack, { baseDir, artifacts }));
}

/** The web's plan with what each worker of the stack places and runs on the web's host to be admitted. */
function withAdmissions(web: WebPlan, workers: HostPlan[]): WebPlan {
    const admissions = workers.flatMap((plan) => {
        const link = linkOf(plan.links, "ConcourseWorker");
        return link ? [planWorkerAdmission(web, link.name, link.settings.name)] : [];
    });
    return { ...web, files: [...web.files, ...admissions.flatMap((a) => a.files)], steps: [...web.steps, ...admissions.flatMap((a) => a.steps)] };
}

/** One host of a stack without a web, rendered. */
export function renderHost(host: HostConfig, baseDir = process.cwd()): RenderedHost {
    return renderPlan(planStack({ hosts: [host] }, baseDir).hosts[0]);
}

/** Every host of a stack's plans, rendered: the web, the hosts of their own, each board and its workers. */
export function renderPlans(stackPlans: StackPlans): RenderedHost[] {
    const plans = renderedPlans(stackPlans);
    return [...(plans.web ? [renderWebPlan(plans.web)] : []), ...plans.hosts.map(renderPlan), ...plans.boards.flatMap(renderBoardPlan)];
}

export function renderStack(raw: RawStackConfig, baseDir = process.cwd(), artifacts: ArtifactSource = RENDER_ARTIFACTS): RenderedHost[] {
    return renderPlans(parseStack(raw, { baseDir, artifacts }).plans);
}

/** A Kubernetes cluster of the stack, rendered: its objects as KubernetesGpuNodes makes them, and as one YAML stream. */
export interface RenderedCluster {
    cluster: string;
    objects: PlannedObject[];
    yaml: string;
}

/** The objects as `kubectl apply -f` takes them, in the order they are made; a Node's labels say that the Node is the kubelet's. */
export function clusterYaml(objects: PlannedObject[]): string {
    return objects
        .map(({ object, patch }) => {
            const note = patch ? `# ${object.kind} ${object.metadata.name}: its labels only, applied server-side; the kubelet owns the Node\n` : "";
            return `---\n${note}${stringify(object, { lineWidth: 0, aliasDuplicateObjects: false })}`;
        })
        .join("");
}

/** The stack's clusters (`gpu-workers:kubernetes`), through the same mapping `pulumi up` takes; the kubeconfig stands in as a placeholder. */
export function renderClusters(stack: Pick<StackConfig, "hosts" | "kubernetes">): RenderedCluster[] {
    return (stack.kubernetes?.clusters ?? []).map((cluster) => {
        const { kubeconfig: _secret, ...args } = kubernetesArgs(cluster, stack.hosts, () => SECRET_PLACEHOLDER);
        const objects = kubernetesGpuNodesObjects(cluster.name, args);
        return { cluster: cluster.name, objects, yaml: clusterYaml(objects) };
    });
}
