/**
 * The stack config as a whole: what the program reads from the engine, what the validated stack
 * holds, the error that lists every problem, and the stack's own options. Reading and checking
 * it, stage by stage: stacks/checks/stack.ts.
 */
import type { z } from "zod";
import type { HostStepTransport } from "../../components/program";
import type { KubernetesConfig } from "./kubernetes-schema";
import { FleetMember, fleetMemberSchema, FleetOptions } from "./fleet-schema";
import { describe, formatPath } from "./issues";
import type { NamespaceKey } from "./namespace-keys";
import { BoardConfig, HostConfig, stackOptionsSchema } from "./schema";
import type { WebConfig } from "./web-schema";

export class StackConfigError extends Error {
    constructor(public readonly problems: string[]) {
        super(`invalid stack config (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` + problems.map((p) => `  - ${p}`).join("\n"));
        this.name = "StackConfigError";
    }
}

export interface RawStackConfig {
    defaults?: unknown;
    hosts?: unknown;
    /** `gpu-workers:web`: the stack's Concourse web node (optional). */
    web?: unknown;
    /** `gpu-workers:kubernetes`: the Kubernetes clusters the hosts are nodes of (optional). */
    kubernetes?: unknown;
    /** gpu-workers:allowNoHosts: true lets an empty hosts list through (up then deletes every worker). */
    allowNoHosts?: unknown;
    /** `gpu-workers:hostSteps`: what runs every host step of the stack (hostStepsSchema). */
    hostSteps?: unknown;
    /** `gpu-workers:fleet`: how `npm run fleet` drives the stack's racks (fleetOptionsSchema). */
    fleet?: unknown;
    /** `gpu-workers:fleetMember`: the part of a fleet a member stack holds, a rack or the web (set by the fleet driver). */
    fleetMember?: unknown;
    /**
     * Every key the stack config sets in the project's namespace (namespaceKeysOf): one that is
     * neither the eight above nor a secret key the settings name, and looks like one of them or
     * holds a setting (an object or a list), is a mistake: a typo such as `gpu-workers:default`
     * would otherwise be ignored, and none of its settings apply. Other text is let be: a secret
     * of a host since removed from the stack, say.
     */
    keys?: NamespaceKey[];
}

/** The validated stack: the hosts that are workers on their own, the shared boards with their workers, and the web node when it has one. */
export interface StackConfig {
    hosts: HostConfig[];
    boards: BoardConfig[];
    web?: WebConfig;
    kubernetes?: KubernetesConfig;
    /** What runs every host step of the stack, its web's and boards' too. */
    hostSteps: HostStepTransport;
    fleet: FleetOptions;
    /** In a member stack of a fleet: which part (a rack: the hosts and boards above are its alone; the web: no host). */
    member?: FleetMember;
}

/** Why an empty hosts list is refused, and the two ways on. */
export const NO_HOSTS_PROBLEM =
    "hosts: the list is empty, so pulumi up would delete every worker this stack made. " +
    "To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true";

/** Why hosts that are no list are refused (nothing else of the stack can be checked without them). */
export const HOSTS_NOT_A_LIST_PROBLEM = "hosts: expected a list of hosts (gpu-workers:hosts in the stack config)";

/** The stack's own options (`gpu-workers:hostSteps`, `gpu-workers:allowNoHosts`, `gpu-workers:fleet`), when they parsed, and their problems. */
export function parseStackOptions(raw: RawStackConfig): { options?: z.output<typeof stackOptionsSchema>; problems: string[] } {
    const parsed = stackOptionsSchema.safeParse({ hostSteps: raw.hostSteps, allowNoHosts: raw.allowNoHosts, fleet: raw.fleet }, { reportInput: true });
    if (parsed.success) return { options: parsed.data, problems: [] };
    return { problems: parsed.error.issues.map((i) => `${formatPath("", i.path)}: ${describe(i)} (gpu-workers:${i.path[0] as string} in the stack config)`) };
}

/** `gpu-workers:fleetMember`, when given and valid, and its problems. */
export function parseFleetMember(raw: unknown): { member?: FleetMember; problems: string[] } {
    if (raw === undefined) return { problems: [] };
    const parsed = fleetMemberSchema.safeParse(raw, { reportInput: true });
    if (parsed.success) return { member: parsed.data, problems: [] };
    return {
        problems: parsed.error.issues.map(
            (i) => `${formatPath("fleetMember", i.path)}: ${describe(i)} (gpu-workers:fleetMember is set by npm run fleet in a member stack)`,
        ),
    };
}
