/**
 * What a refresh runs on a host to see whether what gpu-workers placed there is still there:
 * each file's sha256 (or only its presence, for secrets), and each step's own check. The shell
 * is host/drift-check.sh, which the HostDriftGuard's command carries (driftCheckCommand); this
 * writes its stdin, one line per thing to check. It prints one `drift: ...` line per difference
 * and nothing when the host is as converged.
 */
import { scriptCommand } from "../host/scripts";
import { asRoot } from "../host/steps";

export interface ExpectedFile {
    path: string;
    /** null: only presence is checked (secret content). */
    sha256: string | null;
}

/** The script that checks (host/drift-check.sh). */
export const DRIFT_CHECK_SCRIPT = "drift-check.sh";

/** The command that runs the check as root on a host reached as `login`; the lines of renderDriftCheck are its stdin. */
export function driftCheckCommand(login: string): string {
    return asRoot(login, scriptCommand(DRIFT_CHECK_SCRIPT, []));
}

/** One line of the script's input: a newline in it would make two. */
function line(words: string): string {
    if (words.includes("\n")) throw new Error(`drift check: ${JSON.stringify(words)} spans lines; the check reads one line per thing`);
    return `${words}\n`;
}

/** The check's stdin: `file SHA256|- PATH` per file, then `check COMMAND` per step check. */
export function renderDriftCheck(files: ExpectedFile[], checks: string[]): string {
    return [...files.map((f) => line(`file ${f.sha256 ?? "-"} ${f.path}`)), ...checks.map((check) => line(`check ${check}`))].join("");
}
