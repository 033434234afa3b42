/**
 * Runs a command on a host with the system's OpenSSH client: pinned to the given host key,
 * with a private key that only ever sits in a 0600 file under a fresh 0700 folder. Async,
 * so one provider process can converge many hosts at once.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { isHostAddress, POSIX_USER, PUBLIC_KEY_LINE } from "../../lib/plan/value-patterns";

export interface SshTarget {
    host: string;
    port: number;
    user: string;
    privateKey: string;
    /** "ssh-ed25519 AAAA..." */
    hostKey: string;
    /** The machine behind the address (an LXD instance's UUID): a new one makes every host step run again. */
    machineId?: string;
}

export interface SshResult {
    code: number;
    stdout: string;
    stderr: string;
}

/** ssh's own exit status when it could not connect or authenticate. */
const SSH_FAILED = 255;

/**
 * Why ssh could not take `target` safely, or undefined: the user and host go on ssh's command
 * line and the host and its key into a known_hosts line, so a user or host that began with `-`,
 * or held a space or a line break, could be an option (`-oProxyCommand=...`, run on this
 * machine) or a second known_hosts entry.
 */
export function sshTargetProblem(target: Pick<SshTarget, "host" | "user" | "hostKey">): string | undefined {
    if (!POSIX_USER.test(target.user)) return `ssh: the user ${JSON.stringify(target.user)} is no POSIX user name`;
    if (!isHostAddress(target.host)) return `ssh: the host ${JSON.stringify(target.host)} is neither a DNS name nor an IP address`;
    if (!PUBLIC_KEY_LINE.test(target.hostKey.trim())) return `ssh: the host key of ${target.host} is not one public key on one line`;
    return undefined;
}

/** One run of ssh; `--` ends its options, so the destination is never read as one. */
export function runOnce(target: SshTarget, command: string, input: string | Buffer, dir: string, timeoutSeconds: number): Promise<SshResult> {
    const key = path.join(dir, "key");
    const knownHosts = path.join(dir, "known_hosts");
    return new Promise((resolve, reject) => {
        const child = spawn(
            "ssh",
            [
                // -F /dev/null: no ~/.ssh/config (a proxy, a shared connection, another HostName) gets between us and the pinned host key.
                "-F",
                "/dev/null",
                "-i",
                key,
                "-p",
                String(target.port),
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
        fs.writeFileSync(path.join(dir, "key"), target.privateKey.endsWith("\n") ? target.privateKey : target.privateKey + "\n", { mode: 0o600 });
        const hostPattern = target.port === 22 ? target.host : `[${target.host}]:${target.port}`;
        fs.writeFileSync(path.join(dir, "known_hosts"), `${hostPattern} ${target.hostKey.trim()}\n`);
        let result: SshResult = { code: -1, stdout: "", stderr: "" };
        for (let attempt = 1; attempt <= 4; attempt++) {
            result = await runOnce(target, command, input, dir, timeoutSeconds);
            if (result.code !== SSH_FAILED || !/Connection (refused|reset|closed)|timed out|kex_exchange/i.test(result.stderr)) break;
            await new Promise((r) => setTimeout(r, attempt * 2000));
        }
        return result;
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
