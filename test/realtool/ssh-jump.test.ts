/**
 * runOverSsh through a jump host, with real OpenSSH on both ends: two sshd on loopback, one the
 * jump host and one the target. The command reaches the target only through the jump host (a
 * jump host that forwards nothing makes it fail), a wrong pinned key of the jump host is refused
 * before anything runs, and a hostile jump host value never runs a command on this machine
 * (the ProxyCommand goes through a shell).
 */
import * as assert from "assert";
import { spawn, ChildProcess } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { runOnce, runOverSsh, SshTarget } from "../../components/providers/host/ssh";
import { checkSshBanner } from "../../components/providers/host/ssh-banner";
import { ensureCommands } from "../support/tools";

async function freePort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
}

/** An sshd of its own on 127.0.0.1:port, root's key authorized, logging to its folder. */
class TestSshd {
    readonly hostKey: string;
    readonly log: string;
    private child?: ChildProcess;

    constructor(
        readonly dir: string,
        readonly port: number,
        clientPublicKey: string,
        options: string[],
    ) {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        const key = generateOpensshKeyPair("sshd");
        fs.writeFileSync(path.join(dir, "host_key"), key.privateKeyOpenssh, { mode: 0o600 });
        fs.writeFileSync(path.join(dir, "authorized_keys"), `${clientPublicKey}\n`, { mode: 0o600 });
        this.hostKey = key.publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
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

describe("runOverSsh through a jump host (real sshd on both ends)", function () {
    this.timeout(120_000);
    let dir = "";
    let jump: TestSshd;
    let closedJump: TestSshd;
    let target: TestSshd;
    let via: SshTarget;
    let pwned = "";

    before(async () => {
        ensureCommands(["ssh", "sshd"], ["openssh-client", "openssh-server"]);
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-ssh-jump-"));
        pwned = path.join(dir, "pwned");
        const client = generateOpensshKeyPair("client");
        const jumpClient = generateOpensshKeyPair("jump-client");
        jump = new TestSshd(path.join(dir, "jump"), await freePort(), jumpClient.publicKeyOpenssh, ["AllowTcpForwarding yes"]);
        closedJump = new TestSshd(path.join(dir, "closed"), await freePort(), jumpClient.publicKeyOpenssh, ["AllowTcpForwarding no"]);
        target = new TestSshd(path.join(dir, "target"), await freePort(), client.publicKeyOpenssh, []);
        await Promise.all([jump.start(), closedJump.start(), target.start()]);
        via = {
            host: "127.0.0.1",
            port: target.port,
            user: "root",
            privateKey: client.privateKeyOpenssh,
            hostKey: target.hostKey,
            proxy: { host: "127.0.0.1", port: jump.port, user: "root", privateKey: jumpClient.privateKeyOpenssh, hostKey: jump.hostKey },
        };
    });

    after(() => {
        for (const d of [jump, closedJump, target]) d?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("runs the command on the target, through a connection the jump host forwards", async () => {
        const r = await runOverSsh(via, "cat; echo on-the-target", "from stdin\n", 60);
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(r.stdout, "from stdin\non-the-target\n");
        // The jump host's sshd opened the forwarded connection to the target.
        assert.match(fs.readFileSync(jump.log, "utf8"), new RegExp(`server_request_direct_tcpip: .* target 127\\.0\\.0\\.1 port ${target.port}\\b`));
    });

    it("the check that an address speaks SSH passes a real sshd, which logs a client that named itself and left", async () => {
        await checkSshBanner("127.0.0.1", jump.port, 15);
        // sshd logs as it goes: wait for the probe's leaving, after the line naming it.
        const probed = /remote software version gpu-workers-probe[^]*Connection closed by 127\.0\.0\.1 port \d+ \[preauth\]/;
        for (let i = 0; i < 50 && !probed.test(fs.readFileSync(jump.log, "utf8")); i++) await new Promise((r) => setTimeout(r, 100));
        const log = fs.readFileSync(jump.log, "utf8");
        assert.match(log, probed);
        assert.doesNotMatch(log, /Did not receive identification string|banner exchange/i);
    });

    it("fails where the jump host forwards nothing: the target is reached through it, not directly", async () => {
        const marker = path.join(dir, "ran-through-closed");
        const r = await runOverSsh({ ...via, proxy: { ...via.proxy!, port: closedJump.port, hostKey: closedJump.hostKey } }, `touch ${marker}`, "", 60);
        assert.strictEqual(r.code, 255, r.stderr);
        assert.match(r.stderr, /stdio forwarding failed/);
        assert.ok(!fs.existsSync(marker), "the command ran");
    });

    it("refuses a jump host whose key is not the pinned one, before any command runs", async () => {
        const marker = path.join(dir, "ran-past-a-wrong-key");
        const wrongKey = generateOpensshKeyPair("impostor").publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
        const r = await runOverSsh({ ...via, proxy: { ...via.proxy!, hostKey: wrongKey } }, `touch ${marker}`, "", 60);
        assert.strictEqual(r.code, 255, r.stderr);
        assert.match(r.stderr, /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
        assert.ok(!fs.existsSync(marker), "the command ran past a wrong jump host key");
    });

    it("a target whose key is not the pinned one is refused too, with the jump host's right", async () => {
        const wrongKey = generateOpensshKeyPair("impostor").publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
        const r = await runOverSsh({ ...via, hostKey: wrongKey }, "true", "", 60);
        assert.strictEqual(r.code, 255, r.stderr);
        assert.match(r.stderr, /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
    });

    it("refuses a hostile jump host user or host, and runs nothing", async () => {
        await assert.rejects(
            runOverSsh({ ...via, proxy: { ...via.proxy!, user: `-oProxyCommand=touch ${pwned} #` } }, "true", "", 20),
            /ssh: the jump host's user ".*" is no POSIX user name/,
        );
        await assert.rejects(
            runOverSsh({ ...via, proxy: { ...via.proxy!, host: `127.0.0.1;touch ${pwned}` } }, "true", "", 20),
            /ssh: the jump host's host ".*" is neither a DNS name nor an IP address/,
        );
        assert.ok(!fs.existsSync(pwned), "a command ran on this machine");
    });

    it("past that check, the ProxyCommand keeps shell words and % tokens inert: ssh only fails", async () => {
        const keys = fs.mkdtempSync(path.join(dir, "keys-"));
        for (const name of ["key", "jump-key"]) fs.writeFileSync(path.join(keys, name), via.privateKey, { mode: 0o600 });
        fs.writeFileSync(path.join(keys, "known_hosts"), "");
        fs.writeFileSync(path.join(keys, "jump_known_hosts"), "");
        const hostile = { ...via, proxy: { ...via.proxy!, host: `$(touch ${pwned})%n`, user: `x';touch ${pwned};'` } };
        const r = await runOnce(hostile, "true", "", keys, 20);
        assert.strictEqual(r.code, 255, r.stderr);
        assert.ok(!fs.existsSync(pwned), `a command ran on this machine:\n${r.stderr}`);
    });
});
