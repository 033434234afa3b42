/**
 * Validates the raw stack config, applies defaults and plans it: the config read part by part
 * (stacks/config/), and where a part is read, its plan, made once (here). Every problem is
 * collected and reported together, in that order, each with its path (`hosts[2].gpus[0].index: ...`).
 */
import { UNREAD_ARTIFACTS } from "../../components/program";
import { collectBoards, boardRefProblems } from "../config/boards";
import { crossHostProblems } from "../config/cross-host-checks";
import { parseHost, toolkitProblems, wholeHost } from "../config/host-config";
import { nodeCandidates, parseKubernetes } from "../config/kubernetes-config";
import { parseDefaults } from "../config/layer";
import { unknownKeyProblems } from "../config/namespace-keys";
import { racksOf, rackProblems } from "../config/racks";
import type { FleetMember } from "../config/fleet-schema";
import {
    HOSTS_NOT_A_LIST_PROBLEM,
    NO_HOSTS_PROBLEM,
    parseFleetMember,
    parseStackOptions,
    RawStackConfig,
    StackConfig,
    StackConfigError,
} from "../config/stack";
import { checkedHosts, parseWeb, releaseDefaults, webHostProblems } from "../config/web-config";
import type { HostConfig } from "../config/schema";
import { planBoards } from "./board-plans";
import { planHosts } from "./host-plans";
import { PlanContext, planStackWeb, StackPlans } from "./stack-plans";

/** The validated stack with its plans, made once as it was checked: what the fleet builds from and the render writes. */
export interface PlannedStack extends StackConfig {
    /** The web's, each host's (as `hosts`) and each board's (as `boards`). */
    plans: StackPlans;
    /** What the plans were made for. */
    plannedFor: PlanContext;
}

/** The hosts that are workers on their own (boards and their workers: parseStack). Throws like parseStack. */
export function parseStackConfig(raw: RawStackConfig): HostConfig[] {
    return parseStack(raw).hosts;
}

/**
 * Validates and plans the whole stack config, web and boards included; throws StackConfigError
 * listing every problem. By default it plans from the current folder with no file hashed (plans
 * only checked); `up` plans with the digests of what it uploads (LOCAL_ARTIFACTS). In a member
 * stack of a fleet (`gpu-workers:fleetMember`) that rack's hosts and boards alone are planned and
 * returned (the web's stack: none of them).
 */
export function parseStack(raw: RawStackConfig, context: PlanContext = { baseDir: process.cwd(), artifacts: UNREAD_ARTIFACTS }): PlannedStack {
    const problems: string[] = raw.keys === undefined ? [] : unknownKeyProblems(raw.keys, [raw.defaults, raw.hosts, raw.web, raw.kubernetes]);
    const defaults = parseDefaults(raw.defaults);
    const { options, problems: optionProblems } = parseStackOptions(raw);
    const { member, problems: memberProblems } = parseFleetMember(raw.fleetMember);
    problems.push(...defaults.problems, ...optionProblems, ...memberProblems);
    if (!Array.isArray(raw.hosts)) throw new StackConfigError([...problems, HOSTS_NOT_A_LIST_PROBLEM]);
    if (raw.hosts.length === 0 && !options?.allowNoHosts) problems.push(NO_HOSTS_PROBLEM);
    problems.push(...rackProblems(raw.hosts, raw.web !== undefined), ...fleetMemberProblems(raw, member));
    const racks = racksOf(raw.hosts);
    // The web's own stack holds no host; a rack's, its own.
    const inMember = (i: number) => member === undefined || racks[i] === member.rack;
    const hosts = raw.hosts.map((entry, i) => parseHost(entry, i, defaults));
    // The web is read first and reported after the hosts: its workers plan with its TSA and URL.
    const web = raw.web === undefined ? undefined : parseWeb(raw.web, releaseDefaults(defaults));
    const unreported: unknown[] = [];
    const webPlan = web?.web ? attempt(() => planStackWeb(web.web!, context), unreported) : undefined;
    const hostPlans = planHosts(hosts, context, webPlan?.forWorkers, inMember);
    const boardPlans = planBoards(hosts, context, webPlan?.forWorkers, inMember);
    unreported.push(...hostPlans.unreported, ...boardPlans.unreported);
    problems.push(...hosts.flatMap((h) => h.problems));
    problems.push(...crossHostProblems(hosts), ...hostPlans.problems);
    problems.push(...boardRefProblems(hosts), ...boardPlans.problems);
    problems.push(...toolkitProblems(hosts));
    if (web) problems.push(...web.problems);
    if (!web || web.web) problems.push(...webHostProblems(web?.web, checkedHosts(hosts)));
    const kubernetes = raw.kubernetes === undefined ? undefined : parseKubernetes(raw.kubernetes, nodeCandidates(raw.hosts, hosts));
    if (kubernetes) problems.push(...kubernetes.problems);
    if (problems.length > 0) throw new StackConfigError(problems);
    // What `up` would stop on, though the config is sound (a release file missing): as `up` would say it.
    if (unreported.length > 0) throw unreported[0];
    // No problems means every host parsed whole, and planned.
    return {
        hosts: hosts.flatMap((h, i) => (inMember(i) ? (wholeHost(h) ?? []) : [])),
        boards: collectBoards(hosts).flatMap(({ board, at }) => (inMember(at) ? [board] : [])),
        ...(web?.web ? { web: web.web } : {}),
        ...(kubernetes?.kubernetes ? { kubernetes: kubernetes.kubernetes } : {}),
        hostSteps: options!.hostSteps,
        fleet: options!.fleet,
        ...(member ? { member } : {}),
        plans: {
            ...(webPlan ? { web: webPlan.plan } : {}),
            hosts: hostPlans.plans.flatMap((p) => p ?? []),
            boards: boardPlans.plans.flatMap((p) => p ?? []),
        },
        plannedFor: context,
    };
}

/** What a member stack of the fleet cannot hold (Kubernetes clusters), and a rack's that is not told where the web is. */
function fleetMemberProblems(raw: RawStackConfig, member: FleetMember | undefined): string[] {
    if (member === undefined) return [];
    const problems: string[] = [];
    if (raw.kubernetes !== undefined)
        problems.push("kubernetes: npm run fleet does not drive a stack with Kubernetes clusters yet; converge it with pulumi up");
    if (raw.web !== undefined && member.rack !== undefined && member.webStack === undefined)
        problems.push("fleetMember.webStack: the stack has a web node: a rack's stack takes it from the web's stack (npm run fleet sets this)");
    return problems;
}

/** What `make` returns, or undefined, its error kept to be thrown if nothing else is wrong. */
function attempt<T>(make: () => T, unreported: unknown[]): T | undefined {
    try {
        return make();
    } catch (e) {
        unreported.push(e);
        return undefined;
    }
}
