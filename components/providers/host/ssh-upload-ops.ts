/**
 * The operations of the `builtin` transport's upload (ssh-command.ts), loaded when the provider
 * runs: as CopyToRemote, the file's bytes go to `remotePath` as the login user (to a part file
 * renamed into place); a change of `triggers` copies again as a new resource, any other change
 * copies again in place; the delete leaves the copy (the file set that installs it drops it).
 * The bytes travel gzipped and the host's gzip (every distribution has it) restores them: a
 * host's sshd spends CPU on each byte it receives, and the binaries shrink by half. The file set
 * that installs the copy checks its sha256.
 */
import { randomUUID } from "crypto";
import * as fs from "fs";
import { gzipSync } from "zlib";
import { shellCommand } from "../../lib/host/steps";
import { runOverSsh, SshTarget } from "./ssh";
import { connectionFailures, endpoint, succeeded, triggersChanged } from "./ssh-command-ops";

export interface SshUploadInputs {
    connection: SshTarget;
    /** The file on this machine. */
    source: string;
    /** Where it goes: relative to the login user's home, or absolute. */
    remotePath: string;
    triggers?: unknown[];
}

export type SshUploadState = SshUploadInputs & { triggers: unknown[] };

export async function check(_olds: unknown, news: SshUploadInputs) {
    return { inputs: news, failures: connectionFailures(news.connection) };
}

export async function diff(_id: string, olds: SshUploadState, news: SshUploadInputs) {
    const replaces = triggersChanged(olds, news) ? ["triggers"] : [];
    const changes =
        replaces.length > 0 ||
        JSON.stringify([olds.source, olds.remotePath, olds.connection]) !== JSON.stringify([news.source, news.remotePath, news.connection]);
    return { changes, replaces, deleteBeforeReplace: false };
}

/** Each source gzipped once per provider process (every host of a fleet gets the same binaries), keyed by its path, size and time. */
const gzipped = new Map<string, Buffer>();

function gzippedSource(source: string): Buffer {
    const stat = fs.statSync(source);
    const key = `${source}\0${stat.size}\0${stat.mtimeMs}`;
    let bytes = gzipped.get(key);
    if (!bytes) {
        // The fastest level: on binaries it gives nearly the best level's size, at a fraction of its CPU.
        bytes = gzipSync(fs.readFileSync(source), { level: 1 });
        gzipped.set(key, bytes);
    }
    return bytes;
}

async function copy(inputs: SshUploadInputs): Promise<SshUploadState> {
    if (!fs.existsSync(inputs.source)) throw new Error(`${endpoint(inputs.connection)}: cannot upload ${inputs.source}: it does not exist`);
    const target = shellCommand([inputs.remotePath]);
    const part = shellCommand([`${inputs.remotePath}.part`]);
    const command = `umask 077 && mkdir -p -- "$(dirname -- ${target})" && gzip -dc > ${part} && mv -f -- ${part} ${target}`;
    succeeded(inputs.connection, `upload of ${inputs.source}`, await runOverSsh(inputs.connection, command, gzippedSource(inputs.source)));
    return { ...inputs, triggers: inputs.triggers ?? [] };
}

export async function create(inputs: SshUploadInputs) {
    return { id: randomUUID(), outs: await copy(inputs) };
}

export async function update(_id: string, _olds: SshUploadState, news: SshUploadInputs) {
    return { outs: await copy(news) };
}
