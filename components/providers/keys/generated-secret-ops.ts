/** The GeneratedSecret provider's operations: a new value on create, kept for the resource's life. */
import { generateKeyPair, randomBytes, randomUUID } from "crypto";
import { promisify } from "util";
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

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * An RSA key in PEM (PKCS#1), the one form every key Concourse reads takes (its session signing
 * key, the TSA host key, a worker's key: jwt's ParseRSAPrivateKeyFromPEM), with its public half
 * as SSH writes it. Made on libuv's thread pool: a 3072-bit key is 0.3 to 0.5 s of CPU here, and
 * the one dynamic provider process serves every host's checks meanwhile (made in turn on its
 * event loop, a fleet's keys would hold those back for as many times that).
 */
async function rsaPrivateKey(comment: string): Promise<{ value: string; publicKeyOpenssh: string }> {
    const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: 3072 });
    const value = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    return { value, publicKeyOpenssh: `${publicKeyOfPrivateKey(value)} ${comment}` };
}

export async function create(inputs: GeneratedSecretInputs) {
    const made = inputs.kind === "password" ? { value: password(), publicKeyOpenssh: "" } : await rsaPrivateKey(inputs.comment ?? "gpu-workers");
    return { id: randomUUID(), outs: { ...inputs, ...made } };
}

export async function diff(_id: string, olds: GeneratedSecretInputs, news: GeneratedSecretInputs) {
    const changed = olds.kind !== news.kind;
    return { changes: changed, replaces: changed ? ["kind"] : [] };
}
