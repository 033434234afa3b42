/** What the fleet driver (cli/fleet.ts) and each rack's process (member.ts) say to each other. */
import type { ConfigMap } from "@pulumi/pulumi/automation";

export const OPERATIONS = ["up", "preview", "destroy", "refresh"] as const;
export type Operation = (typeof OPERATIONS)[number];

/** What a rack's process is asked to do. */
export interface MemberJob {
    operation: Operation;
    stackName: string;
    /** The rack's work folder: a Pulumi.yaml of its own, so no two stacks share a workspace. */
    workDir: string;
    /** The rack stack's whole config: the fleet stack's, with gpu-workers:fleetMember added. */
    config: ConfigMap;
    logFile: string;
}

/** One resource the engine would change, as a preview of the rack reports it. */
export interface PlannedChange {
    op: string;
    urn: string;
    type: string;
    /** The inputs that differ (an update or replace). */
    diffs: string[];
}

export type MemberReport =
    | { kind: "started" }
    | { kind: "note"; text: string }
    | { kind: "step"; done: number; current: string }
    | { kind: "finished"; ok: true; changes: Record<string, number>; planned: PlannedChange[] }
    | { kind: "finished"; ok: false; error: string[] };
