/**
 * The program: reads the stack config (gpu-workers:defaults, gpu-workers:hosts and, optionally,
 * gpu-workers:web, gpu-workers:kubernetes and gpu-workers:hostSteps), validates it, and converges the web node and every
 * host into a GPU-ready Concourse worker; in a member stack of a fleet (gpu-workers:fleetMember,
 * set by `npm run fleet`), one rack's hosts alone, or the web alone. index.ts runs it.
 */
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { LOCAL_ARTIFACTS, setOwnerStack } from "../components/program";
import { parseStack } from "./checks/stack";
import { namespaceKeysOf } from "./config/namespace-keys";
import { StackConfigError } from "./config/stack";
import { buildFleet } from "./resources/fleet";
import { WEB_FOR_RACKS_OUTPUT, webForRacks } from "./resources/fleet-web";

/** The stack config, validated and planned once, for the files this machine uploads (their digests taken). */
function readStack(config: pulumi.Config, baseDir: string) {
    try {
        const keys = namespaceKeysOf(pulumi.runtime.allConfig());
        return parseStack(
            {
                defaults: config.getObject("defaults"),
                hosts: config.getObject("hosts"),
                web: config.getObject("web"),
                kubernetes: config.getObject("kubernetes"),
                allowNoHosts: config.getObject("allowNoHosts"),
                hostSteps: config.get("hostSteps"),
                fleet: config.getObject("fleet"),
                fleetMember: config.getObject("fleetMember"),
                keys,
            },
            { baseDir, artifacts: LOCAL_ARTIFACTS },
        );
    } catch (e) {
        // Config mistakes are the user's to fix: say what and where, without a stack trace.
        if (e instanceof StackConfigError) throw new pulumi.RunError(e.message);
        throw e;
    }
}

/**
 * The folder of Pulumi.yaml: paths in the stack config (a release uploaded from here) are its.
 * The engine says so where it can; older language hosts run the program from the folder of
 * `main` (dist/), below the project.
 */
function projectDirectory(): string {
    const given = pulumi.runtime.getRootDirectory();
    if (path.isAbsolute(given) && fs.existsSync(path.join(given, "Pulumi.yaml"))) return given;
    for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
        if (fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
        if (path.dirname(dir) === dir) return process.cwd();
    }
}

/**
 * A member stack of a fleet runs from a work folder of `npm run fleet`: the stack's paths are relative
 * to the project's folder, which the driver names in `gpu-workers:fleetMember` (checked with the rest).
 */
function memberProjectDirectory(config: pulumi.Config): string | undefined {
    const member = config.getObject<{ projectDir?: unknown }>("fleetMember");
    return typeof member?.projectDir === "string" ? member.projectDir : undefined;
}

/** Declares the whole stack and returns its outputs. */
export function runProgram() {
    const config = new pulumi.Config("gpu-workers");
    const stack = readStack(config, memberProjectDirectory(config) ?? projectDirectory());
    if (stack.member) setOwnerStack(stack.member.fleet);
    const fleet = buildFleet(stack, (key) => config.requireSecret(key));
    return {
        /** Per worker (on its own host or on a shared board): its tags, the public key to authorize on the TSA, and why a chain stopped early. */
        workers: Object.fromEntries(
            fleet.workers.map((w) => [
                w.hostName,
                { tags: w.tags, workerPublicKey: w.workerPublicKey ?? null, stoppedBeforeWorker: w.stoppedBeforeWorker ?? null },
            ]),
        ),
        /** The web node, when the stack has one: where it answers, and its main team user (the password is a secret). */
        web: fleet.web ? { url: fleet.web.externalUrl, username: fleet.web.username, password: fleet.web.password } : null,
        /** In a member stack of a fleet: whose member it is, and which part (npm run fleet reads it from the state). */
        ...(stack.member ? { fleetMember: { fleet: stack.member.fleet, ...(stack.member.web ? { web: true } : { rack: stack.member.rack }) } } : {}),
        /** In the web's own stack of a fleet: what its racks' workers take from it. */
        ...(stack.member?.web && fleet.web ? { [WEB_FOR_RACKS_OUTPUT]: webForRacks(fleet.web) } : {}),
        /** Per shared board: the partition each of its workers got. */
        sharedBoards: Object.fromEntries(fleet.boards.map((b) => [b.boardName, b.partitions])),
        /** Per Kubernetes cluster: the objects made in it (`Kind/namespace/name`; a Node's only its labels). */
        kubernetesClusters: Object.fromEntries(fleet.clusters.map((c) => [c.clusterName, Object.keys(c.objects)])),
    };
}
