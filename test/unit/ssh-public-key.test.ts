/**
 * The one grammar of a key field (a host's `hostKey`, a jump host's, the TSA's `tsaPublicKey`):
 * each form taken and each form refused, with real keys (test/fixtures/ssh-keys, made with
 * ssh-keygen) and blobs made from them; then the same rule in the stack's schema (the problem at
 * its path) and on the components' args, before any host is dialled.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as pulumi from "@pulumi/pulumi";
import { webSpec } from "../../components/chain/concourse-web";
import { ConcourseWorker } from "../../components/chain/concourse-worker";
import { GpuHost } from "../../components/chain/gpu-host";
import { GpuWorker, GpuWorkerArgsError, workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { linkOf } from "../../components/lib/plan/chain";
import { planHost } from "../../components/lib/plan/host-plan";
import { renderConcourseWorker, tsaPublicKeyFile } from "../../components/lib/links/concourse-worker/render";
import { isPinnedKey, parseSshPublicKey, SSH_KEY_PASTE, SshKeyRole, SshPublicKey, sshPublicKeySchema } from "../../components/lib/settings/ssh-public-key";
import { commandConnection } from "../../components/providers/host/command-connection";
import { runOverSsh, SshTarget, sshTargetProblem } from "../../components/providers/host/ssh";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { parseStackConfig } from "../../stacks/checks/stack";
import { workerArgs } from "../../stacks/args/component-args";
import { HOST_KEY, JUMP_KEY, PUB, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { recordGraph, settle } from "../support/pulumi-graph";
import { problemsOf } from "../support/stack-problems";

/** The key of `text`, or the test fails with the problem. */
function accepted(text: string, role: SshKeyRole = "host"): SshPublicKey {
    const parsed = parseSshPublicKey(text, role);
    assert.ok("key" in parsed, `refused: ${"problem" in parsed ? parsed.problem : ""}`);
    return parsed.key;
}

/** The problem of `text` without the words of what to paste (checked once, below), or the test fails where it is taken. */
function refused(text: string, role: SshKeyRole = "host"): string {
    const parsed = parseSshPublicKey(text, role);
    assert.ok("problem" in parsed, `taken: ${JSON.stringify(text)}`);
    const tail = `; ${SSH_KEY_PASTE[role]}`;
    assert.ok(parsed.problem.endsWith(tail), `no word of what to paste instead: ${parsed.problem}`);
    return parsed.problem.slice(0, -tail.length);
}

const sshString = (b: Buffer | string) => {
    const body = Buffer.isBuffer(b) ? b : Buffer.from(b, "latin1");
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    return Buffer.concat([length, body]);
};
const blobOf = (line: string) => Buffer.from(line.trim().split(/\s+/)[1], "base64");
const lineOf = (type: string, ...fields: (Buffer | string)[]) => `${type} ${Buffer.concat(fields.map(sshString)).toString("base64")}`;
/** The fields of a key's blob, as RFC 4251 strings. */
function fieldsOf(blob: Buffer): Buffer[] {
    const out: Buffer[] = [];
    for (let at = 0; at < blob.length;) {
        const n = blob.readUInt32BE(at);
        out.push(blob.subarray(at + 4, at + 4 + n));
        at += 4 + n;
    }
    return out;
}

const TYPES = [
    ["ed25519", "ssh-ed25519", 256, "root@gpu-a.test"],
    ["rsa3072", "ssh-rsa", 3072, "concourse-tsa@web.test"],
    ["ecdsa256", "ecdsa-sha2-nistp256", 256, "root@gpu-b.test"],
    ["ecdsa384", "ecdsa-sha2-nistp384", 384, "root@gpu-c.test"],
    ["ecdsa521", "ecdsa-sha2-nistp521", 521, "root@gpu-d.test"],
] as const;

