/**
 * The commands that place files on a host and take them back, with the path's records
 * (each resource a user of the path by its owner id, and what the host had there before). The
 * shell is host/placed-files.sh, which each command carries and runs (scriptCommand); this gives
 * it the arguments and the data. Pure: providers/host/resources.ts hands these to remote commands.
 *
 * A component's files go in one command per kind of folder (a file set): its stdin holds every
 * text file under a readable header naming its path, mode, size and sha256, so
 * `pulumi preview --diff` still shows each file's content and names each file that changes; the
 * host cuts each file out of it by the size its header gives, and checks it by the sum. A
 * binary's header names its sha256 alone: its bytes were copied to a staging path beforehand.
 */
import { sha256Text } from "../file-hash";
import { scriptCommand } from "./scripts";
import { asRoot, HOST_STATE_DIR, HostFile, inFileSet, OWN_DIRS, pathSlug } from "./steps";

/** The script that places and releases files (host/placed-files.sh). */
export const PLACED_FILES_SCRIPT = "placed-files.sh";

/** The folder of `path`. */
function folderOf(path: string): string {
    return path.replace(/\/[^/]+$/, "") || "/";
}

/** `own` where the file's folder is one of the program's own (OWN_DIRS), which goes once its last file has; `other` elsewhere. */
function folderKind(path: string): "own" | "other" {
    return OWN_DIRS.includes(folderOf(path)) ? "own" : "other";
}

/** Where binaries wait between their copy and their install: relative, so under the login user's home (sftp's and the command's folder). */
const STAGING_DIR = ".gpu-workers-staging";

/** Where a binary waits between its copy and its install, named by its sha256. */
export function stagingPath(sha256: string): string {
    return `${STAGING_DIR}/${sha256}`;
}

/** The mode as `stat -c %a` prints it (and chmod takes it): "0644" is 644. */
function statMode(mode: string): string {
    return parseInt(mode, 8).toString(8);
}

/**
 * Writes one file (a secret or generated value: a set would show it) as `user` (a resource's owner
 * id) from the command's stdin (the file's content alone), as root on a host reached as `login`.
 * The first user keeps what is at the path aside, or notes that nothing is; with `adopt` (an
 * update of a file an earlier version placed, which kept no record) what is there is taken as
 * the program's own.
 */
export function writeFileCommand(file: HostFile, user: string, adopt: boolean, login: string): string {
    return asRoot(login, scriptCommand(PLACED_FILES_SCRIPT, ["write", HOST_STATE_DIR, pathSlug(user), file.path, file.mode, adopt ? "adopt" : "keep"]));
}

/**
 * `user` no longer places any of the files (as root on a host reached as `login`): the last user puts back what was at each path (byte
 * for byte, in one rename) or removes the file where nothing was, and its folder where that is
 * one of ours and now empty; then the record goes. Without a record it does nothing (a step put
 * the original back already: fabric-manager.sh restarts the service that reads it). It reads no
 * stdin: a delete may run with an empty one.
 */
export function removeFilesCommand(files: HostFile[], user: string, login: string): string {
    return asRoot(
        login,
        scriptCommand(PLACED_FILES_SCRIPT, ["release", HOST_STATE_DIR, pathSlug(user), ...files.flatMap((f) => [f.path, folderKind(f.path)])]),
    );
}

/**
 * The line before each file of a set in its stdin: its path, mode, size and sha256; a binary has
 * `staged copy` for its size and no content here (its bytes wait at stagingPath). Any change of a
 * file changes its line, so the preview's diff of the stdin names every file that changes, however
 * deep in it the change is; the host reads the size and checks the sum from it.
 */
function setHeader(file: HostFile): string {
    const [size, sha256] = file.artifact ? ["staged copy", file.artifact.sha256] : [`${Buffer.byteLength(file.content)} bytes`, sha256Text(file.content)];
    return `==> ${file.path} (mode ${file.mode}, ${size}, sha256 ${sha256}) <==`;
}

/**
 * The stdin of placeFileSetCommand, the set's files alone (no secret or generated value: see
 * inFileSet): each file under its header, a text file's content exactly, then a newline.
 */
export function fileSetStdin(files: HostFile[]): string {
    return files
        .map((file) => {
            if (!inFileSet(file)) throw new Error(`${file.path}: a secret or generated file does not go in a file set`);
            return file.artifact ? `${setHeader(file)}\n` : `${setHeader(file)}\n${file.content}\n`;
        })
        .join("");
}

/**
 * Places every file of the set (in the order of fileSetStdin) as `user`, as root on a host reached as `login`: every file's bytes are
 * verified as the stdin is read, then each file is claimed and written from its part (a binary
 * from its staged copy), and left alone where it holds those bytes with that mode already. The
 * command names paths and modes, no size or sum, so a changed file changes only the stdin. The
 * same on create and update: a set's paths never change (they are among its triggers, so other
 * paths make a new set, whose owner id differs, and the old one's delete lets go of the rest).
 */
export function placeFileSetCommand(files: HostFile[], user: string, login: string): string {
    const kindPathModes = files.flatMap((f) => [f.artifact ? "binary" : "text", f.path, statMode(f.mode)]);
    return asRoot(login, scriptCommand(PLACED_FILES_SCRIPT, ["place", HOST_STATE_DIR, STAGING_DIR, pathSlug(user), ...kindPathModes]));
}
