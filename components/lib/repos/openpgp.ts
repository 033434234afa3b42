/**
 * Just enough OpenPGP (RFC 4880) to check a shipped repository key: un-armor it and compute
 * the v4 fingerprints of its primary key and subkeys, so the program can refuse a key file
 * that is not the one whose fingerprint the vendor publishes. Pure; no signature checking
 * (apt's gpgv does that on the host).
 */
import { createHash } from "crypto";

export class OpenPgpError extends Error {}

/** CRC-24 of RFC 4880 section 6.1 (armor checksum). */
function crc24(data: Buffer): number {
    let crc = 0xb704ce;
    for (const byte of data) {
        crc ^= byte << 16;
        for (let i = 0; i < 8; i++) {
            crc <<= 1;
            if (crc & 0x1000000) crc ^= 0x1864cfb;
        }
    }
    return crc & 0xffffff;
}

/** The binary packets of an ASCII-armored public key block; the checksum line is verified. */
export function dearmor(text: string): Buffer {
    const lines = text.replace(/\r/g, "").split("\n");
    const begin = lines.findIndex((l) => l.trim() === "-----BEGIN PGP PUBLIC KEY BLOCK-----");
    const end = lines.findIndex((l) => l.trim() === "-----END PGP PUBLIC KEY BLOCK-----");
    if (begin < 0 || end < begin) throw new OpenPgpError("expected an ASCII-armored PGP PUBLIC KEY BLOCK");
    let i = begin + 1;
    while (i < end && lines[i].trim() !== "") i++; // armor headers end at the first blank line
    const body = lines
        .slice(i + 1, end)
        .map((l) => l.trim())
        .filter((l) => l !== "");
    const checksum = body.length > 0 && body[body.length - 1].startsWith("=") ? body.pop()!.slice(1) : undefined;
    const data = Buffer.from(body.join(""), "base64");
    if (checksum !== undefined) {
        const expected = Buffer.from(checksum, "base64").readUIntBE(0, 3);
        if (crc24(data) !== expected) throw new OpenPgpError("the armor checksum does not match: the key file is damaged");
    }
    return data;
}

export interface PgpPacket {
    tag: number;
    body: Buffer;
}

/** Splits binary OpenPGP data into packets (old and new packet formats). */
export function packets(data: Buffer): PgpPacket[] {
    const out: PgpPacket[] = [];
    let pos = 0;
    while (pos < data.length) {
        const header = data[pos++];
        if ((header & 0x80) === 0) throw new OpenPgpError(`not an OpenPGP packet at byte ${pos - 1}`);
        let tag: number;
        let length: number;
        if (header & 0x40) {
            tag = header & 0x3f;
            const first = data[pos++];
            if (first < 192) length = first;
            else if (first < 224) length = ((first - 192) << 8) + data[pos++] + 192;
            else if (first === 255) {
                length = data.readUInt32BE(pos);
                pos += 4;
            } else throw new OpenPgpError("partial body lengths do not occur in key blocks");
        } else {
            tag = (header >> 2) & 0x0f;
            const type = header & 0x03;
            if (type === 0) length = data[pos++];
            else if (type === 1) {
                length = data.readUInt16BE(pos);
                pos += 2;
            } else if (type === 2) {
                length = data.readUInt32BE(pos);
                pos += 4;
            } else throw new OpenPgpError("indeterminate packet lengths do not occur in key blocks");
        }
        if (pos + length > data.length) throw new OpenPgpError("a packet runs past the end of the key block");
        out.push({ tag, body: data.subarray(pos, pos + length) });
        pos += length;
    }
    return out;
}

/** v4 fingerprint: SHA-1 over 0x99, the two-byte length and the key packet's body. */
function v4Fingerprint(body: Buffer): string {
    if (body[0] !== 4) throw new OpenPgpError(`key packet version ${body[0]}: only version 4 keys are supported`);
    const prefix = Buffer.from([0x99, (body.length >> 8) & 0xff, body.length & 0xff]);
    return createHash("sha1").update(prefix).update(body).digest("hex").toUpperCase();
}

export interface KeyFingerprints {
    /** The primary key's fingerprint (40 hex digits, upper case). */
    primary: string;
    subkeys: string[];
}

/** Fingerprints of the (single) key in an armored public key block. */
export function keyFingerprints(armored: string): KeyFingerprints {
    const all = packets(dearmor(armored));
    const primaries = all.filter((p) => p.tag === 6);
    if (primaries.length !== 1) throw new OpenPgpError(`expected exactly one public key in the block, found ${primaries.length}`);
    return { primary: v4Fingerprint(primaries[0].body), subkeys: all.filter((p) => p.tag === 14).map((p) => v4Fingerprint(p.body)) };
}

/** "C95B 321B ..." or "c95b321b..." -> "C95B321B...". */
export function normalizeFingerprint(fingerprint: string): string {
    return fingerprint.replace(/\s+/g, "").toUpperCase();
}
