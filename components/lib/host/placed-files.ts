/**
 * The shell that places files on a host and takes them back, with the path's records
 * (placedRecordDir: each resource a user of the path by its owner id, and what the host had
 * there before). Pure: providers/host/resources.ts hands these to remote commands.
 *
 * A component's plain text files go in one command (a file set): its stdin holds every file
 * under a readable header naming its path, mode, size and sha256, so `pulumi preview --diff` still
 * shows each file's content and names each file that changes; the host cuts each file out of it
 * by the size its header gives, and checks it by the sum.
 */
import { sha256Text } from "../file-hash";
import { HOST_STATE_DIR, HostFile, inFileSet, OWN_DIRS, pathSlug, placedRecordDir, shellCommand } from "./steps";

/** The folder of `path`. */
function folderOf(path: string): string {
    return path.replace(/\/[^/]+$/, "") || "/";
}

/** Exits non-zero unless `file` holds bytes of `sha256` (both shell words). */
function sha256Check(sha256: string, file: string): string {
    return `printf '%s  %s\\n' ${sha256} ${file} | sha256sum -c --quiet - >/dev/null`;
}

/**
 * Writes `path` atomically with `mode` from what `source` (a shell pipeline) prints: `cat`, the
 * command's stdin, by default. The temp file is private (umask 077) until its mode is set, so a
 * secret is never readable by others on the way, and it is removed when any step fails. With
 * `check` (a test of the temp file), bytes that fail it are never moved in place.
 */
export function writeFileCommand(file: HostFile, source = "cat", check?: (tmp: string) => string): string {
    const tmp = shellCommand([`${file.path}.gpu-workers.tmp`]);
    return (
        [
            `mkdir -p ${shellCommand([folderOf(file.path)])}`,
            `(umask 077 && ${source} > ${tmp})`,
            ...(check ? [check(tmp)] : []),
            `chmod ${file.mode} ${tmp}`,
            `mv -f ${tmp} ${shellCommand([file.path])}`,
        ].join(" && ") + ` || { rm -f ${tmp}; exit 1; }`
    );
}

/** `r`: the path's record (placedRecordDir), `p`: the path. */
function recordVariables(path: string): string {
    return `r=${shellCommand([placedRecordDir(path)])} p=${shellCommand([path])}`;
}

/**
 * Makes `user` (a resource's owner id; a component's name on hosts an earlier release placed) a user of the path before it writes there. The first user keeps
 * what is at the path aside (or notes that nothing is), so the last one puts it back; with
 * `adopt` (an update of a file an earlier version placed, which kept no record) what is there
 * is taken as the program's own. Each record is written before the file changes, so a run cut
 * short does it again and never keeps the program's own file as the host's.
 */
export function claimFileCommand(file: HostFile, user: string, adopt: boolean): string {
    const keep = adopt
        ? `: > "$r/absent"`
        : `if [ -e "$p" ] || [ -L "$p" ]; then cp -a "$p" "$r/original.tmp" && mv -f "$r/original.tmp" "$r/original"; else : > "$r/absent"; fi`;
    return `${recordVariables(file.path)}; mkdir -p "$r/users" && { [ -e "$r/original" ] || [ -L "$r/original" ] || [ -e "$r/absent" ] || ${keep}; } && : > "$r/users/"${shellCommand([pathSlug(user)])}`;
}

/**
 * `user` no longer places the file. The last user puts back what was at the path before (the
 * original, byte for byte, in one rename) or removes the file where nothing was; then the
 * record goes, and the file's folder when that is one of ours and now empty. Without a record
 * it does nothing: a step put the original back already (fabric-manager.sh restarts the
 * service that reads it).
 */
export function removeFileCommand(file: HostFile, user: string): string {
    const dir = folderOf(file.path);
    const record = placedRecordDir(file.path).slice(HOST_STATE_DIR.length + 1);
    return (
        `${recordVariables(file.path)}; rm -f "$r/users/"${shellCommand([pathSlug(user)])} && if rmdir "$r/users" 2>/dev/null || [ ! -e "$r/users" ]; then` +
        ` if [ -e "$r/original" ] || [ -L "$r/original" ]; then mkdir -p ${shellCommand([dir])} && mv -f "$r/original" "$p";` +
        ` elif [ -e "$r/absent" ]; then rm -f "$p"${OWN_DIRS.includes(dir) ? ` && { rmdir ${shellCommand([dir])} 2>/dev/null || true; }` : ""}; fi` +
        ` && rm -f "$r/absent" && { cd ${HOST_STATE_DIR} && rmdir -p --ignore-fail-on-non-empty ${shellCommand([record])} 2>/dev/null; cd / && rmdir ${HOST_STATE_DIR} 2>/dev/null || true; }; fi`
    );
}

