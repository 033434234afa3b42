/** sha256 of local files and text, for the checksums that steps, previews and drift checks carry. */
import * as crypto from "crypto";
import * as fs from "fs";

const fileSums = new Map<string, string>();

export function sha256Text(text: string | Buffer): string {
    return crypto.createHash("sha256").update(text).digest("hex");
}

/** The file's sha256, read once per program run (artifacts do not change under us). */
export function sha256File(path: string): string {
    let sum = fileSums.get(path);
    if (sum === undefined) {
        sum = sha256Text(fs.readFileSync(path));
        fileSums.set(path, sum);
    }
    return sum;
}
