/** The SshKeyPair provider's operations: a new key on create, kept for the resource's life. */
import { generateOpensshKeyPair } from "./openssh";

export async function create(inputs: { comment: string }) {
    const pair = generateOpensshKeyPair(inputs.comment);
    return { id: pair.publicKeyOpenssh.split(" ")[1].slice(0, 16), outs: { ...inputs, ...pair } };
}

export async function diff(_id: string, olds: { comment: string }, news: { comment: string }) {
    const changed = olds.comment !== news.comment;
    return { changes: changed, replaces: changed ? ["comment"] : [] };
}
