/**
 * The HostCommand provider's operations, loaded when the provider runs: run `create` on the
 * host over SSH (with `stdin`, or the bytes of `stdinFile`), `update` (or `create`) when an
 * input changes, `delete` when the resource goes. A changed trigger replaces the resource.
 */
import * as fs from "fs";
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
}

export interface HostCommandState extends HostCommandInputs {
    stdout: string;
    stderr: string;
}

const TAIL = 20;

/** What create and update send on stdin: the text, or the bytes of the local file. */
function stdinOf(inputs: HostCommandInputs): string | Buffer {
    return inputs.stdinFile ? fs.readFileSync(inputs.stdinFile) : inputs.stdin ?? "";
}

async function run(inputs: HostCommandInputs, command: string, what: string, input: string | Buffer): Promise<{ stdout: string; stderr: string }> {
    const r = await runOverSsh(inputs.connection, command, input);
    if (r.code !== 0) {
        const tail = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-TAIL).join("\n");
        throw new Error(`${inputs.connection.user}@${inputs.connection.host}:${inputs.connection.port}: ${what} failed (exit ${r.code}): ${command}\n${tail}`);
    }
    return { stdout: r.stdout, stderr: r.stderr };
}

export async function create(inputs: HostCommandInputs) {
    const out = await run(inputs, inputs.create, "create", stdinOf(inputs));
    return { id: `${inputs.connection.host}:${inputs.connection.port}:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`, outs: { ...inputs, ...out } };
}

const SAME_ON_CHANGE: (keyof HostCommandInputs)[] = ["create", "update", "delete", "stdin", "stdinFile", "stdinSha256", "fileSha256", "secretFileSha256", "reconverge", "connection"];

export async function diff(_id: string, olds: HostCommandState, news: HostCommandInputs) {
    const differs = (k: keyof HostCommandInputs) => JSON.stringify(olds[k] ?? null) !== JSON.stringify(news[k] ?? null);
    const replaces = differs("triggers") ? ["triggers"] : [];
    return { changes: replaces.length > 0 || SAME_ON_CHANGE.some(differs), replaces, deleteBeforeReplace: true };
}

export async function update(_id: string, _olds: HostCommandState, news: HostCommandInputs) {
    const out = await run(news, news.update ?? news.create, "update", stdinOf(news));
    return { outs: { ...news, ...out } };
}

export async function remove(_id: string, props: HostCommandState) {
    // No stdin: the local artifact that was uploaded may be gone by now.
    if (props.delete) await run(props, props.delete, "delete", "");
}