/** Where a binary waits between its copy and its install: relative, so under the login user's home (sftp's and the command's folder), named by its sha256. */
export function stagingPath(sha256: string): string {
    return `.gpu-workers-staging/${sha256}`;
}

/**
 * Installs the staged copy of a binary at its path, atomically with its mode, after checking its
 * sha256 on the copy that is moved in place; then the staged copy goes. With no staged copy (an
 * update that changed only the mode) the file must already hold those bytes.
 */
export function installArtifactCommand(file: HostFile, sha256: string): string {
    const [staged, target] = [stagingPath(sha256), file.path].map((w) => shellCommand([w]));
    return (
        `if [ -f ${staged} ]; then` +
        ` { ${writeFileCommand(file, `cat ${staged}`, (tmp) => sha256Check(sha256, tmp))}; }` +
        ` && rm -f ${staged} && { rmdir ${shellCommand([folderOf(stagingPath(sha256))])} 2>/dev/null || true; };` +
        ` else { ${sha256Check(sha256, target)} && chmod ${file.mode} ${target}; } || { echo ${shellCommand([`${file.path}: no staged copy, and the file is not sha256 ${sha256}`])} >&2; exit 1; }; fi`
    );
}

/**
 * The line before each file of a set in its stdin: its path, mode, size and sha256. Any change of
 * a file changes its line, so the preview's diff of the stdin names every file that changes,
 * however deep in it the change is; the host reads the size and checks the sum from it.
 */
function setHeader(file: HostFile): string {
    return `==> ${file.path} (mode ${file.mode}, ${Buffer.byteLength(file.content)} bytes, sha256 ${sha256Text(file.content)}) <==`;
}

/** Lays out plain text files (no binary, secret or generated value: see inFileSet) as one stdin: each file under its header, its content exactly, then a newline. */
export function fileSetStdin(files: HostFile[]): string {
    return files
        .map((file) => {
            if (!inFileSet(file)) throw new Error(`${file.path}: only plain text files go in a file set`);
            return `${setHeader(file)}\n${file.content}\n`;
        })
        .join("");
}

/**
 * Shell function `next_file PATH`: reads the header at byte `$at` of the set's stdin (`$b`),
 * checks that it names PATH, and sets `$start`, `$n` and `$sum` to where its content lies, its
 * size and sha256, and `$at` past it. The command names no size or sum, so a changed file
 * changes only the stdin in the preview.
 */
const NEXT_FILE =
    `next_file() { h=$(tail -c +$((at + 1)) "$b" | head -n 1); case $h in "==> $1 (mode "*) ;; *) return 1;; esac;` +
    ` sum=\${h##*, sha256 }; sum=\${sum%") <=="}; n=\${h%", sha256 "*}; n=\${n##*, }; n=\${n%" bytes"};` +
    ` case $n in ''|*[!0-9]*) return 1;; esac; case $sum in ''|*[!0-9a-f]*) return 1;; esac;` +
    ` start=$((at + $(printf '%s\\n' "$h" | wc -c))); at=$((start + n + 1)); }`;

/**
 * Places every file of the set (in the order of fileSetStdin) as `user`: the stdin goes to a
 * private temp file first, then each file is claimed and written from its part. The same on
 * create and update: a set's paths never change (they are among its triggers, so other paths
 * make a new set, whose owner id differs, and the old one's delete lets go of the rest).
 */
export function placeFileSetCommand(files: HostFile[], user: string): string {
    const place = files.map((file) => {
        const path = shellCommand([file.path]);
        const found = `{ next_file ${path} || { echo ${shellCommand([`file set: the stdin does not hold ${file.path} where expected`])} >&2; exit 1; }; }`;
        // A file that already holds these bytes with this mode is left as it is (its inode too).
        const same = `{ ${sha256Check('"$sum"', path)} 2>/dev/null && [ "$(stat -c %a ${path})" = ${parseInt(file.mode, 8).toString(8)} ]; }`;
        const write = writeFileCommand(file, `tail -c +$((start + 1)) "$b" | head -c "$n"`, (tmp) => sha256Check('"$sum"', tmp));
        return `${found} && { ${claimFileCommand(file, user, false)} && { ${same} || { ${write}; }; }; }`;
    });
    return [`b=$(mktemp) && trap 'rm -f "$b"' EXIT && cat > "$b" && at=0 || exit 1`, NEXT_FILE, place.join(" &&\n")].join("\n");
}

/** `user` no longer places any file of the set. */
export function removeFileSetCommand(files: HostFile[], user: string): string {
    return files.map((file) => `{ ${removeFileCommand(file, user)}; }`).join(" &&\n");
}
