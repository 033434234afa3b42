/**
 * The program's own SSH client (ssh2, in this process): every host step of the `builtin`
 * transport, and every dynamic provider that runs something on a host (the drift guard, the
 * registration check, the delete of an earlier release's HostCommand), go through it.
 *
 * One authenticated connection per host and login, kept for the life of the process (the
 * engine's one Node.js dynamic-provider process serves a whole `up`), with every command a
 * channel of it; a jump host's connection is shared the same way, each host behind it one
 * forwarded channel. The host key is pinned: the server is asked for that key type only and
 * any other key ends the handshake (keys are compared by type and blob, so the pinned line's
 * comment and spacing play no part). The private key stays in this process's memory: no file,
 * no process argument, no agent.
 */
import * as net from "net";
import { Client, ClientChannel, ConnectConfig } from "ssh2";
import type { Duplex, Readable } from "stream";
import { isPinnedKey, parseSshPublicKey, SshPublicKey } from "../../lib/settings/ssh-public-key";
import { isHostAddress, POSIX_USER } from "../../lib/settings/value-patterns";

/** A jump host (bastion) the connection to the target goes through, with its own login and pinned key. */
export interface SshProxy {
    /** The jump host's address as this program reaches it: a DNS name or an IP address. */
    host: string;
    /** Its SSH port. Example: 22. */
    port: number;
    /** The user that logs in to the jump host (a POSIX name). */
    user: string;
    /** That user's OpenSSH private key; keep it a Pulumi secret. */
    privateKey: string;
    /** "ssh-ed25519 AAAA... comment": the public key line (ssh-public-key.ts). */
    hostKey: string;
}

/** How the program reaches a host over SSH (HostConnection). */
export interface SshTarget {
    /** The host's address: a DNS name or an IP address (as the jump host sees it, with `proxy`). Example: "10.0.0.7". */
    host: string;
    /** Its SSH port. Example: 22. */
    port: number;
    /** The user that logs in (a POSIX name); commands run through `sudo -n` unless it is root. Example: "root". */
    user: string;
    /** That user's OpenSSH private key; keep it a Pulumi secret (`config.requireSecret`). */
    privateKey: string;
    /** "ssh-ed25519 AAAA... comment": the public key line (ssh-public-key.ts). */
    hostKey: string;
    /** The machine behind the address (an LXD instance's UUID): a new one makes every host step run again. */
    machineId?: string;
    /** The jump host to go through: the target's address and port are then as the jump host sees them. */
    proxy?: SshProxy;
}

export interface SshResult {
    code: number;
    stdout: string;
    stderr: string;
}

/** How often a dial may fail the way a booting host makes it fail before a command fails, and how long one dial waits, in seconds. */
export const DIAL_ERROR_LIMIT = 10;
export const PER_DIAL_TIMEOUT_SECONDS = 15;

/** sshd's MaxSessions is 10 by default: the channels open at once on one connection stay below it. */
const CHANNELS_PER_CONNECTION = 8;

type Endpoint = Pick<SshProxy, "host" | "port" | "user" | "hostKey">;

/** The host and its jump host, each with the words and the args' field prefix that name it. */
function endpoints(target: Pick<SshTarget, "host" | "port" | "user" | "hostKey" | "proxy">): [string, string, Endpoint][] {
    return [["ssh: the", "", target], ...(target.proxy ? [["ssh: the jump host's", "proxy.", target.proxy] as [string, string, Endpoint]] : [])];
}

/**
 * The field of `target` (or of its jump host) that is missing, named as the component's args
 * name it: a component used alone may be given none, and nothing may read it before this says so.
 */
export function sshTargetMissing(target: Pick<SshTarget, "host" | "port" | "user" | "hostKey" | "proxy">): string | undefined {
    return endpoints(target)
        .map(([what, field, end]) => missingField(what, field, end))
        .find((problem) => problem !== undefined);
}

/**
 * Why `target` (or its jump host) cannot be taken: a field that is missing, a user that is no
 * POSIX name, a host that is neither a DNS name nor an IP address, a port out of range, or a host
 * key that is no public key line (ssh-public-key.ts says what it is instead). The stack's schema
 * and a component's args refuse them first; a key given as an output meets this check.
 */
export function sshTargetProblem(target: Pick<SshTarget, "host" | "port" | "user" | "hostKey" | "proxy">): string | undefined {
    return (
        sshTargetMissing(target) ??
        endpoints(target)
            .map(([what, field, end]) => malformed(what, field, end))
            .find((problem) => problem !== undefined)
    );
}

