/**
 * Host scripts are real files in the package's host/ folder (shellcheck-clean, idempotent),
 * and that folder holds nothing else. A renderer that needs one places it on the host as a
 * HostFile under HOST_LIB_DIR and runs it from there, so the delete step can run it too,
 * long after this checkout has changed. The loader reads host/ and nothing else: a name is
 * a plain file name, never a path.
 */
import * as fs from "fs";
import * as path from "path";
import { HOST_LIB_DIR, HostFile, RenderedComponent, shellCommand } from "./steps";

/** The repo (or installed package) root: the first folder above this file with a package.json. */
function packageRoot(): string {
    let dir = __dirname;
    while (!fs.existsSync(path.join(dir, "package.json"))) {
        const parent = path.dirname(dir);
        if (parent === dir) throw new Error(`gpu-workers: cannot find the package root above ${__dirname}`);
        dir = parent;
    }
    return dir;
}

export const PACKAGE_ROOT = packageRoot();

/** The folder of everything the program places on target hosts. */
export const HOST_FILES_DIR = path.join(PACKAGE_ROOT, "host");

const cache = new Map<string, string>();

/** The text of host/<name>; `name` is a file name in that folder, nothing else. */
export function readHostScript(name: string): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name.includes("..")) {
        throw new Error(`host script ${JSON.stringify(name)}: expected a file name in host/ (no folders)`);
    }
    let text = cache.get(name);
    if (text === undefined) {
        const file = path.join(HOST_FILES_DIR, name);
        if (!fs.existsSync(file)) throw new Error(`host script ${name}: there is no ${file}`);
        text = fs.readFileSync(file, "utf8");
        cache.set(name, text);
    }
    return text;
}

/** Where host/<name> lives on a host. */
export function hostScriptPath(name: string): string {
    return `${HOST_LIB_DIR}/${name}`;
}

/** host/<name> as a file to place on the host. */
export function hostScriptFile(name: string): HostFile {
    return { path: hostScriptPath(name), mode: "0755", content: readHostScript(name) };
}

/**
 * host/<name> run with these arguments by the command itself: `bash -c '<the script>' <name>
 * args...`, which the remote login shell (of either transport) starts as any command line. The
 * records of placed files and of owners (placed-files.ts, owner-records.ts) and the drift check
 * run so: each command has the script of its own release, a host still gets one login per
 * command, and the command's stdin stays the data alone (a file set's files, a secret), so the
 * preview shows the data as before. The script holds no secret: a secret travels on the stdin,
 * never in an argument of a process.
 */
export function scriptCommand(name: string, args: string[]): string {
    return shellCommand(["bash", "-c", carriedScript(name), name, ...args]);
}

/** Each carried script, made once per run: every command of every host carries one. */
const carriedCache = new Map<string, string>();

/**
 * host/<name> as a command carries it: its comment lines and blank lines left out (they stay in
 * host/, where they are read). The engine keeps a command's text several times in each
 * resource's state, and writes the whole state after every step of a fleet: without them a
 * host's state is a sixth smaller. A carried script holds no here-document, whose lines would be data.
 */
export function carriedScript(name: string): string {
    let carried = carriedCache.get(name);
    if (carried === undefined) {
        const text = readHostScript(name);
        if (/<<-?\s*['"]?[A-Za-z_]/.test(text)) throw new Error(`host script ${name}: a command cannot carry a script with a here-document`);
        carried = `${text
            .split("\n")
            .filter((line) => !/^\s*(#.*)?$/.test(line))
            .join("\n")}\n`;
        carriedCache.set(name, carried);
    }
    return carried;
}

/**
 * The helper that records what a host had before a step changed it, and what the step installed
 * (host/ownership.sh): the scripts that install packages, start services or write files over
 * the host's run it from beside them.
 */
export const OWNERSHIP_SCRIPT = "ownership.sh";

/**
 * A step that runs host/<script> on the host: `<script> <action> args...` on create,
 * `<script> <removeAction> args...` on delete (default actions: ensure, remove). The script
 * file comes with it, and the host scripts it runs (`helpers`) beside it.
 */
export function scriptStep(step: {
    name: string;
    script: string;
    action?: string;
    removeAction?: string;
    args: string[];
    removeArgs?: string[];
    dependsOn?: string[];
    helpers?: string[];
}): RenderedComponent {
    const file = hostScriptFile(step.script);
    const helpers = (step.helpers ?? []).map(hostScriptFile);
    return {
        files: [file, ...helpers],
        steps: [
            {
                name: step.name,
                create: shellCommand([file.path, step.action ?? "ensure", ...step.args]),
                remove: shellCommand([file.path, step.removeAction ?? "remove", ...(step.removeArgs ?? step.args)]),
                dependsOn: [file.path, ...helpers.map((h) => h.path), ...(step.dependsOn ?? [])],
            },
        ],
    };
}

/** Concatenates rendered pieces in order. */
export function combine(...parts: RenderedComponent[]): RenderedComponent {
    const checks = parts.flatMap((p) => p.checks ?? []);
    return { files: parts.flatMap((p) => p.files), steps: parts.flatMap((p) => p.steps), ...(checks.length > 0 ? { checks } : {}) };
}
