/**
 * The one plan of a worker host: every resource that acts on it, GpuHost's own included,
 * every file it receives (each path once, by the rule in place-files.ts), and the tags.
 * GpuWorker builds its resources from this plan and the offline render writes it out, so
 * `pulumi preview` and `npm run render` cannot disagree. Pure.
 */
import type { VerifyField } from "../discovery/verify";
import { WorkerGpuPlan } from "../gpu/plan";
import { describeCheck, fileResourceName, HostFile, inFileSet, inOwnFolder, RenderedComponent, stepResourceName } from "../host/steps";
import { onTransport } from "../host/transport";
import { ChainLink, lxdInstanceSettings, planChain } from "./chain";
import type { z } from "zod";
import { AccessShape, GpuHostPlan, planGpuHost, PlannedStep } from "./gpu-host";
import { placeOnce } from "./place-files";
import { lxdInstanceFields, lxdWorkerTransportSchema } from "../settings/transport-schema";
import type { SshHostShape, WorkerSpec } from "../settings/worker-spec";

/**
 * A link of the chain as the plan places it, with the paths it renders and does not place itself:
 * an earlier component of the host places them, identically, or the worker's set of the program's
 * own files does (ownFiles).
 */
export type PlannedLink = ChainLink & { placedEarlier: string[] };

/** A file as the plan places it: once, by its owner (a component), through the resource named here. */
export interface PlannedFile extends HostFile {
    component: string;
    resource: string;
}

export interface HostPlan {
    name: string;
    transport: "ssh" | "lxd";
    /** GpuHost's name, how it reaches the host (LXD: the instance with its GPU and dataset devices), and its plan. */
    hostComponent: string;
    hostTransport: AccessShape;
    host: GpuHostPlan;
    /** What GpuHost's inventory check compares: a pinned driver that differs is the driver step's to fix, so it only warns. */
    verify: { driverPin: string; warnOnly: VerifyField[] };
    gpu: WorkerGpuPlan;
    links: PlannedLink[];
    /**
     * The links' files in the program's own folders (OWN_DIRS), secrets and generated ones apart:
     * GpuWorker places them all by one file set of its own (`<worker>-files`) once the host is
     * verified, and each link counts them as placed earlier. No step of the chain writes there, so
     * they need not wait for one, and one set costs one SSH login and one resource for them all.
     */
    ownFiles: HostFile[];
    /** Every step, check and instance, in an order that has each after what it waits for. */
    steps: PlannedStep[];
    files: PlannedFile[];
    stoppedBeforeWorker?: string;
}

/** A rendered component's steps and checks as planned steps: each waits for `upstream` and for its own files and steps. */
export function componentSteps(name: string, component: string, rendered: RenderedComponent, upstream: string[]): PlannedStep[] {
    const steps: PlannedStep[] = rendered.steps.map((step) => ({
        name: stepResourceName(name, step.name),
        component,
        dependsOn: [...upstream, ...step.dependsOn.map((d) => (d.startsWith("/") ? `file:${d}` : stepResourceName(name, d)))],
        run: step.create,
        ...(step.remove ? { remove: step.remove } : {}),
    }));
    for (const check of rendered.checks ?? []) {
        steps.push({ name: stepResourceName(name, check.name), component, dependsOn: [stepResourceName(name, check.after)], run: describeCheck(check) });
    }
    return steps;
}

/** A component that runs steps on a host, as the plan orders them (a link of the chain, or a board's service VM). */
export interface StepsLink {
    component: string;
    name: string;
    rendered: RenderedComponent;
    /** Names of the links this one waits for. */
    dependsOn: string[];
}

/** The steps of the chain's links, each waiting for its own files and steps and for the link before. */
export function chainSteps(links: StepsLink[], inventoryStep: string): PlannedStep[] {
    const steps: PlannedStep[] = [];
    const stepsOfLink = new Map<string, string[]>();
    for (const link of links) {
        const upstream = link.dependsOn.length > 0 ? link.dependsOn.flatMap((l) => stepsOfLink.get(l) ?? []) : [inventoryStep];
        const own = componentSteps(link.name, link.component, link.rendered, upstream);
        steps.push(...own);
        stepsOfLink.set(
            link.name,
            own.map((s) => s.name),
        );
    }
    return steps;
}

export function planHost(spec: WorkerSpec): HostPlan {
    const { gpus, links: chain, stoppedBeforeWorker } = planChain(spec);
    const hostComponent = `${spec.name}-host`;
    const hostTransport = onTransport<SshHostShape, z.output<typeof lxdWorkerTransportSchema>, AccessShape>(spec.transport, {
        ssh: (ssh) => ({ ssh: { user: ssh.user } }),
        lxd: (lxd) => ({ lxd: { ...lxdInstanceFields(lxd), ...lxdInstanceSettings(spec, lxd, gpus) } }),
    });
    const host = planGpuHost(hostComponent, hostTransport);
    const placement = placeOnce(spec.name, [
        { owner: "GpuHost", files: host.files },
        ...chain.map((link) => ({ owner: link.component, files: link.rendered.files })),
    ]);
    const ownFiles = placement.placed
        .filter((f) => f.owner !== "GpuHost" && inFileSet(f) && inOwnFolder(f.path))
        .map((f): HostFile => {
            const { owner: _owner, ...file } = f;
            return file;
        });
    const ownPaths = new Set(ownFiles.map((f) => f.path));
    const links = chain.map((link, i) => {
        const earlier = placement.placedEarlier[i + 1];
        const inOwnSet = link.rendered.files.map((f) => f.path).filter((p) => ownPaths.has(p) && !earlier.includes(p));
        return { ...link, placedEarlier: [...earlier, ...new Set(inOwnSet)] };
    });
    const componentName = new Map<string, string>(chain.map((l): [string, string] => [l.component, l.name]));
    // GpuHost's files go in with the instance it creates, before the first start.
    const resourceOf = (owner: string, file: HostFile) =>
        owner === "GpuHost"
            ? stepResourceName(hostComponent, "instance")
            : fileResourceName(ownPaths.has(file.path) ? spec.name : componentName.get(owner)!, file);
    const inventoryStep = host.steps[host.steps.length - 1].name;
    return {
        name: spec.name,
        transport: spec.transport.ssh ? "ssh" : "lxd",
        hostComponent,
        hostTransport,
        host,
        verify: {
            driverPin: spec.driver.version,
            // A pinned driver changes the driver and CUDA versions during up: before it, they only warn.
            warnOnly:
                spec.driver.version === "preinstalled" ? spec.verify.warnOnly : [...new Set([...spec.verify.warnOnly, "driver" as const, "cuda" as const])],
        },
        gpu: gpus,
        links,
        ownFiles,
        steps: [...host.steps, ...chainSteps(chain, inventoryStep)],
        files: placement.placed.map((f) => {
            const { owner, ...file } = f;
            return { ...file, component: owner, resource: resourceOf(owner, file) };
        }),
        ...(stoppedBeforeWorker ? { stoppedBeforeWorker } : {}),
    };
}
