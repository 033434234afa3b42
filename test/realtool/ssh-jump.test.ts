/**
 * The program's own SSH client (components/providers/host/ssh.ts, ssh2 in-process) against real
 * sshd: two on loopback, one the target and one a jump host that forwards to it. Commands share
 * one connection per host, pinned keys are enforced at the jump host and at the target, a jump
 * host that forwards nothing or a wrong key fails at once and runs nothing, a key given as its
 * `.pub` line pins as the bare key does (and one that is no key line is refused before any dial), a host that drops
 * connections while it boots is waited for, and a peer that is no SSH server fails the command
 * with its address.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { closeSshConnections, connectionsOpened, runOverSsh, SshTarget } from "../../components/providers/host/ssh";
import { checkSshBanner } from "../../components/providers/host/ssh-banner";
import { freePort, logins, TestSshd } from "../support/sshd";
import { ensureCommands } from "../support/tools";

/**
 * A TCP relay on loopback to `port`: it drops the first `drop` connections at once (as LXD's proxy
 * does while the instance's sshd is not up), and can cut every relayed connection.
 */
async function relay(port: number, drop: number): Promise<{ port: number; cut(): void; close(): void }> {
    const open = new Set<net.Socket>();
    let seen = 0;
    const server = net.createServer((client) => {
        if (seen++ < drop) {
            client.destroy();
            return;
        }
        const upstream = net.connect(port, "127.0.0.1");
        client.pipe(upstream).pipe(client);
        for (const s of [client, upstream]) {
            open.add(s);
            s.on("error", () => undefined);
            s.on("close", () => open.delete(s));
        }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        port: (server.address() as net.AddressInfo).port,
        cut: () => open.forEach((s) => s.destroy()),
        close: () => (open.forEach((s) => s.destroy()), server.close()),
    };
}

describe("the program's SSH client (real sshd on both ends)", function () {
    this.timeout(120_000);
    let dir = "";
    let jump: TestSshd;
    let closedJump: TestSshd;
    let target: TestSshd;
    let direct: SshTarget;
    let via: SshTarget;
    let pwned = "";

    before(async () => {
        ensureCommands(["sshd", "ssh-keygen", "ssh-keyscan"], ["openssh-server", "openssh-client"]);
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-ssh-jump-"));
        pwned = path.join(dir, "pwned");
        const client = generateOpensshKeyPair("client");
        const jumpClient = generateOpensshKeyPair("jump-client");
        jump = new TestSshd(path.join(dir, "jump"), await freePort(), jumpClient.publicKeyOpenssh, ["AllowTcpForwarding yes"]);
        closedJump = new TestSshd(path.join(dir, "closed"), await freePort(), jumpClient.publicKeyOpenssh, ["AllowTcpForwarding no"]);
        target = new TestSshd(path.join(dir, "target"), await freePort(), client.publicKeyOpenssh, []);
        await Promise.all([jump.start(), closedJump.start(), target.start()]);
        direct = { host: "127.0.0.1", port: target.port, user: "root", privateKey: client.privateKeyOpenssh, hostKey: target.hostKey };
        via = {
            ...direct,
            proxy: { host: "127.0.0.1", port: jump.port, user: "root", privateKey: jumpClient.privateKeyOpenssh, hostKey: jump.hostKey },
        };
    });

    afterEach(() => closeSshConnections());

    after(() => {
        for (const d of [jump, closedJump, target]) d?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("runs many commands, at once and in turn, over one login: more at once than sshd's ten sessions wait their turn", async () => {
        const before = logins(target);
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => runOverSsh(direct, `cat; echo ${i}`, `in ${i}\n`)));
        results.forEach((r, i) => assert.deepStrictEqual([r.code, r.stdout], [0, `in ${i}\n${i}\n`], r.stderr));
        for (let i = 0; i < 3; i++) assert.strictEqual((await runOverSsh(direct, "exit 7")).code, 7);
        assert.strictEqual(logins(target) - before, 1, "one login for every command");
    });

    it("runs the command on the target, through a connection the jump host forwards: one login on each", async () => {
        const [jumpBefore, targetBefore] = [logins(jump), logins(target)];
        for (let i = 0; i < 3; i++) {
            const r = await runOverSsh(via, "cat; echo on-the-target", "from stdin\n", 60);
            assert.strictEqual(r.code, 0, r.stderr);
            assert.strictEqual(r.stdout, "from stdin\non-the-target\n");
        }
        // The jump host's sshd opened the forwarded connection to the target.
        assert.match(fs.readFileSync(jump.log, "utf8"), new RegExp(`server_request_direct_tcpip: .* target 127\\.0\\.0\\.1 port ${target.port}\\b`));
        assert.deepStrictEqual([logins(jump) - jumpBefore, logins(target) - targetBefore], [1, 1]);
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

    it("fails at once where the jump host forwards nothing: the target is reached through it, not directly", async () => {
        const marker = path.join(dir, "ran-through-closed");
        const started = Date.now();
        await assert.rejects(
            runOverSsh({ ...via, proxy: { ...via.proxy!, port: closedJump.port, hostKey: closedJump.hostKey } }, `touch ${marker}`, "", 60),
            /the jump host did not forward a connection to 127\.0\.0\.1:\d+: .*it forwards no connections/,
        );
        assert.ok(Date.now() - started < 10_000, "no retries for a refusal that stays");
        assert.ok(!fs.existsSync(marker), "the command ran");
    });

    it("refuses a jump host whose key is not the pinned one, before any command runs", async () => {
        const marker = path.join(dir, "ran-past-a-wrong-key");
        const wrongKey = generateOpensshKeyPair("impostor").publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
        await assert.rejects(
            runOverSsh({ ...via, proxy: { ...via.proxy!, hostKey: wrongKey } }, `touch ${marker}`, "", 60),
            new RegExp(`ssh: root@127\\.0\\.0\\.1:${jump.port} presented the host key ssh-ed25519 \\S+, not the pinned one: nothing was run`),
        );
        assert.ok(!fs.existsSync(marker), "the command ran past a wrong jump host key");
    });

    it("a target whose key is not the pinned one is refused too, with the jump host's right", async () => {
        const wrongKey = generateOpensshKeyPair("impostor").publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
        await assert.rejects(runOverSsh({ ...via, hostKey: wrongKey }, "true", "", 60), /presented the host key .*, not the pinned one/);
    });

    it("pins a key given as its .pub line (comment, tabs) at both ends and shares the connection of the bare key; refuses what is no such line before any dial", async () => {
        // The lines a user pastes: the public half as ssh-keygen derives it from the host key (with a comment), and ssh-keyscan's line.
        const pubOf = (sshd: TestSshd) =>
            `${execFileSync("ssh-keygen", ["-y", "-f", path.join(sshd.dir, "host_key")], { encoding: "utf8" }).trim()}\troot@${path.basename(sshd.dir)}\n`;
        const keyscan = execFileSync("ssh-keyscan", ["-t", "ed25519", "-p", String(target.port), "127.0.0.1"], {
            encoding: "utf8",
            stdio: ["ignore", "pipe", "ignore"],
        }).trim();
        assert.strictEqual(pubOf(target).split(/\s+/).slice(0, 2).join(" "), target.hostKey);
        assert.strictEqual(keyscan, `[127.0.0.1]:${target.port} ${target.hostKey}`);
        const [jumpBefore, targetBefore] = [logins(jump), logins(target)];
        const pinned = { ...via, hostKey: pubOf(target), proxy: { ...via.proxy!, hostKey: `  ${pubOf(jump)}` } };
        const r = await runOverSsh(pinned, "echo pinned-by-pub", "", 60);
        assert.deepStrictEqual([r.code, r.stdout], [0, "pinned-by-pub\n"], r.stderr);
        assert.strictEqual((await runOverSsh(via, "echo bare", "", 60)).stdout, "bare\n", "the bare key: the same connection");
        assert.deepStrictEqual([logins(jump) - jumpBefore, logins(target) - targetBefore], [1, 1], "one login on each, for both forms");

        // Another host's key as a .pub line: the target presents its own, and nothing runs.
        const marker = path.join(dir, "ran-past-a-mismatched-pub");
        await assert.rejects(
            runOverSsh({ ...pinned, hostKey: pubOf(jump) }, `touch ${marker}`, "", 60),
            new RegExp(
                `ssh: root@127\\.0\\.0\\.1:${target.port} presented the host key ${target.hostKey.replace(/[+/]/g, "\\$&")}, not the pinned one: nothing was run`,
            ),
        );
        // ssh-keyscan's line with its host name, and ssh-rsa before the target's ed25519 body: refused before any dial, naming what they are.
        const dialled = logins(target);
        await assert.rejects(
            runOverSsh({ ...via, hostKey: keyscan }, `touch ${marker}`, "", 60),
            /\(hostKey\): a known_hosts line \(the host names "\[127\.0\.0\.1\]:\d+" before ssh-ed25519\)/,
        );
        await assert.rejects(
            runOverSsh({ ...via, hostKey: `ssh-rsa ${target.hostKey.split(" ")[1]}` }, `touch ${marker}`, "", 60),
            /\(hostKey\): the ssh-rsa key is refused: the line says ssh-rsa, but its body is an ssh-ed25519 key/,
        );
        assert.strictEqual(logins(target), dialled, "a refused key dialled the target");
        assert.ok(!fs.existsSync(marker), "the command ran past a mismatched key");
    });

    it("refuses a login the host does not take, at once", async () => {
        const stranger = generateOpensshKeyPair("stranger");
        await assert.rejects(runOverSsh({ ...direct, privateKey: stranger.privateKeyOpenssh }, "true"), /refused the login with the given private key/);
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

    it("waits for a host that drops connections while it boots, and dials again after a connection is cut", async () => {
        const booting = await relay(target.port, 3);
        try {
            const through = { ...direct, port: booting.port };
            assert.strictEqual((await runOverSsh(through, "echo up")).stdout, "up\n");
            booting.cut();
            await new Promise((r) => setTimeout(r, 200));
            assert.strictEqual((await runOverSsh(through, "echo again")).stdout, "again\n");
            assert.strictEqual(connectionsOpened.get(`root@127.0.0.1:${booting.port}`), 2);
        } finally {
            booting.close();
        }
    });

    it("fails, naming the address, where a peer accepts and never speaks SSH, or speaks something else", async () => {
        const silent = net.createServer(() => undefined);
        const http = net.createServer((s) => s.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
        await Promise.all([silent, http].map((srv) => new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve))));
        try {
            const port = (srv: net.Server) => (srv.address() as net.AddressInfo).port;
            await assert.rejects(
                runOverSsh({ ...direct, port: port(silent) }, "true"),
                new RegExp(`ssh: root@127\\.0\\.0\\.1:${port(silent)} accepted a connection but completed no SSH handshake in 15 s: it is not an SSH server`),
            );
            await assert.rejects(runOverSsh({ ...direct, port: port(http) }, "true"), new RegExp(`root@127\\.0\\.0\\.1:${port(http)}`));
        } finally {
            silent.close();
            http.close();
        }
    });
});