describe("an SSH public key line: the forms taken", () => {
    for (const [fixture, type, bits, comment] of TYPES)
        it(`${type}: the .pub file as ssh-keygen wrote it, its comment and newline too; the key without its comment`, () => {
            const pub = PUB[fixture];
            const key = accepted(pub);
            const body = pub.split(" ")[1];
            assert.deepStrictEqual(
                { type: key.type, bits: key.bits, comment: key.comment, pinned: key.pinned, line: key.line },
                { type, bits, comment, pinned: `${type} ${body}`, line: pub.trim() },
            );
            assert.ok(key.blob.equals(Buffer.from(body, "base64")));
            const bare = accepted(`${type} ${body}`);
            assert.deepStrictEqual([bare.comment, bare.line], [undefined, `${type} ${body}`]);
            for (const role of ["host", "tsa"] as const) assert.strictEqual(accepted(pub, role).pinned, key.pinned);
        });

    it("white space around the line and between its fields (tabs, runs of spaces, CRLF); a comment of several words, kept as written", () => {
        const [type, body] = PUB.ed25519.split(" ");
        for (const text of [`  ${type}\t${body}   root@gpu-a.test \r\n`, `\n${type}  \t ${body}\troot@gpu-a.test\n\n`]) {
            const key = accepted(text);
            assert.deepStrictEqual([key.pinned, key.comment, key.line], [HOST_KEY, "root@gpu-a.test", `${HOST_KEY} root@gpu-a.test`]);
        }
        assert.strictEqual(accepted(`${HOST_KEY} Jane Doe's  laptop (2024)`).comment, "Jane Doe's  laptop (2024)");
    });

    it("a pinned key is compared by type and blob: the comment and spacing play no part, another key never matches", () => {
        const pinned = accepted(`${PUB.ed25519.split(" ").join("\t\t")}`);
        assert.ok(isPinnedKey(pinned, blobOf(HOST_KEY)));
        assert.ok(isPinnedKey(accepted(HOST_KEY), blobOf(PUB.ed25519)));
        assert.ok(!isPinnedKey(pinned, blobOf(JUMP_KEY)));
        assert.ok(!isPinnedKey(accepted(TSA_KEY), blobOf(HOST_KEY)));
    });
});