/** A value given as no string, or as nothing but white space. */
function missing(value: unknown): boolean {
    return typeof value !== "string" || value.trim() === "";
}

function missingField(what: string, field: string, end: Endpoint): string | undefined {
    if (missing(end.user)) return `${what} user (${field}user) is missing`;
    if (missing(end.host)) return `${what} host (${field}host) is missing`;
    if (missing(end.hostKey)) return `${what} host key of ${end.host} (${field}hostKey) is missing`;
    return undefined;
}

function malformed(what: string, field: string, end: Endpoint): string | undefined {
    if (!POSIX_USER.test(end.user)) return `${what} user ${JSON.stringify(end.user)} is no POSIX user name`;
    if (!isHostAddress(end.host)) return `${what} host ${JSON.stringify(end.host)} is neither a DNS name nor an IP address`;
    if (!Number.isInteger(end.port) || end.port < 1 || end.port > 65535) return `${what} port ${JSON.stringify(end.port)} is no TCP port (1 to 65535)`;
    return sshHostKeyProblem(what, field, end);
}

/** Why the host key of `end` (given) is no public key line, naming the field, or undefined. */
function sshHostKeyProblem(what: string, field: string, end: Endpoint): string | undefined {
    const parsed = parseSshPublicKey(end.hostKey, "host");
    return "problem" in parsed ? `${what} host key of ${end.host} (${field}hostKey): ${parsed.problem}` : undefined;
}

/**
 * Why a host key of `target` (or of its jump host) that is given is no public key line, or
 * undefined: what the remote-command connection checks besides a missing field.
 */
export function sshTargetKeyProblem(target: Pick<SshTarget, "host" | "port" | "user" | "hostKey" | "proxy">): string | undefined {
    return endpoints(target)
        .map(([what, field, end]) => sshHostKeyProblem(what, field, end))
        .find((problem) => problem !== undefined);
}

/** The pinned key of an endpoint whose key sshTargetProblem has taken. */
function pinnedKey(end: Pick<SshProxy, "hostKey">): SshPublicKey {
    const parsed = parseSshPublicKey(end.hostKey, "host");
    if ("problem" in parsed) throw new Error(`ssh: the host key: ${parsed.problem}`);
    return parsed.key;
}

/**
 * The host key algorithms a key of the pinned type is taken with: an RSA key with SHA-2
 * signatures only (RFC 8332), never SHA-1's `ssh-rsa`, whose signatures can be forged.
 */
function hostKeyAlgorithms(keyType: string): string[] {
    return keyType === "ssh-rsa" ? ["rsa-sha2-512", "rsa-sha2-256"] : [keyType];
}

/** A failure that another dial cannot mend: the wrong host key, a refused login, a peer that is no SSH server. */
class FatalDialError extends Error {}

/** `user@host:port`, as messages name an endpoint. */
function where(end: Pick<SshProxy, "host" | "port" | "user">): string {
    return `${end.user}@${end.host}:${end.port}`;
}

/**
 * What ssh2 reports of a failed dial, in words that name the endpoint; fatal unless it is how a
 * booting host fails: refused, reset, or closed before saying a word (LXD's proxy accepts, then
 * closes while the instance's sshd is not up), or no answer to the TCP connect. `tcp`: the TCP
 * connection of our own (none through a jump host).
 */
function dialError(
    end: Pick<SshProxy, "host" | "port" | "user">,
    e: Error & { level?: string },
    keyMismatch: string | undefined,
    keyType: string,
    tcp?: net.Socket,
): Error {
    const at = where(end);
    const heard = tcp?.bytesRead ?? 0;
    if (tcp?.connecting) return new Error(`ssh: cannot reach ${at}: no answer in ${PER_DIAL_TIMEOUT_SECONDS} s`);
    if (keyMismatch) return new FatalDialError(`ssh: ${at} presented the host key ${keyMismatch}, not the pinned one: nothing was run`);
    if (/no matching host key format/.test(e.message))
        return new FatalDialError(`ssh: ${at} offers none of ${hostKeyAlgorithms(keyType).join(", ")} for the pinned ${keyType} host key: nothing was run`);
    if (e.level === "client-authentication") return new FatalDialError(`ssh: ${at} refused the login with the given private key`);
    if (e.level === "client-timeout")
        return new FatalDialError(
            `ssh: ${at} accepted a connection but completed no SSH handshake in ${PER_DIAL_TIMEOUT_SECONDS} s: it is not an SSH server (check the host's transport.ssh host and port, or its jump host's)`,
        );
    if (/before handshake/.test(e.message) && heard > 0)
        return new FatalDialError(`ssh: ${at} answered something other than an SSH identification and closed: it is not an SSH server`);
    if (e.level === "handshake" || (e.level === "protocol" && !/before handshake/.test(e.message)))
        return new FatalDialError(`ssh: ${at} does not speak SSH as expected: ${e.message}`);
    return new Error(`ssh: cannot reach ${at}: ${e.message}`);
}

