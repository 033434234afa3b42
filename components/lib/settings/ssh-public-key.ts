/**
 * The one grammar of an SSH public key as a setting takes it (a host's pinned `hostKey`, a jump
 * host's, the TSA's `tsaPublicKey`): OpenSSH's public key line, `<type> <base64> [comment]`, as
 * a `.pub` file holds it. The line is read by ssh2's own parser (`utils.parseKey`), and checked
 * more strictly than ssh2 and OpenSSH do:
 * - the base64 is canonical and whole (what decodes back to the same text), so a key cut short
 *   or changed in copying is refused here, not at `up`;
 * - the blob (RFC 4253's wire form) names the line's type, holds every field of that type and
 *   nothing after them: ssh-ed25519 a 32-byte key; ecdsa-sha2-nistpN its curve's name and an
 *   uncompressed point of that curve (OpenSSL checks it lies on the curve); ssh-rsa its exponent
 *   and modulus as canonical mpints, the modulus of 1024 to 16384 bits (OpenSSH's bounds);
 * - the types are the ones a host key or the TSA's key is: ssh-ed25519, ecdsa-sha2-nistp256,
 *   -384 and -521, and ssh-rsa (taken with SHA-2 signatures only, where it is pinned). Refused:
 *   ssh-dss (OpenSSH refuses DSA keys by default, and 10.0 removed them), the security-key
 *   types (sk-*: a FIDO key logs a user in; no sshd serves one as its host key), certificates
 *   (*-cert-v01@openssh.com: the pinned key is the host's own, not a certificate of it).
 *
 * Every other thing users paste for a key is named in the refusal, with what to paste instead: a
 * known_hosts line (hashed or not), an authorized_keys line with options, a fingerprint (as
 * ssh-keygen -l prints it, too), a bare base64 body, a PEM or RFC 4716 public key, several keys,
 * a private key (whose text no message shows). Pure.
 */
import * as crypto from "crypto";
import { utils } from "ssh2";
import { z } from "zod";

/** The key types taken, in the order messages name them. */
export const SSH_KEY_TYPES = ["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa"] as const;
export type SshKeyType = (typeof SSH_KEY_TYPES)[number];

/** A public key as a setting gave it, parsed and checked. */
export interface SshPublicKey {
    type: SshKeyType;
    /** The key's wire form (RFC 4253): what an SSH server presents, and what a pinned key is compared by. */
    blob: Buffer;
    /** The blob in base64, as the line wrote it (canonical). */
    body: string;
    /** The text after the body ("root@gpu-a"), where there is one. */
    comment?: string;
    /** The key's size in bits: 256 for ed25519, the curve's for ECDSA, the modulus's for RSA. */
    bits: number;
    /** "type body", as known_hosts and a pinned key take it. */
    pinned: string;
    /** "type body comment", one space between the fields. */
    line: string;
}

/** What a key field is, for the words of a refusal: a host's key (or a jump host's), or the TSA's. */
export type SshKeyRole = "host" | "tsa";

/** What to paste, by role: the end of every refusal. */
export const SSH_KEY_PASTE: Record<SshKeyRole, string> = {
    host:
        "paste the host's public key line as its .pub file holds it (the contents of /etc/ssh/ssh_host_ed25519_key.pub on the host), " +
        "or the key part of `ssh-keyscan -t ed25519 HOST` without the host name in front: `ssh-ed25519 AAAA...`",
    tsa:
        "paste the TSA's public key line as its .pub file holds it (`ssh-keygen -y -f tsa_host_key` prints it from the web's TSA host key; " +
        "ConcourseWeb's tsaPublicKey output is it), or the key part of `ssh-keyscan -p 2222 -t rsa WEB` without the host name in front: `ssh-rsa AAAA...`",
};

/** The message of a value that is no string at all (zod's "required" where it is absent). */
export const SSH_KEY_EXPECTED: Record<SshKeyRole, string> = {
    host: "expected a public host key such as 'ssh-ed25519 AAAA...'",
    tsa: "expected one public key on one line, such as 'ssh-rsa AAAA... comment'",
};

// The words of a key's type, as pasted: the ones taken and the families refused by name.
const TYPE_WORD = /^(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+|[a-z0-9-]+-cert-v0[01]@openssh\.com|rsa-sha2-(256|512)|x509v3-[a-z0-9-]+)$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const SHA_FINGERPRINT = /^(SHA1|SHA256|SHA384|SHA512):[A-Za-z0-9+/]{20,}={0,2}$/;
const MD5_FINGERPRINT = /^(MD5:)?[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){15}$/;
const PRIVATE_KEY = /-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----|^PuTTY-User-Key-File-[0-9]+:/m;
// Any control character but the tab: a line break would be a second key, the rest is no text a .pub holds.
// eslint-disable-next-line no-control-regex -- control characters are what this pattern finds
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/;

