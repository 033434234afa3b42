/**
 * file-handle.c, built static for the tests: what a task holding CAP_DAC_READ_SEARCH could do
 * with any file of a filesystem one of its mounts comes from (open it by its handle).
 */
import { execFileSync } from "child_process";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { ensureCommands } from "./tools";

/** Builds the tool into `dir`; returns its path. */
export function buildFileHandleTool(dir: string): string {
    ensureCommands(["gcc"], ["gcc", "libc6-dev"]);
    const out = path.join(dir, "file-handle");
    execFileSync("gcc", ["-O2", "-static", "-Wall", "-o", out, path.join(PACKAGE_ROOT, "test", "support", "file-handle.c")], {
        stdio: ["ignore", "ignore", "inherit"],
    });
    return out;
}

/** PATH's handle as the tool's `open` takes it: "TYPE HEX". */
export function fileHandleOf(tool: string, file: string): string {
    return execFileSync(tool, ["name", file], { encoding: "utf8" }).trim();
}
