/** The GeneratedSecret provider's operations: a new value on create, kept for the resource's life. */
import { generateKeyPairSync, randomBytes, randomUUID } from "crypto";
import { publicKeyOfPrivateKey } from "./openssh";

export type GeneratedSecretKind = "password" | "rsa-private-key";

export interface GeneratedSecretInputs {
    kind: GeneratedSecretKind;
    /** The comment of an RSA key's public half. */
    comment?: string;
}

const PASSWORD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const PASSWORD_LENGTH = 32;

/**
 * A password of 32 letters and digits (190 bits), safe in env files, URLs and on a command line:
 * one that began with `-` was read as an option by `fly login -p`. Bytes at or above the
 * alphabet's largest multiple below 256 are drawn again, so every character is equally likely.
 */
export function password(): string {
    const limit = 256 - (256 % PASSWORD_ALPHABET.length);
    let made = "";
    while (made.length < PASSWORD_LENGTH) {
        for (const byte of randomBytes(PASSWORD_LENGTH)) {
            if (byte < limit && made.length < PASSWORD_LENGTH) made += PASSWORD_ALPHABET[byte % PASSWORD_ALPHABET.length];
        }
    }
    return made;
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
