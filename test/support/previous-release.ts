/**
 * Earlier releases built beside this checkout, so that a test or a bench can run both programs
 * on one machine: the migration e2e makes a stack with one and then runs `up` with this
 * checkout; bench:up --fleet converges with the previous release and this one, interleaved.
 * Built once per commit into the cache (the content of a commit never changes).
 */
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

/** The last commit whose host steps are HostCommands (a dynamic provider spawning OpenSSH). */
export const PREVIOUS_RELEASE = "a61cb5beed51a9b5206956ad6644ff976cef0481";

/** The last commit that placed each text file by a remote.Command of its own (before file sets). */
export const FILE_BY_FILE_RELEASE = "566e0635c8ce098c2d6f5837884bd4c134c430fa";

/** Where a built commit is kept. */
function cacheDir(commit: string): string {
    return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "gpu-workers", "releases", commit);
}

/** Points `dir`'s node_modules at this checkout's. */
function linkNodeModules(dir: string): void {
    const link = path.join(dir, "node_modules");
    fs.rmSync(link, { force: true });
    fs.symlinkSync(fs.realpathSync(path.join(PACKAGE_ROOT, "node_modules")), link);
}

/**
 * A checkout of `commit` with its dist/ built (its own wrapper and host scripts), using this
 * checkout's node_modules (the previous release needs no package this one lacks). Fails with
 * what to do when the repository does not have the commit (a shallow clone).
 */
export function previousRelease(commit: string = PREVIOUS_RELEASE): string {
    const dir = cacheDir(commit);
    if (fs.existsSync(path.join(dir, "dist", "index.js"))) {
        // The build is the commit's, but its node_modules is the checkout's that runs now: the one that built it may be gone.
        linkNodeModules(dir);
        return dir;
    }
    const has = spawnSync("git", ["-C", PACKAGE_ROOT, "cat-file", "-e", `${commit}^{commit}`], { stdio: "ignore" });
    if (has.status !== 0) {
        throw new Error(
            `the previous release ${commit} is not in this repository (${PACKAGE_ROOT}), which a shallow clone lacks: ` +
                `fetch it first (git fetch --unshallow, or git fetch origin ${commit})`,
        );
    }
    const building = `${dir}.building-${process.pid}`;
    fs.rmSync(building, { recursive: true, force: true });
    fs.mkdirSync(building, { recursive: true });
    try {
        execFileSync("bash", ["-c", 'git -C "$1" archive "$2" | tar -x -C "$3"', "bash", PACKAGE_ROOT, commit, building], {
            stdio: ["ignore", "ignore", "inherit"],
        });
        linkNodeModules(building);
        execFileSync("npm", ["run", "-s", "build"], { cwd: building, stdio: ["ignore", "ignore", "inherit"], timeout: 600_000 });
        fs.rmSync(dir, { recursive: true, force: true });
        fs.renameSync(building, dir);
    } catch (e) {
        fs.rmSync(building, { recursive: true, force: true });
        throw new Error(`could not build the previous release ${commit}: ${(e as Error).message}`, { cause: e });
    }
    return dir;
}