const CURVES: Record<string, { name: string; coordinate: number; bits: number }> = {
    "ecdsa-sha2-nistp256": { name: "nistp256", coordinate: 32, bits: 256 },
    "ecdsa-sha2-nistp384": { name: "nistp384", coordinate: 48, bits: 384 },
    "ecdsa-sha2-nistp521": { name: "nistp521", coordinate: 66, bits: 521 },
};
/** OpenSSH's bounds of an RSA modulus (SSH_RSA_MINIMUM_MODULUS_SIZE, SSHBUF_MAX_BIGNUM). */
export const RSA_BITS = { min: 1024, max: 16384 };

/** A value as a message shows it: quoted, and shortened past a few dozen characters. */
function shown(text: string, max = 24): string {
    return JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);
}

function isTaken(type: string): type is SshKeyType {
    return (SSH_KEY_TYPES as readonly string[]).includes(type);
}

/** Why a type word is refused, or undefined where it is taken. */
function typeProblem(type: string): string | undefined {
    if (isTaken(type)) return undefined;
    if (type === "ssh-dss") return "a DSA key (ssh-dss): OpenSSH refuses DSA keys by default (and 10.0 removed them), and so does this program";
    if (type.startsWith("sk-")) return `a security-key (FIDO) key (${type}): such a key logs a user in, and no sshd serves one as its host key`;
    if (/-cert-v0[01]@openssh\.com$/.test(type)) return `a certificate (${type}), not a key: pin the key itself (the .pub beside the -cert.pub)`;
    if (/^rsa-sha2-(256|512)$/.test(type)) return `${type} is a signature algorithm, not a key type: an RSA key's line begins ssh-rsa`;
    return `an unknown key type ${shown(type)}: expected one of ${SSH_KEY_TYPES.join(", ")}`;
}

/** A field of the blob that ran out: which, and how many bytes it wanted and found. */
class CutShort extends Error {
    constructor(
        readonly field: string,
        readonly wanted: number,
        readonly found: number,
    ) {
        super(field);
    }
}

/** Reads RFC 4251 strings off a blob, each naming its field. */
class WireReader {
    private at = 0;
    constructor(private readonly blob: Buffer) {}

    string(field: string): Buffer {
        if (this.at + 4 > this.blob.length) throw new CutShort(`${field}'s length`, 4, this.blob.length - this.at);
        const length = this.blob.readUInt32BE(this.at);
        const start = this.at + 4;
        if (start + length > this.blob.length) throw new CutShort(field, length, this.blob.length - start);
        this.at = start + length;
        return this.blob.subarray(start, this.at);
    }

    get left(): number {
        return this.blob.length - this.at;
    }
}

/** Why an mpint (RFC 4251) is no canonical positive integer, or undefined. */
function mpintProblem(value: Buffer, what: string): string | undefined {
    if (value.length === 0) return `its ${what} is zero`;
    if (value[0] & 0x80) return `its ${what} is negative`;
    if (value[0] === 0 && (value.length === 1 || !(value[1] & 0x80))) return `its ${what} has a needless leading zero byte (no canonical mpint)`;
    return undefined;
}

function bitLength(value: Buffer): number {
    const v = value[0] === 0 ? value.subarray(1) : value;
    return v.length === 0 ? 0 : (v.length - 1) * 8 + (32 - Math.clz32(v[0]));
}

/** The blob's own fields for `type` checked: the key's size in bits, or why the fields are wrong. */
function fieldsOf(type: SshKeyType, wire: WireReader): { bits: number } | { problem: string } {
    if (type === "ssh-ed25519") {
        const key = wire.string("key");
        return key.length === 32 ? { bits: 256 } : { problem: `its key is ${key.length} bytes, not 32` };
    }
    if (type === "ssh-rsa") {
        const e = wire.string("exponent");
        const n = wire.string("modulus");
        const problem = mpintProblem(e, "exponent") ?? mpintProblem(n, "modulus");
        if (problem) return { problem };
        if (!(e[e.length - 1] & 1) || bitLength(e) < 2) return { problem: "its exponent is no odd number above 1" };
        const bits = bitLength(n);
        if (bits < RSA_BITS.min || bits > RSA_BITS.max)
            return { problem: `its modulus is ${bits} bits: OpenSSH takes RSA keys of ${RSA_BITS.min} to ${RSA_BITS.max} bits, and so does this program` };
        return { bits };
    }
    const curve = CURVES[type];
    const name = wire.string("curve name").toString("latin1");
    if (name !== curve.name) return { problem: `its body names the curve ${shown(name)}, not ${curve.name}` };
    const point = wire.string("point");
    const length = 1 + 2 * curve.coordinate;
    if (point.length !== length || point[0] !== 4) return { problem: `its point is not the ${length} bytes of an uncompressed ${curve.name} point (04, x, y)` };
    return { bits: curve.bits };
}

