/**
 * Public halves of private keys, checked against the real tools that make the keys: ssh-keygen
 * (RSA, ED25519, ECDSA in OpenSSH's format and in PEM) and `concourse generate-key -t ssh`,
 * whose PKCS#1 key carries PKCS#8's label. And the RSA keys the program generates for
 * Concourse, read back by ssh-keygen.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { create as generateSecret } from "../../components/providers/keys/generated-secret-ops";
import { publicKeyOfPrivateKey } from "../../components/providers/keys/openssh";
import { pendingWithout, release } from "../support/supplied";
import { makeScratch, scratchName } from "../support/scratch";
import { ensureCommands } from "../support/tools";

describe("public halves of private keys (ssh-keygen, concourse generate-key)", function () {
    this.timeout(120_000);
    const dir = scratchName("gw-keys-");
    const key = path.join(dir, "key");
    const publicOf = (file: string) => fs.readFileSync(file, "utf8").trim().split(" ").slice(0, 2).join(" ");

    before(() => {
        makeScratch(dir);
        ensureCommands(["ssh-keygen"], ["openssh-client"]);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const type of ["rsa", "ed25519", "ecdsa"]) {
        for (const format of ["openssh", "pem"]) {
            it(`${type} in ${format === "pem" ? "PEM" : "OpenSSH's format"}`, () => {
                fs.rmSync(key, { force: true });
                fs.rmSync(`${key}.pub`, { force: true });
                execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-f", key, ...(format === "pem" ? ["-m", "PEM"] : [])]);
                assert.strictEqual(publicKeyOfPrivateKey(fs.readFileSync(key, "utf8")), publicOf(`${key}.pub`));
            });
        }
    }

    it("concourse generate-key -t ssh (PKCS#1 under PKCS#8's label)", function () {
        pendingWithout(this, "concourse");
        const unpacked = path.join(dir, "release");
        fs.mkdirSync(unpacked);
        execFileSync("tar", ["-xzf", release().tarball, "-C", unpacked, "concourse/bin/concourse"]);
        const made = path.join(dir, "tsa_host_key");
        execFileSync(path.join(unpacked, "concourse/bin/concourse"), ["generate-key", "-t", "ssh", "-f", made], { stdio: "ignore" });
        assert.match(fs.readFileSync(made, "utf8"), /^-----BEGIN PRIVATE KEY-----/);
        assert.strictEqual(publicKeyOfPrivateKey(fs.readFileSync(made, "utf8")), publicOf(`${made}.pub`));
    });

    it("the RSA keys generated for Concourse are PEM that ssh-keygen reads, with the public half it derives", async () => {
        const { outs } = await generateSecret({ kind: "rsa-private-key", comment: "w" });
        assert.match(outs.value, /^-----BEGIN RSA PRIVATE KEY-----/);
        fs.writeFileSync(key, outs.value, { mode: 0o600 });
        const derived = execFileSync("ssh-keygen", ["-y", "-f", key], { encoding: "utf8" }).trim();
        assert.strictEqual(outs.publicKeyOpenssh, `${derived} w`);
    });

    it("refuses what is no private key", () => {
        assert.throws(() => publicKeyOfPrivateKey("ssh-rsa AAAA"), /not a private key in OpenSSH or PEM format/);
    });
});
