/**
 * Real-tool tests need real programs. `ensureCommands` installs the Debian packages that
 * provide missing ones (as root, the way CI runs) and fails loudly when that is impossible:
 * a real-tool check is never skipped in silence.
 */
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";

export function hasCommand(command: string): boolean {
    return spawnSync("sh", ["-c", `command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]`, "sh", command]).status === 0;
}

/** Installs `packages` with apt-get when any of `commands` is missing; throws if it cannot. */
export function ensureCommands(commands: string[], packages: string[]): void {
    const missing = commands.filter((c) => !hasCommand(c));
    if (missing.length === 0) return;
    if (process.getuid?.() !== 0) {
        throw new Error(`missing ${missing.join(", ")}: install the Debian packages ${packages.join(" ")} (needs root)`);
    }
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const apt = (args: string[]) => execFileSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
    try {
        apt(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
    } catch {
        apt(["update", "-qq"]);
        apt(["install", "-y", "-qq", "--no-install-recommends", ...packages]);
    }
    const still = commands.filter((c) => !hasCommand(c));
    if (still.length > 0) throw new Error(`still missing after installing ${packages.join(" ")}: ${still.join(", ")}`);
}

/** The Go toolchain: go on PATH, else where Go's own installer puts it; `why` says what needs it. */
export function goBinary(why: string): string {
    const onPath = spawnSync("sh", ["-c", "command -v go"], { encoding: "utf8" }).stdout.trim();
    if (onPath) return onPath;
    if (fs.existsSync("/usr/local/go/bin/go")) return "/usr/local/go/bin/go";
    throw new Error(`Go is not installed (no go on PATH nor /usr/local/go/bin/go): ${why}`);
}