/** One authenticated connection, and a queue that keeps its open channels under the server's limit. */
interface Connection {
    client: Client;
    open: number;
    waiting: (() => void)[];
    closed: boolean;
}

/** Connections by endpoint (address, login, pinned key, private key, and the jump host's): made once, shared by every caller. */
const connections = new Map<string, Promise<Connection>>();

/** How many connections this process has opened, by `user@host:port`: one per host and login is the goal. */
export const connectionsOpened = new Map<string, number>();

function endpointKey(end: SshProxy, via?: SshProxy): string {
    return JSON.stringify([end.host, end.port, end.user, pinnedKey(end).pinned, end.privateKey, via ? endpointKey(via) : null]);
}

/** One dial and login: over a TCP connection of its own, or over `sock` (a channel forwarded by a jump host). */
function dialOnce(end: SshProxy, sock?: Duplex): Promise<Client> {
    const pinned = pinnedKey(end);
    const keyType = pinned.type;
    // Our own socket, so a failure can tell a peer that closed without a word from one that said something else.
    const tcp = sock ? undefined : net.connect({ host: end.host, port: end.port });
    return new Promise((resolve, reject) => {
        const client = new Client();
        let mismatch: string | undefined;
        let settled = false;
        // ssh2 may report a failure more than once; later errors end the connection, whose close is seen.
        client.on("error", (e: Error & { level?: string }) => {
            if (settled) return;
            settled = true;
            reject(dialError(end, e, mismatch, keyType, tcp));
            client.end();
            tcp?.destroy();
        });
        client.once("ready", () => {
            settled = true;
            resolve(client);
        });
        client.connect({
            sock: sock ?? tcp,
            username: end.user,
            privateKey: end.privateKey,
            authHandler: ["publickey"],
            algorithms: { serverHostKey: hostKeyAlgorithms(keyType) as NonNullable<ConnectConfig["algorithms"]>["serverHostKey"] },
            hostVerifier: (key: Buffer) => {
                if (isPinnedKey(pinned, key)) return true;
                mismatch = `${keyType} ${key.toString("base64")}`;
                return false;
            },
            readyTimeout: PER_DIAL_TIMEOUT_SECONDS * 1000,
            keepaliveInterval: 15_000,
            keepaliveCountMax: 4,
        });
    });
}

/** RFC 4254's reason of a refused channel when the jump host's own connect failed (refused, unreachable): a host still booting. */
const SSH_OPEN_CONNECT_FAILED = 2;

/**
 * A channel the jump host forwards to `end`'s address (as the jump host sees it). A connect that
 * failed there is a host still booting; a jump host that forwards nothing (`AllowTcpForwarding
 * no`, which it reports as administratively prohibited) never will.
 */
function forward(jump: Client, end: SshProxy): Promise<Duplex> {
    return new Promise((resolve, reject) =>
        jump.forwardOut("127.0.0.1", 0, end.host, end.port, (e: (Error & { reason?: number }) | undefined, channel) => {
            if (!e) return resolve(channel);
            const text = `ssh: the jump host did not forward a connection to ${end.host}:${end.port}: ${e.message}`;
            reject(e.reason === SSH_OPEN_CONNECT_FAILED ? new Error(text) : new FatalDialError(`${text} (it forwards no connections: AllowTcpForwarding?)`));
        }),
    );
}

