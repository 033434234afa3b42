/** sha256 of text, for the checksums that steps, previews and drift checks carry (files are hashed where the program starts: components/chain/artifacts.ts). */
import * as crypto from "crypto";

export function sha256Text(text: string | Buffer): string {
    return crypto.createHash("sha256").update(text).digest("hex");
}
