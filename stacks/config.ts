/**
 * Validates the raw stack config and applies defaults. Every problem is collected and
 * reported together, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { HostStepTransport, isPlainObject, mergeSettings } from "../components/program";
import { boardProblems, collectBoards } from "./board-checks";
import { crossHostProblems } from "./cross-host-checks";
import { checkLayer, covered, isBoard, Layer, parseHost, SETTINGS_KEYS, toolkitProblems } from "./host-config";
import { NamespaceKey, unknownKeyProblems } from "./namespace-keys";
import { parseWeb, webHostProblems } from "./web-config";
import { parseKubernetes } from "./kubernetes-config";
import type { KubernetesConfig } from "./kubernetes-schema";
import type { WebConfig } from "./web-schema";
import { BoardConfig, BUILTIN_DEFAULTS, HostConfig, stackOptionsSchema } from "./schema";

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
    /**
     * Every key the stack config sets in the project's namespace (namespaceKeysOf): one that is
     * neither the six above nor a secret key the settings name, and looks like one of them or
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
}

/** Why an empty hosts list is refused, and the two ways on. */
export const NO_HOSTS_PROBLEM =
    "hosts: the list is empty, so pulumi up would delete every worker this stack made. " +
    "To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true";

/** The hosts that are workers on their own (boards and their workers: parseStack). Throws like parseStack. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    return parseStack(raw).hosts;
}

/** Validates the whole stack config, web and boards included; throws StackConfigError listing every problem. */
export function parseStack(raw: RawStackConfig): StackConfig {
    const problems: string[] = raw.keys === undefined ? [] : unknownKeyProblems(raw.keys, [raw.defaults, raw.hosts, raw.web, raw.kubernetes]);
    let defaults: Layer = { settings: {}, reported: [], problems: [] };
    if (raw.defaults !== undefined) {
        if (!isPlainObject(raw.defaults)) {
            // Hosts can't tell what they were meant to inherit, so don't call their settings missing.
            defaults = { settings: {}, reported: [""], problems: ["defaults: expected an object of settings shared by all hosts"] };
        } else {
            const unknown = Object.keys(raw.defaults).filter((k) => !(SETTINGS_KEYS as string[]).includes(k));
            if (unknown.length > 0)
                problems.push(`defaults: unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (defaults take only ${SETTINGS_KEYS.join(", ")})`);
            defaults = checkLayer(raw.defaults, "defaults");
        }
        problems.push(...defaults.problems);
    }
    const options = stackOptionsSchema.safeParse({ hostSteps: raw.hostSteps, allowNoHosts: raw.allowNoHosts });
    if (!options.success)
        problems.push(...options.error.issues.map((i) => `${i.path.join(".")}: ${i.message} (gpu-workers:${i.path.join(".")} in the stack config)`));
    if (!Array.isArray(raw.hosts)) {
        problems.push("hosts: expected a list of hosts (gpu-workers:hosts in the stack config)");
        throw new StackConfigError(problems);
    }
    if (raw.hosts.length === 0 && !(options.success && options.data.allowNoHosts)) problems.push(NO_HOSTS_PROBLEM);
    const hosts = raw.hosts.map((entry, i) => parseHost(entry, i, defaults));
    for (const host of hosts) problems.push(...host.problems);
    problems.push(...crossHostProblems(hosts));
    problems.push(...boardProblems(hosts));
    problems.push(...toolkitProblems(hosts));
    const release = mergeSettings(BUILTIN_DEFAULTS.concourse, defaults.settings.concourse) as { version: string; binary?: unknown };
    const web = raw.web === undefined ? undefined : parseWeb(raw.web, release);
    if (web) problems.push(...web.problems);
    // Shared boards are no workers; their workers take the web's TSA like any other.
    const whole = hosts.map(({ entry, settings }) =>
        entry?.inventory && settings && !isBoard(settings) ? { ...settings, ...entry, inventory: entry.inventory } : undefined,
    );
    if (!web || web.web)
        problems.push(
            ...webHostProblems(
                web?.web,
                hosts.map((h, i) => ({ config: whole[i], reported: (path: string) => covered(path, h.reported) })),
            ),
        );
    const kubernetes =
        raw.kubernetes === undefined
            ? undefined
            : parseKubernetes(
                  raw.kubernetes,
                  hosts.map((h, i) => {
                      const entry: unknown = (raw.hosts as unknown[])[i];
                      return {
                          name: isPlainObject(entry) && typeof entry.name === "string" ? entry.name : undefined,
                          settings: h.settings,
                          onBoard: h.boardWorker || isBoard(h.settings),
                      };
                  }),
              );
    if (kubernetes) problems.push(...kubernetes.problems);
    if (problems.length > 0) throw new StackConfigError(problems);
    // No problems means every host parsed whole.
    return {
        hosts: hosts.flatMap(({ entry, settings, boardWorker }) =>
            entry?.inventory && settings && !boardWorker && !isBoard(settings) ? [{ ...settings, ...entry, inventory: entry.inventory }] : [],
        ),
        boards: collectBoards(hosts).map(({ board }) => board),
        ...(web?.web ? { web: web.web } : {}),
        ...(kubernetes?.kubernetes ? { kubernetes: kubernetes.kubernetes } : {}),
        hostSteps: options.data!.hostSteps,
    };
}
