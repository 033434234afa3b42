/**
 * A fleet's web node in a stack of its own (docs/fleet.md): the web's stack exports what only a
 * converged web knows (its TSA key, its user's password, its CA, how its host is reached), and each
 * rack's stack takes it through a StackReference, the rest from the web's plan, so that every
 * worker of every rack registers with it and admits itself on its host.
 */
import * as pulumi from "@pulumi/pulumi";
import { ConcourseWeb, HostStepTransport, webForWorkers } from "../../components/program";
import type { WebPlan } from "../../components/program";
import type { StackWeb } from "../args/component-args";
import type { WebConfig } from "../config/web-schema";

/** The web's stack output its racks read. */
export const WEB_FOR_RACKS_OUTPUT = "webForRacks";

/** What the web's stack exports for its racks: a secret, for the password and the host's login key. */
export function webForRacks(web: ConcourseWeb): pulumi.Output<unknown> {
    return pulumi.secret({ tsaPublicKey: web.tsaPublicKey, password: web.password, ca: web.ca ?? null, connection: web.connection });
}

/**
 * The web as a rack's workers take it: its plan from the stack config, what it made from the
 * outputs of `webStack`. A preview before the web's stack has run shows those as unknown; an up
 * stops, naming the stack, since the fleet converges the web's stack first.
 */
export function referencedWeb(config: WebConfig, plan: WebPlan, webStack: string, hostSteps?: HostStepTransport): StackWeb {
    const ref = new pulumi.StackReference(webStack);
    const made = ref.getOutput(WEB_FOR_RACKS_OUTPUT).apply((given: unknown) => {
        if (given !== undefined && given !== null) return given as Record<string, unknown>;
        if (pulumi.runtime.isDryRun()) return pulumi.unknown as unknown as Record<string, unknown>;
        throw new Error(
            `the web's stack ${webStack} has no output ${WEB_FOR_RACKS_OUTPUT}: converge it first (npm run fleet -- up converges it before the racks)`,
        );
    });
    const part = <T>(key: string) => made.apply((m) => m[key] as T);
    const ca = part<string | null>("ca");
    return {
        config,
        forWorkers: webForWorkers(plan, {
            tsaPublicKey: part<string>("tsaPublicKey"),
            password: part<string>("password"),
            ...(config.tls ? { ca: ca.apply((c) => c ?? "") } : {}),
            connection: part("connection"),
            hostSteps,
        }),
    };
}
