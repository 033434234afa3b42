/**
 * A test's scratch folder, named in a describe body (which must do nothing that can fail while
 * mocha loads the file) and made by the suite's before hook.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** A fresh name in the machine's temp folder; nothing is made. */
export function scratchName(prefix: string): string {
    return path.join(os.tmpdir(), `${prefix}${crypto.randomBytes(4).toString("hex")}`);
}

/** Makes the folder `dir` names (for a before hook); returns it. */
export function makeScratch(dir: string, mode = 0o700): string {
    fs.mkdirSync(dir, { mode });
    fs.chmodSync(dir, mode);
    return dir;
}
