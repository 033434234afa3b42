/**
 * The operations of the `builtin` transport's command (ssh-command.ts), loaded when the
 * provider runs. They keep the semantics the chain relies on from remote.Command: `create` runs on create, `update` (or `create` where there is none) on any
 * change, `delete` with the inputs it was created or last updated with; a change of `triggers`
 * replaces the resource, the new one created before the old one is deleted; stdout is read back.
 *
 * The state keeps what a delete and the next diff need. The stdin stays an input only: the
 * outputs hold one sum of create, update and stdin, which is what a diff compares. A delete
 * therefore runs with an empty stdin (every delete of the chain reads none it needs).
 */
import { randomUUID } from "crypto";
import { sha256Text } from "../../lib/file-hash";
import { KEPT_MARK } from "../../lib/host/owner-records";
import { runOverSsh, SshResult, SshTarget, sshTargetProblem } from "./ssh";

export interface SshCommandInputs {
    connection: SshTarget;
    create: string;
    update?: string;
    delete?: string;
    stdin?: string;
    triggers?: unknown[];
}

export interface SshCommandState {
    connection: SshTarget;
    delete?: string;
    triggers: unknown[];
    /** sha256 of create, update and stdin: a changed one updates the resource. */
    commandSha256: string;
    stdout: string;
    stderr: string;
}

/** The lines of a failed command's output that an error shows. */
const TAIL_LINES = 20;

function commandSha256(inputs: SshCommandInputs): string {
    return sha256Text(JSON.stringify([inputs.create, inputs.update ?? null, inputs.stdin ?? null]));
}

export function endpoint(c: SshTarget): string {
    return `${c.user}@${c.host}:${c.port}${c.proxy ? ` (through ${c.proxy.user}@${c.proxy.host}:${c.proxy.port})` : ""}`;
}

/** The result, or an error naming the host, the phase, the exit status and the output's last lines. */
export function succeeded(c: SshTarget, phase: string, r: SshResult): SshResult {
    if (r.code === 0) return r;
    const tail = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-TAIL_LINES).join("\n");
    throw new Error(`${endpoint(c)}: ${phase} failed (exit ${r.code})${tail ? `:\n${tail}` : ""}`);
}

/** A value the engine does not know yet (a preview): Pulumi's sentinel for it. */
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** The connection's problems, as check failures, once the engine knows all of it (not in a preview that creates its host). */
export function connectionFailures(connection: unknown): { property: string; reason: string }[] {
    if (typeof connection !== "object" || connection === null || JSON.stringify(connection).includes(UNKNOWN)) return [];
    const problem = sshTargetProblem(connection as SshTarget);
    return problem ? [{ property: "connection", reason: problem }] : [];
}

export async function check(_olds: unknown, news: SshCommandInputs) {
    return { inputs: news, failures: connectionFailures(news.connection) };
}

export function triggersChanged(olds: { triggers?: unknown[] }, news: { triggers?: unknown[] }): boolean {
    return JSON.stringify(olds.triggers ?? []) !== JSON.stringify(news.triggers ?? []);
}

export async function diff(_id: string, olds: SshCommandState, news: SshCommandInputs) {
    const replaces = triggersChanged(olds, news) ? ["triggers"] : [];
    const changes =
        replaces.length > 0 ||
        olds.commandSha256 !== commandSha256(news) ||
        (olds.delete ?? null) !== (news.delete ?? null) ||
        JSON.stringify(olds.connection) !== JSON.stringify(news.connection);
    return { changes, replaces, deleteBeforeReplace: false };
}

/** The first word of a line a host step prints for the user to see during `up` (a runc open to a known CVE). */
export const WARNING_MARK = "gpu-workers-warning:";

async function run(inputs: SshCommandInputs, phase: "create" | "update"): Promise<SshCommandState> {
    const command = phase === "update" ? (inputs.update ?? inputs.create) : inputs.create;
    const r = succeeded(inputs.connection, phase, await runOverSsh(inputs.connection, command, inputs.stdin ?? ""));
    // The engine shows a provider's stderr lines to the user, as remote.Command shows a step's output.
    for (const line of `${r.stdout}\n${r.stderr}`.split("\n")) if (line.startsWith(WARNING_MARK)) console.error(`${line} (on ${endpoint(inputs.connection)})`);
    return {
        connection: inputs.connection,
        ...(inputs.delete !== undefined ? { delete: inputs.delete } : {}),
        triggers: inputs.triggers ?? [],
        commandSha256: commandSha256(inputs),
        stdout: r.stdout,
        stderr: r.stderr,
    };
}

export async function create(inputs: SshCommandInputs) {
    return { id: randomUUID(), outs: await run(inputs, "create") };
}

export async function update(_id: string, _olds: SshCommandState, news: SshCommandInputs) {
    return { outs: await run(news, "update") };
}

export async function remove(_id: string, props: SshCommandState) {
    if (props.delete === undefined) return;
    const r = succeeded(props.connection, "delete", await runOverSsh(props.connection, props.delete, ""));
    const kept = r.stdout.split("\n").find((line) => line.startsWith(KEPT_MARK));
    // The engine shows a provider's stderr lines to the user: the line as the host printed it, as remote.Command shows a delete's output.
    if (kept) console.error(`${kept} (on ${endpoint(props.connection)})`);
}
