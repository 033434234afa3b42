/**
 * Validates the raw stack config and applies defaults: the config read part by part
 * (stacks/config/), and where a part is read, the checks of its plan (here). Every problem is
 * collected and reported together, in that order, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { collectBoards, boardRefProblems } from "../config/boards";
import { crossHostProblems } from "../config/cross-host-checks";
import { parseHost, toolkitProblems, wholeHost } from "../config/host-config";
import { nodeCandidates, parseKubernetes } from "../config/kubernetes-config";
import { parseDefaults } from "../config/layer";
import { unknownKeyProblems } from "../config/namespace-keys";
import { HOSTS_NOT_A_LIST_PROBLEM, NO_HOSTS_PROBLEM, parseStackOptions, RawStackConfig, StackConfig, StackConfigError } from "../config/stack";
import { checkedHosts, parseWeb, releaseDefaults, webHostProblems } from "../config/web-config";
import type { HostConfig } from "../config/schema";
import { boardPlanProblems } from "./board-plans";
import { hostPlanProblems } from "./host-plans";

/** The hosts that are workers on their own (boards and their workers: parseStack). Throws like parseStack. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    return parseStack(raw).hosts;
}

/** Validates the whole stack config, web and boards included; throws StackConfigError listing every problem. */
export function parseStack(raw: RawStackConfig): StackConfig {
    const problems: string[] = raw.keys === undefined ? [] : unknownKeyProblems(raw.keys, [raw.defaults, raw.hosts, raw.web, raw.kubernetes]);
    const defaults = parseDefaults(raw.defaults);
    const { options, problems: optionProblems } = parseStackOptions(raw);
    problems.push(...defaults.problems, ...optionProblems);
    if (!Array.isArray(raw.hosts)) throw new StackConfigError([...problems, HOSTS_NOT_A_LIST_PROBLEM]);
    if (raw.hosts.length === 0 && !options?.allowNoHosts) problems.push(NO_HOSTS_PROBLEM);
    const hosts = raw.hosts.map((entry, i) => parseHost(entry, i, defaults));
    problems.push(...hosts.flatMap((h) => h.problems));
    problems.push(...crossHostProblems(hosts), ...hostPlanProblems(hosts));
    problems.push(...boardRefProblems(hosts), ...boardPlanProblems(hosts));
    problems.push(...toolkitProblems(hosts));
    const web = raw.web === undefined ? undefined : parseWeb(raw.web, releaseDefaults(defaults));
    if (web) problems.push(...web.problems);
    if (!web || web.web) problems.push(...webHostProblems(web?.web, checkedHosts(hosts)));
    const kubernetes = raw.kubernetes === undefined ? undefined : parseKubernetes(raw.kubernetes, nodeCandidates(raw.hosts, hosts));
    if (kubernetes) problems.push(...kubernetes.problems);
    if (problems.length > 0) throw new StackConfigError(problems);
    // No problems means every host parsed whole.
    return {
        hosts: hosts.flatMap((h) => wholeHost(h) ?? []),
        boards: collectBoards(hosts).map(({ board }) => board),
        ...(web?.web ? { web: web.web } : {}),
        ...(kubernetes?.kubernetes ? { kubernetes: kubernetes.kubernetes } : {}),
        hostSteps: options!.hostSteps,
    };
}
