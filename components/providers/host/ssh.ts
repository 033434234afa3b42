/**
 * Runs a command on a host with the system's OpenSSH client: pinned to the given host key,
 * with a private key that only ever sits in a 0600 file under a fresh 0700 folder, through a
 * jump host (pinned the same way) when the target names one. Async, so one provider process can
 * converge many hosts at once.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { shellCommand } from "../../lib/host/steps";
import { isHostAddress, POSIX_USER, PUBLIC_KEY_LINE } from "../../lib/plan/value-patterns";

/** A jump host (bastion) the connection to the target goes through, with its own login and pinned key. */
export interface SshProxy {
    host: string;
    port: number;
    user: string;
    privateKey: string;
    /** "ssh-ed25519 AAAA..." */
    hostKey: string;
}

export interface SshTarget {
    host: string;
    port: number;
    user: string;
    privateKey: string;
    /** "ssh-ed25519 AAAA..." */
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

/** ssh's own exit status when it could not connect or authenticate. */
const SSH_FAILED = 255;

/**
 * Whether ssh failed the way a host that is still booting makes it fail (worth another try). A
 * key that is not the pinned one is no such failure, though through a jump host the connection
 * then also reads as closed.
 */
function mayBeBooting(result: SshResult): boolean {
    return (
        result.code === SSH_FAILED &&
        /Connection (refused|reset|closed)|timed out|kex_exchange/i.test(result.stderr) &&
        !/Host key verification failed/.test(result.stderr)
    );
}

/**
 * Why ssh could not take `target` (or its jump host) safely, or undefined: the user and host go
 * on ssh's command line and the host and its key into a known_hosts line, so a user or host that
 * began with `-`, or held a space or a line break, could be an option (`-oProxyCommand=...`, run
 * on this machine) or a second known_hosts entry. A jump host's values go into a ProxyCommand,
 * which a shell runs: the same checks keep every one of them a single plain word.
 */
export function sshTargetProblem(target: Pick<SshTarget, "host" | "port" | "user" | "hostKey" | "proxy">): string | undefined {
    return endpointProblem("ssh: the", target) ?? (target.proxy ? endpointProblem("ssh: the jump host's", target.proxy) : undefined);
}

function endpointProblem(what: string, end: Pick<SshProxy, "host" | "port" | "user" | "hostKey">): string | undefined {
    if (!POSIX_USER.test(end.user)) return `${what} user ${JSON.stringify(end.user)} is no POSIX user name`;
    if (!isHostAddress(end.host)) return `${what} host ${JSON.stringify(end.host)} is neither a DNS name nor an IP address`;
    if (!Number.isInteger(end.port) || end.port < 1 || end.port > 65535) return `${what} port ${JSON.stringify(end.port)} is no TCP port (1 to 65535)`;
    if (!PUBLIC_KEY_LINE.test(end.hostKey.trim())) return `${what} host key of ${end.host} is not one public key on one line`;
    return undefined;
}

/** The options every ssh run takes, the jump host's included: only the given key, only the pinned host key, no prompt. */
function pinnedOptions(key: string, knownHosts: string, port: number): string[] {
    return [
        // -F /dev/null: no ~/.ssh/config (a proxy, a shared connection, another HostName) gets between us and the pinned host key.
        "-F",
        "/dev/null",
        "-i",
        key,
        "-p",
        String(port),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        `UserKnownHostsFile=${knownHosts}`,
        "-o",
        "ConnectTimeout=15",
        "-o",
        "LogLevel=ERROR",
    ];
}

/** The known_hosts line that pins `end`'s key under the name ssh looks it up by. */
function knownHostsLine(end: Pick<SshProxy, "host" | "port" | "hostKey">): string {
    const hostPattern = end.port === 22 ? end.host : `[${end.host}]:${end.port}`;
    return `${hostPattern} ${end.hostKey.trim()}\n`;
}

/**
 * The ProxyCommand that reaches `target` through its jump host: a second ssh, pinned like the
 * first, whose `-W` forwards one TCP connection from the jump host to the target. ssh hands it to
 * /bin/sh, so every word is quoted (all of them were checked by sshTargetProblem), and expands `%`
 * tokens in it, so any `%` is doubled.
 */
export function proxyCommand(target: Pick<SshTarget, "host" | "port" | "proxy">, dir: string): string {
    const jump = target.proxy!;
    const words = [
        "ssh",
        ...pinnedOptions(path.join(dir, "jump-key"), path.join(dir, "jump_known_hosts"), jump.port),
        "-W",
        `[${target.host}]:${target.port}`,
        "--",
        `${jump.user}@${jump.host}`,
    ];
    return shellCommand(words).replace(/%/g, "%%");
}

/** One run of ssh; `--` ends its options, so the destination is never read as one. */
export function runOnce(target: SshTarget, command: string, input: string | Buffer, dir: string, timeoutSeconds: number): Promise<SshResult> {
    const key = path.join(dir, "key");
    const knownHosts = path.join(dir, "known_hosts");
    return new Promise((resolve, reject) => {
        const child = spawn(
            "ssh",
            [
                ...pinnedOptions(key, knownHosts, target.port),
                ...(target.proxy ? ["-o", `ProxyCommand=${proxyCommand(target, dir)}`] : []),
                "-o",
                "ServerAliveInterval=15",
                "--",
                `${target.user}@${target.host}`,
                command,
            ],
            { stdio: ["pipe", "pipe", "pipe"] },
        );
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        const timer = setTimeout(() => child.kill("SIGKILL"), timeoutSeconds * 1000);
        child.stdout.on("data", (d: Buffer) => out.push(d));
        child.stderr.on("data", (d: Buffer) => err.push(d));
        child.on("error", (e) => {
            clearTimeout(timer);
            reject(new Error(`ssh to ${target.user}@${target.host}:${target.port}: ${e.message}`));
        });
        child.on("close", (code, signal) => {
            clearTimeout(timer);
            const stderr = Buffer.concat(err).toString("utf8") + (signal ? `\n(killed by ${signal} after ${timeoutSeconds}s)` : "");
            resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString("utf8"), stderr });
        });
        child.stdin.on("error", () => undefined); // the remote side may not read its stdin
        child.stdin.end(input);
    });
}

/**
 * Runs `command` (a shell command line, run by the remote user's shell) with `input` on its
 * stdin. Connection failures are retried a few times (a host that is still booting).
 */
export async function runOverSsh(target: SshTarget, command: string, input: string | Buffer = "", timeoutSeconds = 1800): Promise<SshResult> {
    const problem = sshTargetProblem(target);
    if (problem) throw new Error(problem);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-workers-ssh-"));
    try {
        const keyFile = (k: string) => (k.endsWith("\n") ? k : k + "\n");
        fs.writeFileSync(path.join(dir, "key"), keyFile(target.privateKey), { mode: 0o600 });
        fs.writeFileSync(path.join(dir, "known_hosts"), knownHostsLine(target));
        if (target.proxy) {
            fs.writeFileSync(path.join(dir, "jump-key"), keyFile(target.proxy.privateKey), { mode: 0o600 });
            fs.writeFileSync(path.join(dir, "jump_known_hosts"), knownHostsLine(target.proxy));
        }
        let result: SshResult = { code: -1, stdout: "", stderr: "" };
        for (let attempt = 1; attempt <= 4; attempt++) {
            result = await runOnce(target, command, input, dir, timeoutSeconds);
            if (!mayBeBooting(result)) break;
            await new Promise((r) => setTimeout(r, attempt * 2000));
        }
        return result;
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
