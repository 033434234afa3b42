/**
 * Runs a script on a host with the system's OpenSSH client, pinned to the host key given,
 * with a private key that only ever sits in a 0600 file under a fresh 0700 folder.
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

export interface SshTarget {
    host: string;
    port: number;
    user: string;
    privateKey: string;
    /** "ssh-ed25519 AAAA..." */
    hostKey: string;
}

export interface SshResult { code: number; stdout: string; stderr: string }

export function runOverSsh(target: SshTarget, script: string, timeoutSeconds = 60): SshResult {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-workers-ssh-"));
    try {
        const key = path.join(dir, "key");
        const knownHosts = path.join(dir, "known_hosts");
        fs.writeFileSync(key, target.privateKey.endsWith("\n") ? target.privateKey : target.privateKey + "\n", { mode: 0o600 });
        const hostPattern = target.port === 22 ? target.host : `[${target.host}]:${target.port}`;
        fs.writeFileSync(knownHosts, `${hostPattern} ${target.hostKey.trim()}\n`);
        const r = spawnSync("ssh", [
            "-i", key, "-p", String(target.port),
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", `UserKnownHostsFile=${knownHosts}`, "-o", "ConnectTimeout=15", "-o", "LogLevel=ERROR",
            `${target.user}@${target.host}`, target.user === "root" ? "bash -s" : "sudo -n bash -s",
        ], { input: script, encoding: "utf8", timeout: timeoutSeconds * 1000 });
        if (r.error) throw new Error(`ssh to ${target.user}@${target.host}:${target.port}: ${r.error.message}`);
        return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
