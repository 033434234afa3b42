/** Stack config problems as one line each: the path (`hosts[2].gpus[0].index`) and what is wrong. */
import { z } from "zod";

/** `["gpus", 0, "index"]` under `hosts[2]` -> `hosts[2].gpus[0].index`. */
export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
    let out = prefix;
    for (const part of path) {
        out += typeof part === "number" ? `[${part}]` : `${out ? "." : ""}${String(part)}`;
    }
    return out || "(root)";
}

export function issuesOf(error: z.ZodError, prefix: string): string[] {
    return error.issues.map((issue) => `${formatPath(prefix, issue.path)}: ${describe(issue)}`);
}

export function describe(issue: z.core.$ZodIssue): string {
    if (issue.code === "unrecognized_keys") return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}`;
    if (issue.code === "invalid_type" && !("input" in issue && issue.input !== undefined)) return `required (${issue.message.replace(/^Invalid input: /, "")})`;
    return issue.message;
}