describe("an SSH public key line: the forms refused, each named, with what to paste instead", () => {
    const [edType, edBody] = PUB.ed25519.split(" ");
    const edBlob = blobOf(PUB.ed25519);

    it("what to paste: the host's .pub or ssh-keyscan's key part for a host key, the TSA's .pub for the TSA's", () => {
        assert.match(SSH_KEY_PASTE.host, /\/etc\/ssh\/ssh_host_ed25519_key\.pub/);
        assert.match(SSH_KEY_PASTE.host, /`ssh-keyscan -t ed25519 HOST` without the host name in front/);
        assert.match(SSH_KEY_PASTE.tsa, /`ssh-keygen -y -f tsa_host_key`/);
        assert.strictEqual(refused("", "tsa"), "empty");
        assert.strictEqual(refused(" \t\n"), "empty");
    });

    it("a key cut short at 60 characters, and at every other length: refused, never taken", () => {
        assert.strictEqual(
            refused(PUB.ed25519.slice(0, 60)),
            "the ssh-ed25519 key is refused: its body is cut short: the key wants 32 bytes and 17 are left (copied only in part?)",
        );
        assert.strictEqual(
            refused(PUB.ed25519.slice(0, 61)),
            "the body of the ssh-ed25519 key (49 characters) is not whole base64: cut short, or changed when copied?",
        );
        for (const [fixture, type] of TYPES) {
            const body = PUB[fixture].split(" ")[1];
            for (let cut = 1; cut < body.length; cut++)
                assert.match(refused(`${type} ${body.slice(0, cut)}`), /is cut short|is not whole base64/, `${type} cut at ${cut}`);
        }
    });

    it("a type that is not the body's: ssh-rsa before an ed25519 body, one curve before another's", () => {
        assert.strictEqual(
            refused(`ssh-rsa ${edBody} root@gpu-a.test`),
            "the ssh-rsa key is refused: the line says ssh-rsa, but its body is an ssh-ed25519 key: the type and the body come from different keys",
        );
        assert.match(
            refused(`ecdsa-sha2-nistp256 ${PUB.ecdsa384.split(" ")[1]}`),
            /the line says ecdsa-sha2-nistp256, but its body is an ecdsa-sha2-nistp384 key/,
        );
        assert.match(refused(`ssh-ed25519 ${TSA_KEY.split(" ")[1]}`), /the line says ssh-ed25519, but its body is an ssh-rsa key/);
    });

    it("a body with something after the key, or not canonical base64, or not base64 at all", () => {
        assert.strictEqual(
            refused(`${edType} ${Buffer.concat([edBlob, Buffer.from("xyz")]).toString("base64")}`),
            "the ssh-ed25519 key is refused: its body has 3 bytes after the key's last field: something was appended to it",
        );
        assert.match(refused(lineOf("ssh-ed25519", "ssh-ed25519", fieldsOf(edBlob)[1], "")), /4 bytes after the key's last field/);
        // The same bytes, with the unused bits of the last character set (an RSA blob of 407 bytes leaves 2): what decodes, but is not what encodes.
        const rsaBody = TSA_KEY.split(" ")[1];
        const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const [last] = rsaBody.replace(/=+$/, "").slice(-1);
        const sloppy = rsaBody.replace(/.(=*)$/, `${alphabet[alphabet.indexOf(last) + 1]}$1`);
        assert.ok(sloppy !== rsaBody && Buffer.from(sloppy, "base64").equals(blobOf(TSA_KEY)), "the test's body decodes to the key");
        assert.match(refused(`ssh-rsa ${sloppy}`), new RegExp(`^the body of the ssh-rsa key \\(${rsaBody.length} characters\\) is not whole base64`));
        assert.match(refused(`${edType} ${edBody}==`), /is not whole base64/);
        assert.strictEqual(
            refused(`${edType} ${edBody.replace(/\+|\//g, "-")}_`),
            `the body of the ssh-ed25519 key ("${edBody.replace(/\+|\//g, "-").slice(0, 24)}…") holds characters that are not base64`,
        );
        assert.strictEqual(refused("ssh-ed25519"), "ssh-ed25519 with no key body after it");
    });

    it("a known_hosts line (host names, a port, hashed, a marker) and an authorized_keys line with options", () => {
        assert.strictEqual(
            refused(`gpu-a,10.0.0.5 ${PUB.ed25519}`),
            'a known_hosts line (the host names "gpu-a,10.0.0.5" before ssh-ed25519): the host names are no part of the key',
        );
        assert.strictEqual(
            refused(`[gpu-a]:2222 ${HOST_KEY}`),
            'a known_hosts line (the host names "[gpu-a]:2222" before ssh-ed25519): the host names are no part of the key',
        );
        const hashed = `|1|${crypto.randomBytes(20).toString("base64")}|${crypto.randomBytes(20).toString("base64")}`;
        assert.strictEqual(
            refused(`${hashed} ${HOST_KEY}`),
            `a hashed known_hosts line (${JSON.stringify(hashed.slice(0, 12) + "…")} before the key): the hashed host name is no part of the key`,
        );
        assert.match(
            refused(`@cert-authority *.example.test ${HOST_KEY}`),
            /^a known_hosts line with its @cert-authority marker: a CA's key is not the key to pin/,
        );
        assert.match(refused(`@revoked gpu-a ${HOST_KEY}`), /^a known_hosts line with its @revoked marker/);
        assert.match(
            refused(`command="/bin/true",no-pty ${HOST_KEY}`),
            /^an authorized_keys line \(the options "command=\\"\/bin\/true\\",no-p…" before ssh-ed25519\)/,
        );
        assert.match(refused(`restrict ${HOST_KEY}`), /^an authorized_keys line/);
    });

    it("a fingerprint, SHA256 or MD5, alone or as ssh-keygen -l prints it", () => {
        const sha = `SHA256:${crypto.createHash("sha256").update(edBlob).digest("base64").replace(/=+$/, "")}`;
        const md5 = crypto.createHash("md5").update(edBlob).digest("hex").match(/../g)!.join(":");
        const fingerprint = (shown: string) => `a fingerprint (${JSON.stringify(shown)}), not the key: a fingerprint names a key but cannot be pinned as one`;
        assert.strictEqual(refused(sha), fingerprint(`${sha.slice(0, 16)}…`));
        assert.strictEqual(refused(`MD5:${md5}`), fingerprint(`MD5:${md5.slice(0, 12)}…`));
        assert.strictEqual(refused(md5), fingerprint(`${md5.slice(0, 16)}…`));
        assert.strictEqual(
            refused(`256 ${sha} root@gpu-a.test (ED25519)`),
            `ssh-keygen -l output (${JSON.stringify(`256 ${sha}`.slice(0, 20) + "…")}): a fingerprint, not the key, which cannot be pinned as one`,
        );
        assert.match(refused(`256 MD5:${md5} root@gpu-a.test (ED25519)`), /^ssh-keygen -l output/);
    });

    it("a bare body, without its type: the type it needs is named", () => {
        assert.strictEqual(
            refused(edBody),
            `a key's body without its type (${JSON.stringify(edBody.slice(0, 24) + "…")}): the line begins with the type, \`ssh-ed25519 AAAAC3Nz...\``,
        );
        assert.match(refused(`${TSA_KEY.split(" ")[1]} concourse-tsa`), /^a key's body without its type .*`ssh-rsa AAAAB3Nz\.\.\.`$/);
        assert.strictEqual(refused("gpu-a"), 'not a public key line ("gpu-a"): expected `<type> <base64 body> [comment]`');
    });

    it("a private key, in each form: named by its first line, and nothing of its body shown", () => {
        const openssh = generateOpensshKeyPair("root@gpu-a").privateKeyOpenssh;
        const pkcs1 = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
        const pkcs8 = crypto.generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
        const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "sec1", format: "pem" }).toString();
        for (const [key, header] of [
            [openssh, "-----BEGIN OPENSSH PRIVATE KEY-----"],
            [pkcs1, "-----BEGIN RSA PRIVATE KEY-----"],
            [pkcs8, "-----BEGIN PRIVATE KEY-----"],
            [ec, "-----BEGIN EC PRIVATE KEY-----"],
            ["PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\nAAAAIBadSecret\n", "PuTTY-User-Key-File-3"],
            // Pasted with the public line in front of it (the .pub and the key file together).
            [`${PUB.ed25519}${openssh}`, "-----BEGIN OPENSSH PRIVATE KEY-----"],
        ]) {
            for (const role of ["host", "tsa"] as const) {
                const problem = refused(key, role);
                assert.strictEqual(
                    problem,
                    `a private key (${header}; nothing more of it is shown): this field takes the public half only (a private key must never be put in the stack's config: if this one was committed or shared, treat it as exposed)`,
                );
                const secret = key.split("\n").filter((l) => l !== "" && !l.startsWith("-----") && !l.startsWith("PuTTY") && !l.startsWith("ssh-"));
                for (const line of secret) assert.ok(!problem.includes(line.slice(0, 12)), "a line of the private key is shown");
            }
        }
    });

    it("several keys: on several lines (ssh-keyscan's whole output), or one after another on one line", () => {
        assert.strictEqual(
            refused(`${PUB.ed25519}${PUB.rsa3072}`),
            "2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; `-t ed25519` picks one)",
        );
        const keyscan = [
            "# gpu-a:22 SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3",
            `gpu-a ${PUB.rsa3072.trim()}`,
            `gpu-a ${PUB.ecdsa256.trim()}`,
            `gpu-a ${HOST_KEY}`,
        ].join("\n");
        assert.match(refused(keyscan), /^3 keys on 4 lines: pin one key, not several/);
        assert.strictEqual(refused(`${HOST_KEY}\nnot a key`), '2 lines (the first: "ssh-ed25519 AAAAC3NzaC1l…"): expected one key on one line');
        assert.strictEqual(refused(`${HOST_KEY} ${TSA_KEY}`), "several keys on one line (a second ssh-rsa key after the first): pin one key, not several");
        assert.match(refused(`${PUB.ed25519.trim()} ${PUB.jumpEd25519.trim()}`), /^several keys on one line \(a second ssh-ed25519 key/);
    });

    it("the types refused: DSA, security keys, certificates, signature algorithms, an unknown word", () => {
        const dss = lineOf("ssh-dss", "ssh-dss", crypto.randomBytes(129), crypto.randomBytes(21), crypto.randomBytes(128), crypto.randomBytes(128));
        assert.strictEqual(refused(dss), "a DSA key (ssh-dss): OpenSSH refuses DSA keys by default (and 10.0 removed them), and so does this program");
        const sk = lineOf("sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519@openssh.com", fieldsOf(edBlob)[1], "ssh:");
        assert.strictEqual(
            refused(`${sk} user@laptop`),
            "a security-key (FIDO) key (sk-ssh-ed25519@openssh.com): such a key logs a user in, and no sshd serves one as its host key",
        );
        assert.match(refused(`sk-ecdsa-sha2-nistp256@openssh.com ${edBody}`), /^a security-key \(FIDO\) key/);
        assert.strictEqual(
            refused(`ssh-ed25519-cert-v01@openssh.com ${edBody} root@gpu-a`),
            "a certificate (ssh-ed25519-cert-v01@openssh.com), not a key: pin the key itself (the .pub beside the -cert.pub)",
        );
        assert.strictEqual(
            refused(`rsa-sha2-512 ${TSA_KEY.split(" ")[1]}`),
            "rsa-sha2-512 is a signature algorithm, not a key type: an RSA key's line begins ssh-rsa",
        );
        assert.match(
            refused(`ssh-ed448 ${edBody}`),
            /^an unknown key type "ssh-ed448": expected one of ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521, ssh-rsa/,
        );
    });

    it("a PEM or RFC 4716 public key: the command that prints the one-line form", () => {
        const pem = crypto.generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString();
        assert.match(
            refused(pem),
            /^a PEM public key \(-----BEGIN PUBLIC KEY-----\): expected OpenSSH's one-line form, which `ssh-keygen -i -m PKCS8 -f FILE` prints$/,
        );
        const rfc4716 = ["---- BEGIN SSH2 PUBLIC KEY ----", 'Comment: "root@gpu-a"', ...edBody.match(/.{1,70}/g)!, "---- END SSH2 PUBLIC KEY ----"].join("\n");
        assert.match(refused(rfc4716), /^an RFC 4716 public key .*`ssh-keygen -i -f FILE` prints$/);
    });

    it("a blob whose fields are wrong for its type: each field checked", () => {
        const [, edKey] = fieldsOf(edBlob);
        assert.strictEqual(refused(lineOf("ssh-ed25519", "ssh-ed25519", edKey.subarray(1))), "the ssh-ed25519 key is refused: its key is 31 bytes, not 32");
        const [, curve, point] = fieldsOf(blobOf(PUB.ecdsa256));
        assert.strictEqual(
            refused(lineOf("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", "nistp384", point)),
            'the ecdsa-sha2-nistp256 key is refused: its body names the curve "nistp384", not nistp256',
        );
        assert.match(
            refused(lineOf("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", curve, point.subarray(1))),
            /its point is not the 65 bytes of an uncompressed nistp256 point/,
        );
        const compressed = Buffer.concat([Buffer.from([2 + (point[64] & 1)]), point.subarray(1, 33)]);
        assert.match(refused(lineOf("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", curve, compressed)), /uncompressed nistp256 point/);
        const offCurve = Buffer.from(point);
        offCurve[64] ^= 1;
        assert.match(
            refused(lineOf("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256", curve, offCurve)),
            /^the ecdsa-sha2-nistp256 key is refused: it is no valid key \(/,
        );
        const [, e, n] = fieldsOf(blobOf(PUB.rsa3072));
        const rsa = (...fields: Buffer[]) => refused(lineOf("ssh-rsa", "ssh-rsa", ...fields));
        assert.strictEqual(
            rsa(e, n.subarray(0, 65)),
            "the ssh-rsa key is refused: its modulus is 512 bits: OpenSSH takes RSA keys of 1024 to 16384 bits, and so does this program",
        );
        assert.strictEqual(
            rsa(Buffer.concat([Buffer.from([0]), e]), n),
            "the ssh-rsa key is refused: its exponent has a needless leading zero byte (no canonical mpint)",
        );
        assert.strictEqual(rsa(e, n.subarray(1)), "the ssh-rsa key is refused: its modulus is negative");
        assert.strictEqual(rsa(Buffer.from([0x01, 0x00, 0x00]), n), "the ssh-rsa key is refused: its exponent is no odd number above 1");
        assert.strictEqual(rsa(Buffer.alloc(0), n), "the ssh-rsa key is refused: its exponent is zero");
        assert.match(rsa(e), /^the ssh-rsa key is refused: its body is cut short: the modulus's length wants 4 bytes and 0 are left/);
        assert.match(refused(lineOf("ssh-ed25519", "ssh-", edKey)), /its first field is no key type/);
    });

    it("a comment with a control character", () => {
        assert.strictEqual(refused(`${HOST_KEY} root@gpu-a\x1b[2J`), "the comment after the ssh-ed25519 key holds a control character");
        assert.strictEqual(refused(`${HOST_KEY} a\u2028b`), "the comment after the ssh-ed25519 key holds a control character");
    });

    it("the schema of a key field: the problem as the issue's message, never the value", () => {
        for (const role of ["host", "tsa"] as const) {
            const schema = sshPublicKeySchema(role);
            assert.strictEqual(schema.parse(PUB.rsa3072), PUB.rsa3072, "the value as given: it is parsed again where it is used");
            const secret = generateOpensshKeyPair("x").privateKeyOpenssh;
            const result = schema.safeParse(secret);
            assert.ok(!result.success);
            assert.strictEqual(result.error.issues.length, 1);
            assert.match(result.error.issues[0].message, /^a private key \(-----BEGIN OPENSSH PRIVATE KEY-----; nothing more of it is shown\)/);
            assert.ok(!JSON.stringify(result.error.issues).includes(secret.split("\n")[1].slice(0, 12)), "the issue holds the private key");
        }
    });
});

describe("key fields in the stack config: the rule at each path", () => {
    const two = () => stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU });
    type Ssh = { transport: { ssh: Record<string, unknown> } };

    it("a .pub line with its comment is taken for every key field, and the host key reaches the components as given", () => {
        const raw = two();
        (raw.hosts[1] as Ssh).transport.ssh.hostKey = PUB.ed25519;
        (raw.hosts[1] as Ssh).transport.ssh.proxy = { host: "bastion.example.test", privateKeySecret: "bastion-key", hostKey: PUB.jumpEd25519 };
        (raw.defaults as { concourse: Record<string, unknown> }).concourse.tsaPublicKey = PUB.rsa3072;
        assert.deepStrictEqual(problemsOf(raw), []);
        const [, b] = parseStackConfig(raw);
        const ssh = (b.transport as unknown as Ssh["transport"]).ssh as { hostKey: string; proxy: { hostKey: string } };
        assert.deepStrictEqual([ssh.hostKey, ssh.proxy.hostKey], [PUB.ed25519, PUB.jumpEd25519]);
    });

    it("each refused form names its path: the second host's key, a jump host's, the TSA's in defaults and on a host", () => {
        const raw = two();
        (raw.hosts[1] as Ssh).transport.ssh.hostKey = `gpu-b ${HOST_KEY}`;
        (raw.hosts[0] as Ssh).transport.ssh.proxy = { host: "bastion.example.test", privateKeySecret: "bastion-key", hostKey: PUB.ed25519.slice(0, 60) };
        (raw.defaults as { concourse: Record<string, unknown> }).concourse.tsaPublicKey = `ssh-rsa ${PUB.ed25519.split(" ")[1]}`;
        (raw.hosts[1] as Record<string, unknown>).concourse = { tsaPublicKey: generateOpensshKeyPair("tsa").privateKeyOpenssh };
        assert.deepStrictEqual(problemsOf(raw), [
            `defaults.concourse.tsaPublicKey: the ssh-rsa key is refused: the line says ssh-rsa, but its body is an ssh-ed25519 key: the type and the body come from different keys; ${SSH_KEY_PASTE.tsa}`,
            `hosts[0].transport.ssh.proxy.hostKey: the ssh-ed25519 key is refused: its body is cut short: the key wants 32 bytes and 17 are left (copied only in part?); ${SSH_KEY_PASTE.host}`,
            `hosts[1].transport.ssh.hostKey: a known_hosts line (the host names "gpu-b" before ssh-ed25519): the host names are no part of the key; ${SSH_KEY_PASTE.host}`,
            "hosts[1].concourse.tsaPublicKey: a private key (-----BEGIN OPENSSH PRIVATE KEY-----; nothing more of it is shown): this field takes the public half only " +
                `(a private key must never be put in the stack's config: if this one was committed or shared, treat it as exposed); ${SSH_KEY_PASTE.tsa}`,
        ]);
    });
});

describe("key fields on the components' args: refused before any host is dialled", function () {
    this.timeout(30_000);
    const inventory = inventorySchema.parse({ vendor: "none" });
    const ssh = (hostKey: unknown, proxy?: Record<string, unknown>) =>
        ({ ssh: { host: "10.0.0.5", privateKey: "k", hostKey, ...(proxy ? { proxy } : {}) } }) as never;
    const release = { url: "https://downloads.example.test/concourse.tgz", sha256: "0".repeat(64) };
    const fingerprint = `SHA256:${crypto.createHash("sha256").update(blobOf(HOST_KEY)).digest("base64").replace(/=+$/, "")}`;

    it("GpuWorker, GpuHost and ConcourseWeb name the field of a host key given as text, and of its jump host", () => {
        assert.throws(
            () => workerSpec("w", { transport: ssh(`w ${HOST_KEY}`), inventory }),
            (e: Error) =>
                e instanceof GpuWorkerArgsError &&
                e.message ===
                    `GpuWorker w: transport.ssh.hostKey: a known_hosts line (the host names "w" before ssh-ed25519): the host names are no part of the key; ${SSH_KEY_PASTE.host}`,
        );
        assert.throws(
            () => workerSpec("w", { transport: ssh(HOST_KEY, { host: "bastion.example.test", privateKey: "k", hostKey: fingerprint }), inventory }),
            (e: Error) => e.message.startsWith(`GpuWorker w: transport.ssh.proxy.hostKey: a fingerprint ("SHA256:`),
        );
        recordGraph();
        assert.throws(
            () => new GpuHost("h", { transport: ssh(""), inventory }),
            (e: Error) => e.message === `GpuHost h: transport.ssh.hostKey: empty; ${SSH_KEY_PASTE.host}`,
        );
        assert.throws(
            () => webSpec("ci", { transport: ssh(PUB.ed25519.split(" ")[1]), version: "8.2.5", binary: release }),
            (e: Error) => e.message.startsWith("ConcourseWeb ci: transport.ssh.hostKey: a key's body without its type"),
        );
    });

    it("GpuWorker names a TSA key given as text; the TSA's file is written by one function, for a key as text and as an output alike", () => {
        assert.throws(
            () =>
                workerSpec("w", {
                    transport: ssh(HOST_KEY),
                    inventory,
                    concourse: { tsaHost: "ci.example.test", tsaPublicKey: `${TSA_KEY}\n${HOST_KEY}`, binary: release },
                }),
            (e: Error) =>
                e.message ===
                `GpuWorker w: concourse.tsaPublicKey: 2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one); ${SSH_KEY_PASTE.tsa}`,
        );
        assert.throws(
            () => tsaPublicKeyFile(fingerprint),
            (e: Error) => e.message.startsWith("concourse worker: the TSA public key (tsaPublicKey): a fingerprint"),
        );
        assert.strictEqual(tsaPublicKeyFile(` ${PUB.rsa3072.split(" ").join("\t")}`), PUB.rsa3072, "one line, one space between the fields, the comment kept");
        const { settings } = workerSettings();
        assert.strictEqual(settings.tsaPublicKey, TSA_KEY);
        assert.throws(
            () => renderConcourseWorker({ ...settings, tsaPublicKey: HOST_KEY.split(" ")[1] }),
            /the TSA public key \(tsaPublicKey\): a key's body without its type/,
        );
    });

    it("a host key with its comment reaches the command transport as its type and body (Pulumi mocks)", async () => {
        const g = recordGraph();
        new GpuWorker("w", {
            transport: ssh(PUB.ed25519, { host: "bastion.example.test", privateKey: "k", hostKey: `\t${PUB.jumpEd25519}` }),
            inventory,
            hostSteps: "command",
        });
        await settle(g);
        const reaching = g.resources.filter((r) => r.type === "command:remote:Command");
        assert.ok(reaching.length > 0);
        for (const r of reaching) {
            const { value } = r.inputs.connection as { value: { hostKey: string; proxy: { hostKey: string } } };
            assert.deepStrictEqual([value.hostKey, value.proxy.hostKey], [HOST_KEY, JUMP_KEY], r.name);
        }
    });

    it("a host key given as an output is checked once known: the connection of remote commands, and runOverSsh, name the field", async () => {
        recordGraph();
        const target: SshTarget = { host: "10.0.0.5", port: 22, user: "root", privateKey: "unused", hostKey: `gpu-a ${HOST_KEY}` };
        const expected = `ssh: the host key of 10.0.0.5 (hostKey): a known_hosts line (the host names "gpu-a" before ssh-ed25519): the host names are no part of the key; ${SSH_KEY_PASTE.host}`;
        assert.strictEqual(sshTargetProblem(target), expected);
        await assert.rejects(
            (commandConnection(pulumi.output(target)) as unknown as { promise(): Promise<unknown> }).promise(),
            (e: Error) => e.message === expected,
        );
        await assert.rejects(runOverSsh(target, "true", "", 5), (e: Error) => e.message === expected);
        const jump = {
            ...target,
            hostKey: PUB.ed25519,
            proxy: { host: "bastion.example.test", port: 22, user: "root", privateKey: "unused", hostKey: "ssh-dss AAAAB3NzaC1kc3M=" },
        };
        assert.match(sshTargetProblem(jump)!, /^ssh: the jump host's host key of bastion\.example\.test \(proxy\.hostKey\): a DSA key \(ssh-dss\)/);
    });

    it("GpuHost checks a host key given as an output once it is known, naming the field (Pulumi mocks)", async () => {
        const g = recordGraph();
        const host = new GpuHost("h", { transport: ssh(pulumi.output(`h ${HOST_KEY}`)), inventory, hostSteps: "builtin" });
        await assert.rejects((host.connection as unknown as { promise(): Promise<unknown> }).promise(), (e: Error) =>
            e.message.startsWith('h: transport.ssh.hostKey: a known_hosts line (the host names "h" before ssh-ed25519)'),
        );
        await settle(g);
        const good = new GpuHost("g", { transport: ssh(pulumi.output(PUB.ed25519)), inventory, hostSteps: "builtin" });
        const connection = await (good.connection as unknown as { promise(): Promise<{ hostKey: string }> }).promise();
        assert.strictEqual(connection.hostKey, PUB.ed25519, "the key as given: the SSH client compares it by its type and blob");
    });

    it("ConcourseWorker used alone takes the TSA's .pub line as text (Pulumi mocks)", async () => {
        const g = recordGraph();
        const { terms } = workerSettings();
        new ConcourseWorker("solo-concourse", {
            connection: { host: "10.0.0.1", port: 22, user: "root", privateKey: "k", hostKey: PUB.ed25519 },
            ...terms,
            tsaPublicKey: PUB.rsa3072,
        });
        await settle(g);
        assert.strictEqual(g.placed("/etc/concourse/tsa_host_key.pub").content, PUB.rsa3072);
        recordGraph();
        assert.throws(
            () =>
                new ConcourseWorker("bad-concourse", {
                    connection: { host: "10.0.0.1", port: 22, user: "root", privateKey: "k", hostKey: HOST_KEY },
                    ...terms,
                    tsaPublicKey: `web ${TSA_KEY}`,
                }),
            /the TSA public key \(tsaPublicKey\): a known_hosts line/,
        );
    });
});

/** A worker's Concourse settings, as its plan has them (a stack fixture's host), and its terms as ConcourseWorker takes them alone. */
function workerSettings() {
    const [host] = parseStackConfig(stackWith({ name: "solo", inventory: NO_GPU }));
    const settings = linkOf(
        planHost(
            workerSpec(
                host.name,
                workerArgs(host, (k) => pulumi.secret(k), process.cwd()),
            ),
        ).links,
        "ConcourseWorker",
    )!.settings;
    const { containerdConfig: _ownConfig, wrapRunc, tsaPublicKey: _key, ...terms } = settings;
    return { settings, terms: { ...terms, wrapRunc: wrapRunc !== undefined } };
}
