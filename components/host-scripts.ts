/**
 * Host scripts are real files in scripts/ (shellcheck-clean, idempotent). A renderer that
 * needs one places it on the host as a HostFile under HOST_LIB_DIR and runs it from there,
 * so the delete step can run it too, long after this checkout has changed.
 */
import * as fs from "fs";
import * as path from "path";
import { HOST_LIB_DIR, HostFile, RenderedComponent, shellCommand } from "./host-steps";

/** The repo (or installed package) root: this file is components/ or dist/components/. */
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

const cache = new Map<string, string>();

/** The text of scripts/<name>. */
export function readHostScript(name: string): string {
    let text = cache.get(name);
    if (text === undefined) {
        text = fs.readFileSync(path.join(PACKAGE_ROOT, "scripts", name), "utf8");
        cache.set(name, text);
    }
    return text;
}

/** Where scripts/<name> lives on a host. */
export function hostScriptPath(name: string): string {
    return `${HOST_LIB_DIR}/${name}`;
}

/** scripts/<name> as a file to place on the host. */
export function hostScriptFile(name: string): HostFile {
    return { path: hostScriptPath(name), mode: "0755", content: readHostScript(name) };
}

/**
 * A step that runs scripts/<script> on the host: `<script> <action> args...` on create,
 * `<script> remove args...` on delete. The script file comes with it.
 */
export function scriptStep(step: { name: string; script: string; action?: string; args: string[]; removeArgs?: string[]; dependsOn?: string[] }): RenderedComponent {
    const file = hostScriptFile(step.script);
    return {
        files: [file],
        steps: [{
            name: step.name,
            create: shellCommand([file.path, step.action ?? "ensure", ...step.args]),
            remove: shellCommand([file.path, "remove", ...(step.removeArgs ?? step.args)]),
            dependsOn: [file.path, ...(step.dependsOn ?? [])],
        }],
    };
}

/** Concatenates rendered pieces in order. */
export function combine(...parts: RenderedComponent[]): RenderedComponent {
    return { files: parts.flatMap((p) => p.files), steps: parts.flatMap((p) => p.steps) };
}
