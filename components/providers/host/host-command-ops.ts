/**
 * The HostCommand provider's operations, loaded when the provider runs: run `create` on the
 * host over SSH (with `stdin`, or the bytes of `stdinFile`), `update` (or `create`) when an
 * input changes, `delete` when the resource goes. A changed trigger replaces the resource.
 */
import * as fs from "fs";
import { claimScript, disownScript, HostOwner, KEPT_MARK, releaseScript } from "../../lib/host/owner-records";
import { asRoot } from "../../lib/host/steps";
import { runOverSsh, SshTarget } from "./ssh";

export interface HostCommandInputs {
    connection: SshTarget;
    create: string;
    update?: string;
    delete?: string;
    stdin?: string;
    /** A local file whose bytes are the stdin (binaries); `stdinSha256` makes a new file a change. */
    stdinFile?: string;
    stdinSha256?: string;
    /** sha256 of the files the command depends on (secret ones apart): a change runs `update` again. */
    fileSha256?: Record<string, string>;
    secretFileSha256?: Record<string, string>;
    /** Raised after drift: a new value runs `update` again. */
    reconverge?: number;
    triggers?: unknown[];
    /**
     * What it applies on the host, recorded there as this resource's (lib/host/owner-records.ts): its
     * delete undoes it only when no other resource has applied the same slot since (a renamed host's
     * new resources). Absent: no record, and the delete always runs.
     */
    owner?: HostOwner;
}

export interface HostCommandState extends HostCommandInputs {
    stdout: string;
    stderr: string;
}

const TAIL = 20;

/** What create and update send on stdin: the text, or the bytes of the local file. */
function stdinOf(inputs: HostCommandInputs): string | Buffer {
    return inputs.stdinFile ? fs.readFileSync(inputs.stdinFile) : (inputs.stdin ?? "");
}

async function run(inputs: HostCommandInputs, command: string, what: string, input: string | Buffer): Promise<{ stdout: string; stderr: string }> {
    const r = await runOverSsh(inputs.connection, command, input);
    if (r.code !== 0) {
        const tail = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-TAIL).join("\n");
        throw new Error(`${inputs.connection.user}@${inputs.connection.host}:${inputs.connection.port}: ${what} failed (exit ${r.code}): ${command}\n${tail}`);
    }
    return { stdout: r.stdout, stderr: r.stderr };
}

/** The record of `news`'s owner on the host, and none left in a slot its older state applied. */
function claim(news: HostCommandInputs, id: string, olds?: HostCommandState): string {
    const owner = news.owner!;
    const moved = olds?.owner && olds.owner.slot !== owner.slot ? `${disownScript(olds.owner.slot, id)} && ` : "";
    return asRoot(owner.user, moved + claimScript(owner, id, news.delete!));
}

/** `command`, then (when it succeeded and the resource has an owner) its record on the host. */
function andClaim(inputs: HostCommandInputs, id: string, command: string, olds?: HostCommandState): string {
    if (!inputs.owner || !inputs.delete) return command;
    // The command in a subshell of its own: an `exit` in it ends only that.
    return `(\n${command}\n) && ${claim(inputs, id, olds)}`;
}

export async function create(inputs: HostCommandInputs) {
    const id = `${inputs.connection.host}:${inputs.connection.port}:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const out = await run(inputs, andClaim(inputs, id, inputs.create), "create", stdinOf(inputs));
    return { id, outs: { ...inputs, ...out } };
}

const SAME_ON_CHANGE: (keyof HostCommandInputs)[] = [
    "create",
    "update",
    "delete",
    "stdin",
    "stdinFile",
    "stdinSha256",
    "fileSha256",
    "secretFileSha256",
    "reconverge",
    "connection",
];

function differs(olds: HostCommandState, news: HostCommandInputs, k: keyof HostCommandInputs): boolean {
    return JSON.stringify(olds[k] ?? null) !== JSON.stringify(news[k] ?? null);
}

export async function diff(_id: string, olds: HostCommandState, news: HostCommandInputs) {
    const replaces = differs(olds, news, "triggers") ? ["triggers"] : [];
    // A new owner alone (state made before records, a renamed resource) only records it.
    return { changes: replaces.length > 0 || [...SAME_ON_CHANGE, "owner" as const].some((k) => differs(olds, news, k)), replaces, deleteBeforeReplace: true };
}

export async function update(id: string, olds: HostCommandState, news: HostCommandInputs) {
    if (news.owner && news.delete && !SAME_ON_CHANGE.some((k) => differs(olds, news, k))) {
        await run(news, claim(news, id, olds), "record the owner", "");
        return { outs: { ...news, stdout: olds.stdout, stderr: olds.stderr } };
    }
    const out = await run(news, andClaim(news, id, news.update ?? news.create, olds), "update", stdinOf(news));
    return { outs: { ...news, ...out } };
}

/**
 * Undoes `create`, unless another resource has applied the same thing on the host since (its new
 * name after a rename): then the host is left alone, and the provider's output says who holds it.
 */
export async function remove(id: string, props: HostCommandState) {
    if (!props.delete) return;
    const user = props.owner?.user ?? props.connection.user;
    // No stdin: the local artifact that was uploaded may be gone by now.
    const out = await run(props, asRoot(user, releaseScript(props.owner, id, props.delete)), "delete", "");
    const kept = out.stdout.split("\n").find((line) => line.startsWith(KEPT_MARK));
    if (kept) {
        const what = props.owner ? `${props.owner.resource} (${props.owner.slot})` : props.delete.slice(0, 120);
        // The engine shows a provider's stderr lines to the user.
        console.error(`gpu-workers: ${what} on ${props.connection.host}:${props.connection.port}:${kept.slice(KEPT_MARK.length)}`);
    }
}
