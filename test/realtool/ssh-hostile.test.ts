/**
 * The program's SSH client (components/providers/host/ssh.ts) against a closed loopback port: a
 * user that looks like an option (`-oProxyCommand=...`), or a host or host key that would add a
 * known_hosts line, is refused before anything is dialled, and nothing runs on this machine. The
 * client spawns no ssh, so no value could become an option anyway; it refuses them because no
 * such value names a real login. The stack's schema refuses them too.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { runOverSsh, SshTarget } from "../../components/providers/host/ssh";
import { parseStack } from "../../stacks/checks/stack";
import { StackConfigError } from "../../stacks/config/stack";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
}

describe("ssh: a hostile user, host or host key is refused before any dial", function () {
    this.timeout(60_000);
    let dir = "";
    let target: SshTarget;
    let pwned = "";

    before(async () => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-ssh-hostile-"));
        pwned = path.join(dir, "pwned");
        const key = generateOpensshKeyPair("test");
        target = {
            host: "127.0.0.1",
            port: await closedPort(),
            user: `-oProxyCommand=touch ${pwned} #`,
            privateKey: key.privateKeyOpenssh,
            hostKey: generateOpensshKeyPair("host").publicKeyOpenssh,
        };
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("runOverSsh refuses the user, and runs nothing", async () => {
        await assert.rejects(runOverSsh(target, "true", "", 20), /ssh: the user "-oProxyCommand=touch .* #" is no POSIX user name/);
        assert.ok(!fs.existsSync(pwned), "the ProxyCommand ran on this machine");
    });

    it("a host or a host key that would add a second known_hosts line is refused too", async () => {
        const user = { ...target, user: "root" };
        await assert.rejects(
            runOverSsh({ ...user, host: "127.0.0.1\n* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEvil" }, "true", "", 20),
            /ssh: the host ".*" is neither a DNS name nor an IP address/,
        );
        await assert.rejects(
            runOverSsh({ ...user, hostKey: `${target.hostKey}\n* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEvil` }, "true", "", 20),
            /ssh: the host key of 127\.0\.0\.1 \(hostKey\): 2 keys on 2 lines: pin one key, not several/,
        );
        await assert.rejects(runOverSsh({ ...user, host: "-oProxyCommand=x" }, "true", "", 20), /is neither a DNS name nor an IP address/);
    });

    it("the stack's schema refuses the user and a host that looks like an option", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU });
        Object.assign((raw.hosts[0] as { transport: { ssh: Record<string, unknown> } }).transport.ssh, {
            user: `-oProxyCommand=touch ${pwned} #`,
            host: "-oProxyCommand=x",
        });
        assert.throws(
            () => parseStack(raw),
            (e: unknown) => {
                assert.ok(e instanceof StackConfigError);
                assert.deepStrictEqual(e.problems, [
                    "hosts[0].transport.ssh.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
                    "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
                ]);
                return true;
            },
        );
    });
});
