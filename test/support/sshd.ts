/**
 * A real sshd of a test's own on a loopback port, with a host key made here (ED25519, or RSA
 * where a test needs one) and one client key authorized: for tests of the program's own SSH
 * client. The test stops it.
 */
import { spawn, ChildProcess } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { generateOpensshKeyPair, publicKeyOfPrivateKey } from "../../components/providers/keys/openssh";

/** A loopback port nothing listens on now: bound, then closed. */
export async function freePort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
}

/** A private host key of `type` as sshd reads it (OpenSSH's format, or PEM for RSA). */
function hostPrivateKey(type: "ed25519" | "rsa"): string {
    if (type === "ed25519") return generateOpensshKeyPair("sshd").privateKeyOpenssh;
    return crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
}

/** An sshd of its own on 127.0.0.1:port, root's key authorized, logging to its folder. */
export class TestSshd {
    /** The host key's type and body, as a pinned key is given. */
    readonly hostKey: string;
    readonly log: string;
    private child?: ChildProcess;

    constructor(
        readonly dir: string,
        readonly port: number,
        clientPublicKey: string,
        options: string[],
        keyType: "ed25519" | "rsa" = "ed25519",
    ) {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        const key = hostPrivateKey(keyType);
        fs.writeFileSync(path.join(dir, "host_key"), key, { mode: 0o600 });
        fs.writeFileSync(path.join(dir, "authorized_keys"), `${clientPublicKey}\n`, { mode: 0o600 });
        this.hostKey = publicKeyOfPrivateKey(key).split(" ").slice(0, 2).join(" ");
        this.log = path.join(dir, "sshd.log");
        const config = [
            `Port ${port}`,
            "ListenAddress 127.0.0.1",
            `HostKey ${path.join(dir, "host_key")}`,
            `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
            `PidFile ${path.join(dir, "sshd.pid")}`,
            "StrictModes no",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "LogLevel DEBUG1",
            ...options,
        ];
        fs.writeFileSync(path.join(dir, "sshd_config"), config.join("\n") + "\n");
    }

    async start(): Promise<void> {
        fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
        this.child = spawn("/usr/sbin/sshd", ["-D", "-f", path.join(this.dir, "sshd_config"), "-E", this.log], { stdio: "ignore" });
        for (let i = 0; i < 50; i++) {
            const up = await new Promise<boolean>((resolve) => {
                const s = net.connect(this.port, "127.0.0.1", () => (s.destroy(), resolve(true)));
                s.on("error", () => resolve(false));
            });
            if (up) return;
            await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`sshd on ${this.port} did not start: ${fs.existsSync(this.log) ? fs.readFileSync(this.log, "utf8") : "(no log)"}`);
    }

    stop(): void {
        this.child?.kill("SIGTERM");
    }
}

/** Accepted publickey logins in an sshd's log. */
export function logins(sshd: TestSshd): number {
    return (fs.readFileSync(sshd.log, "utf8").match(/Accepted publickey for root/g) ?? []).length;
}
