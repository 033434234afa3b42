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
        sshString("none"), sshString("none"), sshString(""),
        uint32(1), sshString(publicBlob), sshString(secret),
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
