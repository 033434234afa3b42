/**
 * ED25519 key pairs in OpenSSH's own formats: the "openssh-key-v1" private key that ssh,
 * sshd and Concourse read, and the one-line public key. Made with node's crypto; it stands
 * in for @pulumi/tls, whose provider plugin cannot be built from Go modules here.
 */
import * as crypto from "crypto";

export interface OpensshKeyPair {
    privateKeyOpenssh: string;
    publicKeyOpenssh: string;
}

function sshString(data: Buffer | string): Buffer {
    const body = typeof data === "string" ? Buffer.from(data) : data;
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    return Buffer.concat([len, body]);
}

function uint32(n: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
}

/** The raw 32-byte seed and public key of an ED25519 key object. */
function rawEd25519(privateKey: crypto.KeyObject): { seed: Buffer; pub: Buffer } {
    const jwk = privateKey.export({ format: "jwk" }) as { d: string; x: string };
    return { seed: Buffer.from(jwk.d, "base64url"), pub: Buffer.from(jwk.x, "base64url") };
}

export function encodeOpensshKeyPair(privateKey: crypto.KeyObject, comment = "gpu-workers"): OpensshKeyPair {
    const { seed, pub } = rawEd25519(privateKey);
    const publicBlob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
    const check = crypto.randomBytes(4);
    let secret = Buffer.concat([check, check, sshString("ssh-ed25519"), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(comment)]);
    const padding: number[] = [];
    for (let i = 1; (secret.length + padding.length) % 8 !== 0; i++) padding.push(i);
    secret = Buffer.concat([secret, Buffer.from(padding)]);
    const body = Buffer.concat([
        Buffer.from("openssh-key-v1\0"),
        sshString("none"),
        sshString("none"),
        sshString(""),
        uint32(1),
        sshString(publicBlob),
        sshString(secret),
    ]);
    const lines = body.toString("base64").match(/.{1,70}/g)!;
    return {
        privateKeyOpenssh: ["-----BEGIN OPENSSH PRIVATE KEY-----", ...lines, "-----END OPENSSH PRIVATE KEY-----", ""].join("\n"),
        publicKeyOpenssh: `ssh-ed25519 ${publicBlob.toString("base64")} ${comment}`,
    };
}

export function generateOpensshKeyPair(comment?: string): OpensshKeyPair {
    return encodeOpensshKeyPair(crypto.generateKeyPairSync("ed25519").privateKey, comment);
}

/** An unsigned big-endian integer as SSH's mpint: a leading zero byte when the top bit is set. */
function mpint(value: Buffer): Buffer {
    let v = value;
    while (v.length > 1 && v[0] === 0) v = v.subarray(1);
    return sshString(v[0] & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

const ECDSA_CURVES: Record<string, string> = { "P-256": "nistp256", "P-384": "nistp384", "P-521": "nistp521" };

/** The SSH public key of a PEM private key (PKCS#1 or PKCS#8: RSA, ED25519, ECDSA), as `concourse generate-key -t ssh` writes them. */
function publicKeyOfPem(pem: string): string {
    let key: crypto.KeyObject;
    try {
        key = crypto.createPublicKey(pem);
    } catch (e) {
        // `concourse generate-key -t ssh` labels a PKCS#1 RSA key "PRIVATE KEY" (PKCS#8's label); Go reads it either way.
        if (!/-----BEGIN PRIVATE KEY-----/.test(pem)) throw e;
        key = crypto.createPublicKey(pem.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, "-----$1 RSA PRIVATE KEY-----"));
    }
    const jwk = key.export({ format: "jwk" }) as Record<string, string>;
    const b = (s: string) => Buffer.from(s, "base64url");
    let blob: Buffer;
    if (jwk.kty === "RSA") blob = Buffer.concat([sshString("ssh-rsa"), mpint(b(jwk.e)), mpint(b(jwk.n))]);
    else if (jwk.kty === "OKP" && jwk.crv === "Ed25519") blob = Buffer.concat([sshString("ssh-ed25519"), sshString(b(jwk.x))]);
    else if (jwk.kty === "EC" && ECDSA_CURVES[jwk.crv]) {
        const curve = ECDSA_CURVES[jwk.crv];
        blob = Buffer.concat([sshString(`ecdsa-sha2-${curve}`), sshString(curve), sshString(Buffer.concat([Buffer.from([4]), b(jwk.x), b(jwk.y)]))]);
    } else throw new Error(`a ${jwk.kty}${jwk.crv ? ` ${jwk.crv}` : ""} key cannot serve SSH`);
    return `${blob.subarray(4, 4 + blob.readUInt32BE(0)).toString("latin1")} ${blob.toString("base64")}`;
}

/**
 * The one-line public key ("type base64") of a private key in OpenSSH's format (any type: it
 * keeps the public key in the clear ahead of the possibly encrypted private part) or in PEM.
 */
export function publicKeyOfPrivateKey(privateKey: string): string {
    if (privateKey.includes("-----BEGIN OPENSSH PRIVATE KEY-----")) return publicKeyOfOpensshFormat(privateKey);
    if (/-----BEGIN (RSA |EC )?PRIVATE KEY-----/.test(privateKey)) return publicKeyOfPem(privateKey);
    throw new Error("not a private key in OpenSSH or PEM format");
}

function publicKeyOfOpensshFormat(privateKeyOpenssh: string): string {
    const match = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(privateKeyOpenssh)!;
    const body = Buffer.from(match[1].replace(/\s+/g, ""), "base64");
    const magic = "openssh-key-v1\0";
    if (body.subarray(0, magic.length).toString("latin1") !== magic) throw new Error("not an openssh-key-v1 private key");
    let at = magic.length;
    const next = (): Buffer => {
        if (at + 4 > body.length) throw new Error("truncated OpenSSH private key");
        const len = body.readUInt32BE(at);
        const value = body.subarray(at + 4, at + 4 + len);
        if (value.length !== len) throw new Error("truncated OpenSSH private key");
        at += 4 + len;
        return value;
    };
    next();
    next();
    next(); // cipher, kdf, kdf options
    if (at + 4 > body.length || body.readUInt32BE(at) < 1) throw new Error("an OpenSSH private key with no key in it");
    at += 4;
    const blob = next();
    const type = blob.subarray(4, 4 + blob.readUInt32BE(0)).toString("latin1");
    return `${type} ${blob.toString("base64")}`;
}
