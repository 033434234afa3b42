/**
 * A host that changed rack (or that a plain `pulumi up` of the fleet's stack converged, or the web
 * there): its resources move from the stack that holds them to its rack's (or the web's) with
 * the engine's `pulumi state move` (a component's children go with it), so nothing is replaced and
 * nothing runs again on the host.
 */
import { execFileSync } from "child_process";
import { Deployment, LocalWorkspace } from "@pulumi/pulumi/automation";
import type { Rack } from "./members";

/** The component types a host of the stack is declared as, at the top of a stack: a worker, a shared board, the web. */
const HOST_TYPES = new Set(["gpu-workers:worker:GpuWorker", "gpu-workers:board:SharedGpuBoard", "gpu-workers:concourse:ConcourseWeb"]);

/** Host name to its top-level component's URN, in a stack's state. */
export function hostsInState(deployment: Deployment | undefined): Map<string, string> {
    const resources = (deployment?.deployment as { resources?: { urn: string; type: string; parent?: string }[] } | undefined)?.resources ?? [];
    const stackUrn = resources.find((r) => r.type === "pulumi:pulumi:Stack")?.urn;
    return new Map(resources.filter((r) => HOST_TYPES.has(r.type) && r.parent === stackUrn).map((r) => [r.urn.split("::").pop()!, r.urn]));
}

export interface Move {
    host: string;
    urn: string;
    from: string;
    to: string;
}

/** The hosts whose state is in another stack than the member the config puts them in. */
export function movesOf(racks: Rack[], states: Map<string, Deployment | undefined>): Move[] {
    const rackOfHost = new Map(racks.flatMap((r) => r.hosts.map((h) => [h, r.stack] as const)));
    const moves: Move[] = [];
    for (const [stack, deployment] of states) {
        for (const [host, urn] of hostsInState(deployment)) {
            const to = rackOfHost.get(host);
            if (to !== undefined && to !== stack) moves.push({ host, urn, from: stack, to });
        }
    }
    return moves;
}

interface StateResource {
    urn: string;
    type: string;
    inputs?: unknown;
    outputs?: unknown;
}

function resourcesOf(deployment: Deployment): StateResource[] {
    return (deployment.deployment as { resources?: StateResource[] }).resources ?? [];
}

/** A URN with its stack part replaced. */
function inStack(urn: string, stack: string): string {
    return urn.replace(/^urn:pulumi:[^:]+::/, `urn:pulumi:${stack}::`);
}

/**
 * The source's providers given the inputs of the destination's of the same name, where they differ;
 * returns the source's state so changed, or undefined where nothing differs. The engine gives the
 * program's dynamic provider the project's whole config as inputs, and two member stacks' config
 * differs (gpu-workers:fleetMember, and the config of their last up); `pulumi state move` refuses to
 * hand a moved resource the destination's provider of the same name unless the inputs are equal
 * (pulumi/pulumi#17076). A provider is no resource on a host, and each stack's next up sets its
 * inputs from its own config again.
 */
export function alignedProviders(source: Deployment, dest: Deployment, destStack: string): Deployment | undefined {
    const destProviders = new Map(
        resourcesOf(dest)
            .filter((r) => r.type.startsWith("pulumi:providers:"))
            .map((r) => [r.urn, r]),
    );
    let changed = false;
    const resources = resourcesOf(source).map((r) => {
        const twin = r.type.startsWith("pulumi:providers:") ? destProviders.get(inStack(r.urn, destStack)) : undefined;
        if (!twin || JSON.stringify(twin.inputs) === JSON.stringify(r.inputs)) return r;
        changed = true;
        return { ...r, inputs: twin.inputs, outputs: twin.outputs };
    });
    return changed ? { ...source, deployment: { ...(source.deployment as object), resources } } : undefined;
}

/** Moves one host's state (run in the source stack's work folder), its providers aligned with the destination's first. */
export async function moveState(move: Move, workDirs: Map<string, string>, env: NodeJS.ProcessEnv): Promise<void> {
    const source = await LocalWorkspace.selectStack({ stackName: move.from, workDir: workDirs.get(move.from)! });
    const dest = await LocalWorkspace.selectStack({ stackName: move.to, workDir: workDirs.get(move.to)! });
    const aligned = alignedProviders(await source.exportStack(), await dest.exportStack(), move.to);
    if (aligned) await source.importStack(aligned);
    execFileSync("pulumi", ["state", "move", "--source", move.from, "--dest", move.to, "--yes", "--non-interactive", "--color", "never", move.urn], {
        cwd: workDirs.get(move.from)!,
        env,
        stdio: ["ignore", "pipe", "pipe"],
        encoding: "utf8",
    });
}
