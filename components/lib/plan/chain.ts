/**
 * From one worker host to its chain: the one GPU plan, then each link of the table (links/table.ts)
 * planned and rendered once, in order, with what it waits for. Pure: planHost (the one plan of a
 * host) builds on it, and GpuWorker gives each leaf component its link's part.
 */
import type { HostShape, WorkerSpec } from "../settings/worker-spec";
import { lxdConfigForWorker, lxdDevicesForWorker, lxdProxyDevice } from "../lxd/devices";
import { LxdDevices } from "../lxd/types";
import { planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { ExpectedFile, renderDriftCheck } from "../render/drift-check";
import { sha256Text } from "../file-hash";
import { RenderedComponent } from "../host/steps";
import type { LinkDef } from "../links/link";
import { stoppedBeforeWorker } from "../links/concourse-worker/plan";
import { LINK_ORDER, LINKS, LinkComponent, LinkSettings } from "../links/table";

/** One link of a host's chain: its component type, child name, settings, what it places, and the links it waits for. */
export type ChainLink = {
    [K in LinkComponent]: { component: K; name: string; settings: LinkSettings<K>; rendered: RenderedComponent; dependsOn: string[] };
}[LinkComponent];

/** The link of one component type in a chain, typed by it; undefined where the chain has none. */
export function linkOf<K extends LinkComponent>(links: readonly ChainLink[], component: K): Extract<ChainLink, { component: K }> | undefined {
    return links.find((l): l is Extract<ChainLink, { component: K }> => l.component === component);
}

/** The worker's GPU plan, from the inventory, the selection and what the worker adds (tags, fabric). */
export function workerGpus(host: WorkerSpec): WorkerGpuPlan {
    return planWorkerGpus(host.inventory, {
        selection: host.selection,
        cdi: host.toolkit.cdi,
        fabricManager: host.fabricManager,
        extraTags: host.concourse.tags,
        driverPin: host.driver.version,
        privilegedMode: host.concourse.privilegedMode,
        allocation: host.allocation,
        ...(host.fabricPartition ? { fabricPartition: host.fabricPartition.id } : {}),
    });
}

export interface ChainPlan {
    /** The worker's GPU plan, which every link plans with. */
    gpus: WorkerGpuPlan;
    /** The links the worker has, in order. */
    links: ChainLink[];
    /** Why the chain stops before the worker, in one line. */
    stoppedBeforeWorker?: string;
}

/** The chain of one host in order, the way GpuWorker builds it. */
export function planChain(host: WorkerSpec): ChainPlan {
    const gpus = workerGpus(host);
    const links: ChainLink[] = [];
    let previous: string[] = [];
    const beside: string[] = [];
    for (const component of LINK_ORDER) {
        const def: LinkDef<unknown> = LINKS[component];
        const link = planLink(component, host, gpus, def.afterBeside ? [...previous, ...beside] : previous);
        if (!link) continue;
        links.push(link);
        if (def.beside) beside.push(link.name);
        else previous = [link.name];
    }
    const stopped = stoppedBeforeWorker(host);
    return { gpus, links, ...(stopped ? { stoppedBeforeWorker: stopped } : {}) };
}

/** One link planned and rendered, waiting for `dependsOn`; undefined where the host has no such link. */
function planLink<K extends LinkComponent>(component: K, host: WorkerSpec, gpus: WorkerGpuPlan, dependsOn: string[]): ChainLink | undefined {
    const def = LINKS[component] as LinkDef<LinkSettings<K>>;
    const settings = def.plan(host, gpus);
    if (settings === undefined) return undefined;
    return { component, name: `${host.name}-${def.suffix}`, settings, rendered: def.render(settings), dependsOn } as ChainLink;
}

/** The GPU, dataset and config of a worker's LXD instance (GpuHost adds the sshd proxy). */
export function lxdInstanceSettings(
    host: WorkerSpec,
    lxd: NonNullable<HostShape["lxd"]>,
    plan: WorkerGpuPlan,
): { config: Record<string, string>; devices: LxdDevices } {
    const hostPci = host.fabricPartition ? Object.fromEntries(host.fabricPartition.hostPciBusIds.map((pci, index) => [index, pci])) : undefined;
    return {
        config: { ...lxdConfigForWorker(plan, { cdi: lxd.gpuCdi, type: lxd.type }), ...lxd.config },
        devices: {
            ...lxdDevicesForWorker(plan, {
                cdi: lxd.gpuCdi,
                datasetSource: lxd.datasetSource,
                datasetFolders: lxd.datasetFolders,
                datasets: host.datasets,
                shiftWritable: lxd.shiftWritable,
                hostPci,
            }),
            ...Object.fromEntries(
                Object.entries(lxd.serverPorts).map(([device, p]) => [device, lxdProxyDevice({ address: "127.0.0.1", port: p.port }, p.server, "instance")]),
            ),
        },
    };
}

/** The drift check of a whole chain: every file it places, and every step's own check. */
export function chainDriftCheck(links: Pick<ChainLink, "rendered">[]): string {
    const files = new Map<string, ExpectedFile>();
    for (const file of links.flatMap((l) => l.rendered.files)) {
        const sha256 = file.secret || file.generated ? null : file.artifact ? file.artifact.sha256 : sha256Text(file.content);
        files.set(file.path, { path: file.path, sha256 });
    }
    const checks = links.flatMap((l) => l.rendered.steps.flatMap((s) => (s.check ? [s.check] : [])));
    return renderDriftCheck([...files.values()], checks);
}
