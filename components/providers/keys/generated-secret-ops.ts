/** The GeneratedSecret provider's operations: a new value on create, kept for the resource's life. */
import { generateKeyPairSync, randomBytes, randomUUID } from "crypto";
import { publicKeyOfPrivateKey } from "./openssh";

export type GeneratedSecretKind = "password" | "rsa-private-key";

export interface GeneratedSecretInputs {
    kind: GeneratedSecretKind;
    /** The comment of an RSA key's public half. */
    comment?: string;
}

/** A password of 32 characters from [A-Za-z0-9_-] (192 bits), safe in env files and URLs. */
function password(): string {
    return randomBytes(24).toString("base64url");
}

/**
 * An RSA key in PEM (PKCS#1), the one form every key Concourse reads takes (its session signing
 * key, the TSA host key, a worker's key: jwt's ParseRSAPrivateKeyFromPEM), with its public half
 * as SSH writes it.
 */
function rsaPrivateKey(comment: string): { value: string; publicKeyOpenssh: string } {
    const value = generateKeyPairSync("rsa", { modulusLength: 3072 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    return { value, publicKeyOpenssh: `${publicKeyOfPrivateKey(value)} ${comment}` };
}

export async function create(inputs: GeneratedSecretInputs) {
    const made = inputs.kind === "password" ? { value: password(), publicKeyOpenssh: "" } : rsaPrivateKey(inputs.comment ?? "gpu-workers");
    return { id: randomUUID(), outs: { ...inputs, ...made } };
}

export async function diff(_id: string, olds: GeneratedSecretInputs, news: GeneratedSecretInputs) {
    const changed = olds.kind !== news.kind;
    return { changes: changed, replaces: changed ? ["kind"] : [] };
}
