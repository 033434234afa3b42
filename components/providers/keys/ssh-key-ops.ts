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

export async function diff(_id: string, olds: { comment: string }, news: { comment: string }) {
    const changed = olds.comment !== news.comment;
    return { changes: changed, replaces: changed ? ["comment"] : [] };
}
