/** What the fleet driver (cli/fleet.ts) and each rack's process (member.ts) say to each other. */

export const OPERATIONS = ["up", "preview", "destroy", "refresh"] as const;
export type Operation = (typeof OPERATIONS)[number];

/** What a rack's process is asked to do. */
export interface MemberJob {
    operation: Operation;
    stackName: string;
    /** The rack's work folder: a Pulumi.yaml of its own, so no two stacks share a workspace, and the stack's config file (cli/fleet/stack-file.ts). */
    workDir: string;
    /** Whether the backend holds the stack already; where not, the rack's process makes it. */
    made: boolean;
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
