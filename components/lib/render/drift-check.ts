/**
 * The script a refresh runs on a host to see whether what gpu-workers placed there is still
 * there: each file's sha256 (or only its presence, for secrets), and each step's own check.
 * It prints one `drift: ...` line per difference and nothing when the host is as converged.
 */
import { shellCommand } from "../host/steps";

export interface ExpectedFile {
    path: string;
    /** null: only presence is checked (secret content). */
    sha256: string | null;
}

export function renderDriftCheck(files: ExpectedFile[], checks: string[]): string {
    // Paths are data: a `$(...)` inside a single-quoted path is meant literally.
    const lines = ["# shellcheck disable=SC2016", "set -u"];
    for (const f of files) {
        const p = shellCommand([f.path]);
        if (f.sha256 === null) {
            lines.push(`[ -e ${p} ] || echo ${shellCommand([`drift: ${f.path} is missing`])}`);
        } else {
            lines.push(
                `if [ ! -e ${p} ]; then echo ${shellCommand([`drift: ${f.path} is missing`])}; ` +
                    `elif [ "$(sha256sum < ${p} | cut -d' ' -f1)" != ${f.sha256} ]; then echo ${shellCommand([`drift: ${f.path} was changed`])}; fi`,
            );
        }
    }
    for (const check of checks) {
        lines.push(`out=$(${check} 2>&1) || echo "drift: $(printf '%s' "$out" | tail -n 1)"`);
    }
    lines.push("exit 0");
    return lines.join("\n") + "\n";
}
