/** The SshKeyPair provider's operations: a new key on create, kept for the resource's life. */
import { createHash } from "crypto";
import { generateOpensshKeyPair } from "./openssh";

export async function create(inputs: { comment: string }) {
    const pair = generateOpensshKeyPair(inputs.comment);
    // OpenSSH's own fingerprint form: SHA256 of the key blob, base64 without padding.
    const blob = Buffer.from(pair.publicKeyOpenssh.split(" ")[1], "base64");
    const id = `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
    return { id, outs: { ...inputs, ...pair } };
}

/**
 * Nothing replaces the key: its comment is a label (it names the component, so a host renamed in
 * the stack would otherwise get a new login key, and every step would run again over it).
 */
export async function diff() {
    return { changes: false };
}