/** Dials `end` (through `via` where given) until it answers, as a booting host needs; a fatal failure at once. */
async function dial(end: SshProxy, via?: SshProxy): Promise<Client> {
    let last: Error | undefined;
    for (let attempt = 1; attempt <= DIAL_ERROR_LIMIT; attempt++) {
        try {
            const client = via ? await dialOnce(end, await forward((await connection(via)).client, end)) : await dialOnce(end);
            const at = where(end);
            connectionsOpened.set(at, (connectionsOpened.get(at) ?? 0) + 1);
            return client;
        } catch (e) {
            if (e instanceof FatalDialError) throw e;
            last = e as Error;
            await new Promise((r) => setTimeout(r, Math.min(attempt, 5) * 1000));
        }
    }
    throw new Error(`${last!.message} (${DIAL_ERROR_LIMIT} tries)`);
}

/** The shared connection to `end`, dialled on first use and again after it closed. */
function connection(end: SshProxy, via?: SshProxy): Promise<Connection> {
    const key = endpointKey(end, via);
    const known = connections.get(key);
    if (known) return known;
    const made = dial(end, via).then((client): Connection => {
        const conn: Connection = { client, open: 0, waiting: [], closed: false };
        const forget = () => {
            conn.closed = true;
            if (connections.get(key) === made) connections.delete(key);
        };
        client.on("close", forget);
        client.on("error", forget);
        return conn;
    });
    made.catch(() => connections.delete(key));
    connections.set(key, made);
    return made;
}

/** Opens an exec channel on `conn` once fewer than CHANNELS_PER_CONNECTION are open; release() frees the slot. */
async function execChannel(conn: Connection, command: string): Promise<{ channel: ClientChannel; release: () => void }> {
    while (conn.open >= CHANNELS_PER_CONNECTION) await new Promise<void>((r) => conn.waiting.push(r));
    conn.open++;
    let released = false;
    const release = () => {
        if (released) return;
        released = true;
        conn.open--;
        conn.waiting.shift()?.();
    };
    try {
        const channel = await new Promise<ClientChannel>((resolve, reject) => conn.client.exec(command, (e, ch) => (e ? reject(e) : resolve(ch))));
        return { channel, release };
    } catch (e) {
        release();
        throw e;
    }
}

/**
 * Runs `command` (a shell command line, run by the remote user's shell) with `input` on its
 * stdin (a stream is piped), on the host's shared connection. A connection that closed since its last use is dialled
 * again before the command starts; once a command has started, a lost connection fails it (it
 * is never run twice). `timeoutSeconds` ends the channel (the command then fails).
 */
export async function runOverSsh(target: SshTarget, command: string, input: string | Buffer | Readable = "", timeoutSeconds?: number): Promise<SshResult> {
    const problem = sshTargetProblem(target);
    if (problem) throw new Error(problem);
    const end: SshProxy = { host: target.host, port: target.port, user: target.user, privateKey: target.privateKey, hostKey: target.hostKey };
    let opened: { channel: ClientChannel; release: () => void } | undefined;
    for (let attempt = 1; !opened; attempt++) {
        const conn = await connection(end, target.proxy);
        try {
            opened = await execChannel(conn, command);
        } catch (e) {
            // The connection went away between uses (a host restarted): dial once more, nothing has run.
            if (!conn.closed || attempt > 1) throw new Error(`ssh: ${where(end)}: cannot start a command: ${(e as Error).message}`, { cause: e });
        }
    }
    const { channel, release } = opened;
    return new Promise((resolve) => {
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        let code = -1;
        let signal: string | undefined;
        const timer = timeoutSeconds ? setTimeout(() => channel.close(), timeoutSeconds * 1000) : undefined;
        channel.on("data", (d: Buffer) => out.push(d));
        channel.stderr.on("data", (d: Buffer) => err.push(d));
        channel.on("exit", (c: number | null, s?: string) => {
            if (c !== null) code = c;
            else signal = s;
        });
        channel.on("close", () => {
            if (timer) clearTimeout(timer);
            release();
            const why = signal
                ? `\n(ended by SIG${signal})`
                : code === -1
                  ? `\n(the connection ended before the command did${timeoutSeconds ? `, or it ran past ${timeoutSeconds} s` : ""})`
                  : "";
            resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") + why });
        });
        // The remote side may not read its stdin: a write after it closed is no failure of ours.
        channel.on("error", () => undefined);
        if (typeof input === "string" || Buffer.isBuffer(input)) channel.end(input);
        else input.pipe(channel);
    });
}

/** Closes every connection of this process (tests; the provider process just exits). */
export function closeSshConnections(): void {
    for (const made of connections.values()) made.then((c) => c.client.end()).catch(() => undefined);
    connections.clear();
}
