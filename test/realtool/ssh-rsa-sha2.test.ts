/**
 * A pinned RSA host key is taken with SHA-2 signatures only (rsa-sha2-512, rsa-sha2-256), never
 * SHA-1's `ssh-rsa`: against real sshd on loopback, each with the same kind of RSA host key and
 * offering one host key algorithm (`HostKeyAlgorithms`). The one that offers only `ssh-rsa` is
 * refused before any command runs; the SHA-2 ones are taken, with the algorithm sshd logs.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { closeSshConnections, runOverSsh, SshTarget } from "../../components/providers/host/ssh";
import { makeScratch, scratchName } from "../support/scratch";
import { freePort, TestSshd } from "../support/sshd";
import { ensureCommands } from "../support/tools";

describe("a pinned RSA host key and the signature algorithms it is taken with (real sshd)", function () {
    this.timeout(120_000);
    const dir = scratchName("gw-ssh-rsa-");
    const client = generateOpensshKeyPair("client");
    const servers: Record<string, TestSshd> = {};
    const targetOf = (sshd: TestSshd): SshTarget => ({
        host: "127.0.0.1",
        port: sshd.port,
        user: "root",
        privateKey: client.privateKeyOpenssh,
        hostKey: sshd.hostKey,
    });

    before(async () => {
        ensureCommands(["sshd"], ["openssh-server"]);
        makeScratch(dir);
        for (const algorithm of ["ssh-rsa", "rsa-sha2-256", "rsa-sha2-512"])
            servers[algorithm] = new TestSshd(path.join(dir, algorithm), await freePort(), client.publicKeyOpenssh, [`HostKeyAlgorithms ${algorithm}`], "rsa");
        await Promise.all(Object.values(servers).map((s) => s.start()));
    });

    afterEach(() => closeSshConnections());

    after(() => {
        for (const s of Object.values(servers)) s.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("refuses an sshd that signs its RSA key only with SHA-1 (ssh-rsa), and runs nothing", async () => {
        const sshd = servers["ssh-rsa"];
        assert.match(sshd.hostKey, /^ssh-rsa /);
        const marker = path.join(dir, "ran-over-sha1");
        const started = Date.now();
        await assert.rejects(
            runOverSsh(targetOf(sshd), `touch ${marker}`, "", 60),
            new RegExp(`ssh: root@127\\.0\\.0\\.1:${sshd.port} offers none of rsa-sha2-512, rsa-sha2-256 for the pinned ssh-rsa host key: nothing was run`),
        );
        assert.ok(Date.now() - started < 10_000, "no retries for a refusal that stays");
        assert.ok(!fs.existsSync(marker), "the command ran over a SHA-1 host key signature");
        assert.doesNotMatch(fs.readFileSync(sshd.log, "utf8"), /Accepted publickey/);
    });

    for (const algorithm of ["rsa-sha2-512", "rsa-sha2-256"])
        it(`takes an sshd that signs it with ${algorithm}`, async () => {
            const sshd = servers[algorithm];
            const r = await runOverSsh(targetOf(sshd), "echo over-sha2", "", 60);
            assert.deepStrictEqual([r.code, r.stdout], [0, "over-sha2\n"], r.stderr);
            assert.match(fs.readFileSync(sshd.log, "utf8"), new RegExp(`kex: host key algorithm: ${algorithm}\\b`));
        });
});