/** The blob's key (line type `type`, taken), or why the blob is no whole key of that type. */
function blobProblem(type: SshKeyType, blob: Buffer): { bits: number } | { problem: string } {
    const wire = new WireReader(blob);
    try {
        const named = wire.string("type name").toString("latin1");
        if (named !== type) {
            if (!TYPE_WORD.test(named))
                return { problem: `its body holds no ${type} key (its first field is no key type): not a key's body, or cut short at its start?` };
            return { problem: `the line says ${type}, but its body is an ${named} key: the type and the body come from different keys` };
        }
        const fields = fieldsOf(type, wire);
        if ("problem" in fields) return fields;
        if (wire.left > 0) return { problem: `its body has ${wire.left} bytes after the key's last field: something was appended to it` };
        return fields;
    } catch (e) {
        if (!(e instanceof CutShort)) throw e;
        return { problem: `its body is cut short: the ${e.field} wants ${e.wanted} bytes and ${Math.max(e.found, 0)} are left (copied only in part?)` };
    }
}

/** What a single word that is no key type is, where it tells: a fingerprint, or a body without its type. */
function loneWordProblem(word: string): string | undefined {
    if (SHA_FINGERPRINT.test(word) || MD5_FINGERPRINT.test(word))
        return `a fingerprint (${shown(word, 16)}), not the key: a fingerprint names a key but cannot be pinned as one`;
    if (BASE64.test(word) && word.length >= 20) {
        const blob = Buffer.from(word, "base64");
        if (blob.length >= 4 && blob.readUInt32BE(0) <= 64 && 4 + blob.readUInt32BE(0) <= blob.length) {
            const named = blob.subarray(4, 4 + blob.readUInt32BE(0)).toString("latin1");
            if (TYPE_WORD.test(named))
                return `a key's body without its type (${shown(word)}): the line begins with the type, \`${named} ${word.slice(0, 8)}...\``;
        }
    }
    return undefined;
}

