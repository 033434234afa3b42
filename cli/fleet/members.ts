/**
 * The fleet a stack config describes: each rack, its stack `<stack>-<rack>` and its hosts, checked
 * as a rack's stack checks it, and the web's own stack where the config has a web; and the config
 * each member stack gets.
 */
import type { ConfigMap } from "@pulumi/pulumi/automation";
import { UNREAD_ARTIFACTS } from "../../components/program";
import { parseStack } from "../../stacks/checks/stack";
import { DEFAULT_RACK, FleetOptions, WEB_PART } from "../../stacks/config/fleet-schema";
import { namespaceKeysOf } from "../../stacks/config/namespace-keys";
import { racksOf } from "../../stacks/config/racks";
import { RawStackConfig, StackConfigError } from "../../stacks/config/stack";

/** A member stack of the fleet: a rack, or the web's own (`web: true`, named WEB_PART). */
export interface Rack {
    name: string;
    stack: string;
    /** The names of its hosts (a shared board and its workers included; the web's host). */
    hosts: string[];
    web?: true;
}

export interface FleetPlan {
    /** The stack whose config describes the fleet, and the project's folder. */
    stack: string;
    projectDir: string;
    options: FleetOptions;
    racks: Rack[];
    /** The web's own stack: its name, and the member when the config has a web. */
    webStack: string;
    web?: Rack;
}

const NS = "gpu-workers:";

/** A config value as the program reads it: JSON where it parses (objects, lists, booleans), else the text. */
function value(text: string | undefined): unknown {
    if (text === undefined) return undefined;
    try {
        return JSON.parse(text);
    } catch {
        return text;
    }
}

/** The fleet stack's config as parseStack takes it. */
export function rawStackConfig(config: ConfigMap): RawStackConfig {
    const get = (key: string) => value(config[NS + key]?.value);
    const plain = Object.fromEntries(Object.entries(config).map(([k, v]) => [k, v.value]));
    return {
        defaults: get("defaults"),
        hosts: get("hosts"),
        web: get("web"),
        kubernetes: get("kubernetes"),
        allowNoHosts: get("allowNoHosts"),
        hostSteps: config[NS + "hostSteps"]?.value,
        fleet: get("fleet"),
        keys: namespaceKeysOf(plain),
    };
}

/** The member stack's name of a rack. */
export function rackStack(stack: string, rack: string): string {
    return `${stack}-${rack}`;
}

/**
 * Checks the whole config as every rack's stack will (throws StackConfigError) and returns its
 * racks, in the order their first host comes, and its web.
 */
export function planFleet(config: ConfigMap, stack: string, projectDir: string): FleetPlan {
    const raw = rawStackConfig(config);
    if (raw.fleetMember !== undefined || config[NS + "fleetMember"] !== undefined)
        throw new Error(`stack ${stack} is a member stack of a fleet (it sets gpu-workers:fleetMember); run fleet on the stack its members are made from`);
    const defaultWebStack = rackStack(stack, WEB_PART);
    const webStack = raw.web === undefined ? {} : { webStack: defaultWebStack };
    const checked = parseStack(
        { ...raw, fleetMember: { rack: DEFAULT_RACK, fleet: stack, projectDir, ...webStack } },
        { baseDir: projectDir, artifacts: UNREAD_ARTIFACTS },
    );
    const hosts = raw.hosts as { name: string }[];
    const racks = new Map<string, string[]>();
    racksOf(hosts).forEach((rack, i) => racks.set(rack, [...(racks.get(rack) ?? []), hosts[i].name]));
    const plan: FleetPlan = {
        stack,
        projectDir,
        options: checked.fleet,
        racks: [...racks].map(([name, names]) => ({ name, stack: rackStack(stack, name), hosts: names })),
        webStack: checked.fleet.webStack ?? defaultWebStack,
    };
    if (checked.web) plan.web = { name: WEB_PART, stack: plan.webStack, hosts: [checked.web.name], web: true };
    const taken = plan.racks.find((r) => r.stack === plan.webStack);
    if (plan.web && taken)
        throw new StackConfigError([
            `fleet.webStack: ${plan.webStack} is rack ${taken.name}'s stack; name the web's stack otherwise (gpu-workers:fleet in the stack config)`,
        ]);
    return plan;
}