/** Why a line (one line, trimmed, not empty) is no public key line, or the key. */
function parseLine(line: string): { key: SshPublicKey } | { problem: string } {
    const words = line.split(/[ \t]+/);
    const [first, second] = words;
    if (!TYPE_WORD.test(first)) {
        if (/^[0-9]+$/.test(first) && second !== undefined && (SHA_FINGERPRINT.test(second) || MD5_FINGERPRINT.test(second)))
            return { problem: `ssh-keygen -l output (${shown(line, 20)}): a fingerprint, not the key, which cannot be pinned as one` };
        const lone = loneWordProblem(first);
        if (lone) return { problem: lone };
        if (first.startsWith("|1|"))
            return { problem: `a hashed known_hosts line (${shown(first, 12)} before the key): the hashed host name is no part of the key` };
        if (first === "@cert-authority" || first === "@revoked")
            return { problem: `a known_hosts line with its ${first} marker: ${first === "@revoked" ? "a revoked key" : "a CA's key"} is not the key to pin` };
        const typeAt = words.findIndex((w) => TYPE_WORD.test(w));
        if (typeAt > 0) {
            const before = words.slice(0, typeAt).join(" ");
            return /[="]/.test(before) || /^(no-|restrict$|cert-authority$)/.test(first)
                ? { problem: `an authorized_keys line (the options ${shown(before)} before ${words[typeAt]}): the options are no part of the key` }
                : { problem: `a known_hosts line (the host names ${shown(before)} before ${words[typeAt]}): the host names are no part of the key` };
        }
        return { problem: `not a public key line (${shown(line)}): expected \`<type> <base64 body> [comment]\`` };
    }
    const refused = typeProblem(first);
    if (refused) return { problem: refused };
    const type = first as SshKeyType;
    if (second === undefined) return { problem: `${type} with no key body after it` };
    if (!BASE64.test(second)) return { problem: `the body of the ${type} key (${shown(second)}) holds characters that are not base64` };
    const blob = Buffer.from(second, "base64");
    if (blob.toString("base64") !== second)
        return { problem: `the body of the ${type} key (${second.length} characters) is not whole base64: cut short, or changed when copied?` };
    const fields = blobProblem(type, blob);
    if ("problem" in fields) return { problem: `the ${type} key is refused: ${fields.problem}` };
    const comment = line.slice(line.indexOf(second, first.length) + second.length).replace(/^[ \t]+/, "");
    const again = comment.split(/[ \t]+/).findIndex((w, i, all) => TYPE_WORD.test(w) && /^AAAA/.test(all[i + 1] ?? ""));
    if (again >= 0) return { problem: `several keys on one line (a second ${comment.split(/[ \t]+/)[again]} key after the first): pin one key, not several` };
    if (CONTROL.test(comment)) return { problem: `the comment after the ${type} key holds a control character` };
    // ssh2's reading of the same key must agree, and OpenSSL must take the key it makes of it (an ECDSA point off its curve, say).
    const pinned = `${type} ${second}`;
    const parsed = utils.parseKey(pinned);
    if (parsed instanceof Error) return { problem: `the ${type} key is refused: ${parsed.message}` };
    if (parsed.type !== type || !parsed.getPublicSSH().equals(blob)) return { problem: `the ${type} key is refused: ssh2 reads it as another key` };
    try {
        crypto.createPublicKey(parsed.getPublicPEM());
    } catch (e) {
        return { problem: `the ${type} key is refused: it is no valid key (${(e as Error).message})` };
    }
    return { key: { type, blob, body: second, ...(comment ? { comment } : {}), bits: fields.bits, pinned, line: comment ? `${pinned} ${comment}` : pinned } };
}

/** What a multi-line value holds, in words: N keys, or N lines. */
function linesProblem(lines: string[]): string {
    const keys = lines.filter((l) => "key" in parseLine(l) || / (ssh-|ecdsa-sha2-)[a-z0-9-]+[ \t]+AAAA/.test(` ${l}`)).length;
    if (keys > 1) return `${keys} keys on ${lines.length} lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one)`;
    return `${lines.length} lines (the first: ${shown(lines[0])}): expected one key on one line`;
}

/**
 * The key of a public key line (a `.pub` file's contents, white space around it and between its
 * fields taken), or why it is none: the problem names what was given (shortened; nothing of a
 * private key) and ends with what to paste instead, for a key of `role`.
 */
export function parseSshPublicKey(text: string, role: SshKeyRole = "host"): { key: SshPublicKey } | { problem: string } {
    const refused = (problem: string) => ({ problem: `${problem}; ${SSH_KEY_PASTE[role]}` });
    const given = text.trim();
    if (given === "") return refused("empty");
    if (PRIVATE_KEY.test(given)) {
        const header = PRIVATE_KEY.exec(given)![0].replace(/:$/, "");
        return refused(
            `a private key (${header}; nothing more of it is shown): this field takes the public half only ` +
                "(a private key must never be put in the stack's config: if this one was committed or shared, treat it as exposed)",
        );
    }
    if (/^-----BEGIN [A-Z ]*PUBLIC KEY-----/.test(given))
        return refused("a PEM public key (-----BEGIN PUBLIC KEY-----): expected OpenSSH's one-line form, which `ssh-keygen -i -m PKCS8 -f FILE` prints");
    if (/^---- BEGIN SSH2 PUBLIC KEY ----/.test(given))
        return refused("an RFC 4716 public key (---- BEGIN SSH2 PUBLIC KEY ----): expected OpenSSH's one-line form, which `ssh-keygen -i -f FILE` prints");
    const lines = given
        .split(/\r?\n|\r/)
        .map((l) => l.trim())
        .filter((l) => l !== "");
    if (lines.length > 1) return refused(linesProblem(lines));
    const parsed = parseLine(lines[0]);
    return "problem" in parsed ? refused(parsed.problem) : parsed;
}

/** Why `text` is no public key line for a key of `role`, or undefined. */
export function sshPublicKeyProblem(text: string, role: SshKeyRole = "host"): string | undefined {
    const parsed = parseSshPublicKey(text, role);
    return "problem" in parsed ? parsed.problem : undefined;
}

/** The key of `text`; throws an Error whose message is `what: problem` where it is none. */
export function sshPublicKey(text: string, what: string, role: SshKeyRole = "host"): SshPublicKey {
    const parsed = parseSshPublicKey(text, role);
    if ("problem" in parsed) throw new Error(`${what}: ${parsed.problem}`);
    return parsed.key;
}

/** Whether a key an SSH server presents (its wire form) is the pinned one: by type and blob, never by the line's text. */
export function isPinnedKey(pinned: SshPublicKey, presented: Buffer): boolean {
    return pinned.blob.equals(presented);
}

/** A key field of a schema: a string that is one public key line of `role` (the zod issue carries the problem, never the value). */
export function sshPublicKeySchema(role: SshKeyRole) {
    return z.string({ error: SSH_KEY_EXPECTED[role] }).superRefine((text, ctx) => {
        const problem = sshPublicKeyProblem(text, role);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
    });
}
