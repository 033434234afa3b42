/**
 * The shell that places files on a host and takes them back, with the path's records
 * (placedRecordDir: each resource a user of the path by its owner id, and what the host had
 * there before). Pure: providers/host/resources.ts hands these to remote commands.
 *
 * A component's files go in one command per kind of folder (a file set): its stdin holds every
 * text file under a readable header naming its path, mode, size and sha256, so `pulumi preview
 * --diff` still shows each file's content and names each file that changes; the host cuts each
 * file out of it by the size its header gives, and checks it by the sum. A binary's header names
 * its sha256 alone: its bytes were copied to a staging path beforehand.
 */
import { sha256Text } from "../file-hash";
import { HOST_STATE_DIR, HostFile, inFileSet, OWN_DIRS, pathSlug, placedRecordDir, shellCommand } from "./steps";

/** The folder of `path`. */
function folderOf(path: string): string {
    return path.replace(/\/[^/]+$/, "") || "/";
}

/**
 * The shell words a file's commands are made of: in a command of its own, its quoted path and
 * the like (wordsOf); in a set's shell functions, their arguments (ARGUMENT_WORDS). One text for
 * each command, so the two never differ in what they do.
 */
interface FileWords {
    path: string;
    /** Where the file's bytes are written before they move in place. */
    tmp: string;
    folder: string;
    mode: string;
    /** The path's record (placedRecordDir), and the same below HOST_STATE_DIR. */
    record: string;
    recordInState: string;
    /** Where the file's folder is one of ours, removed once empty: what comes before that rmdir (a shell test and `||`, or nothing). */
    dropFolderIf?: string;
}

/** The file's folder is one of the program's own (OWN_DIRS), which goes once its last file has. */
function folderIsOurs(path: string): boolean {
    return OWN_DIRS.includes(folderOf(path));
}

/** Below HOST_STATE_DIR: the records of every placed path. */
const PLACED_IN_STATE = placedRecordDir("").slice(HOST_STATE_DIR.length + 1);

function wordsOf(file: HostFile): FileWords {
    const q = (word: string) => shellCommand([word]);
    return {
        path: q(file.path),
        tmp: q(`${file.path}.gpu-workers.tmp`),
        folder: q(folderOf(file.path)),
        mode: file.mode,
        record: q(placedRecordDir(file.path)),
        recordInState: q(`${PLACED_IN_STATE}${file.path}`),
        dropFolderIf: folderIsOurs(file.path) ? "" : undefined,
    };
}

/** A set's shell functions take the path first, then its mode (place) or `own` where its folder is ours (release). */
const ARGUMENT_WORDS: FileWords = {
    path: '"$1"',
    tmp: '"$1".gpu-workers.tmp',
    folder: '"$(dirname "$1")"',
    mode: '"$2"',
    record: `${placedRecordDir("")}"$1"`,
    recordInState: `${PLACED_IN_STATE}"$1"`,
    dropFolderIf: '[ "$2" != own ] || ',
};

function writeWords(w: FileWords, source: string, check?: (tmp: string) => string): string {
    const steps = [
        `mkdir -p ${w.folder}`,
        `(umask 077 && ${source} > ${w.tmp})`,
        ...(check ? [check(w.tmp)] : []),
        `chmod ${w.mode} ${w.tmp}`,
        `mv -f ${w.tmp} ${w.path}`,
    ];
    return `${steps.join(" && ")} || { rm -f ${w.tmp}; exit 1; }`;
}

/**
 * Writes `path` atomically with `mode` from what `source` (a shell pipeline) prints: `cat`, the
 * command's stdin, by default. The temp file is private (umask 077) until its mode is set, so a
 * secret is never readable by others on the way, and it is removed when any step fails. With
 * `check` (a test of the temp file), bytes that fail it are never moved in place.
 */
export function writeFileCommand(file: HostFile, source = "cat", check?: (tmp: string) => string): string {
    return writeWords(wordsOf(file), source, check);
}

/** `r`: the path's record (placedRecordDir), `p`: the path. */
function recordVariables(w: FileWords): string {
    return `r=${w.record} p=${w.path}`;
}

function claimWords(w: FileWords, user: string, adopt: boolean): string {
    const keep = adopt
        ? `: > "$r/absent"`
        : `if [ -e "$p" ] || [ -L "$p" ]; then cp -a "$p" "$r/original.tmp" && mv -f "$r/original.tmp" "$r/original"; else : > "$r/absent"; fi`;
    return `${recordVariables(w)}; mkdir -p "$r/users" && { [ -e "$r/original" ] || [ -L "$r/original" ] || [ -e "$r/absent" ] || ${keep}; } && : > "$r/users/"${shellCommand([pathSlug(user)])}`;
}

/**
 * Makes `user` (a resource's owner id; a component's name on hosts an earlier release placed) a user of the path before it writes there. The first user keeps
 * what is at the path aside (or notes that nothing is), so the last one puts it back; with
 * `adopt` (an update of a file an earlier version placed, which kept no record) what is there
 * is taken as the program's own. Each record is written before the file changes, so a run cut
 * short does it again and never keeps the program's own file as the host's.
 */
export function claimFileCommand(file: HostFile, user: string, adopt: boolean): string {
    return claimWords(wordsOf(file), user, adopt);
}

function releaseWords(w: FileWords, user: string): string {
    const dropFolder = w.dropFolderIf === undefined ? "" : ` && { ${w.dropFolderIf}rmdir ${w.folder} 2>/dev/null || true; }`;
    return (
        `${recordVariables(w)}; rm -f "$r/users/"${shellCommand([pathSlug(user)])} && if rmdir "$r/users" 2>/dev/null || [ ! -e "$r/users" ]; then` +
        ` if [ -e "$r/original" ] || [ -L "$r/original" ]; then mkdir -p ${w.folder} && mv -f "$r/original" "$p";` +
        ` elif [ -e "$r/absent" ]; then rm -f "$p"${dropFolder}; fi` +
        ` && rm -f "$r/absent" && { cd ${HOST_STATE_DIR} && rmdir -p --ignore-fail-on-non-empty ${w.recordInState} 2>/dev/null; cd / && rmdir ${HOST_STATE_DIR} 2>/dev/null || true; }; fi`
    );
}

/**
 * `user` no longer places the file. The last user puts back what was at the path before (the
 * original, byte for byte, in one rename) or removes the file where nothing was; then the
 * record goes, and the file's folder when that is one of ours and now empty. Without a record
 * it does nothing: a step put the original back already (fabric-manager.sh restarts the
 * service that reads it).
 */
export function removeFileCommand(file: HostFile, user: string): string {
    return releaseWords(wordsOf(file), user);
}

/** Where binaries wait between their copy and their install: relative, so under the login user's home (sftp's and the command's folder). */
const STAGING_DIR = ".gpu-workers-staging";

/** Where a binary waits between its copy and its install, named by its sha256. */
export function stagingPath(sha256: string): string {
    return `${STAGING_DIR}/${sha256}`;
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

/** Lays out a set's files (no secret or generated value: see inFileSet) as one stdin: each file under its header, a text file's content exactly, then a newline. */
export function fileSetStdin(files: HostFile[]): string {
    return files
        .map((file) => {
            if (!inFileSet(file)) throw new Error(`${file.path}: a secret or generated file does not go in a file set`);
            return file.artifact ? `${setHeader(file)}\n` : `${setHeader(file)}\n${file.content}\n`;
        })
        .join("");
}

/**
 * Shell function `next_file PATH KIND` (KIND `text` or `staged`): reads the next header from the
 * set's stdin, checks that it names PATH with a size of that kind, and sets `$n` and `$sum` to the
 * size of a text file's content (which follows, then a newline) and the sha256. The command names
 * no size or sum, so a changed file changes only the stdin in the preview. Builtins only: a set
 * runs these once per file, and a process started on the host costs more than the work.
 */
const NEXT_FILE =
    `next_file() { IFS= read -r h || return 1; case $h in "==> $1 (mode "*) ;; *) return 1;; esac;` +
    ` sum=\${h##*, sha256 }; sum=\${sum%") <=="}; n=\${h%", sha256 "*}; n=\${n##*, };` +
    ` case $2:$n in "staged:staged copy") n=0;; text:*" bytes") n=\${n%" bytes"}; case $n in ''|*[!0-9]*) return 1;; esac;; *) return 1;; esac;` +
    ` case $sum in ''|*[!0-9a-f]*) return 1;; esac; }`;

/** The mode as `stat -c %a` prints it (and chmod takes it): "0644" is 644. */
function statMode(mode: string): string {
    return parseInt(mode, 8).toString(8);
}

/** What a set says when a file's bytes (its part of the stdin, or its staged copy) are not those its header names. */
const WRONG_BYTES = 'echo "$1: the bytes for it are not sha256 $sum" >&2';
/** What a set says when a binary has no staged copy and its path does not hold it either. */
const NO_STAGED_COPY = 'echo "$1: no staged copy, and the file is not sha256 $sum" >&2';

/**
 * The shell functions a set's place command calls once per file, `verify_text PATH` and
 * `verify_binary PATH` first, for every file, then `place_text PATH MODE` and
 * `place_binary PATH MODE` (MODE as statMode prints it) in the same order, with the user's owner
 * id written once.
 *
 * The verify pass reads the stdin through: each file's header (next_file), a text file's part,
 * copied to the private folder `$w` and checked against the sum there, and a binary's staged copy
 * (`$s`) checked in place; with no staged copy (a set rewritten for another file, or a mode
 * change) the path must hold those bytes already. So a stdin or a staged copy that does not hold
 * what the headers say fails the command before any path is claimed or written, and a failed set
 * (which the engine does not record) leaves nothing of its own on the host but what an I/O error
 * cut. The sum of file `$i` is kept beside its part for the place pass.
 *
 * The place pass claims each path and leaves it alone where it holds those bytes with that mode
 * already (its inode too); otherwise it writes it from the verified part or staged copy, and checks
 * the sum again on the copy that moves in place. A binary's staged copy then goes, as it does when
 * the path held it already; a binary with no staged copy (its bytes verified at the path) gets its
 * mode alone.
 */
function placeFunctions(user: string, binaries: boolean): string[] {
    const a = ARGUMENT_WORDS;
    const sumOf = (tmp: string) => `{ has_sum ${tmp} || { ${WRONG_BYTES}; false; }; }`;
    const functions = [
        NEXT_FILE,
        // has_sum FILE: the file holds the bytes of `$sum`.
        `has_sum() { printf '%s  %s\\n' "$sum" "$1" | sha256sum -c --quiet - >/dev/null 2>&1; }`,
        `found() { next_file "$1" "$2" || { echo "file set: the stdin does not hold $1 where expected" >&2; exit 1; }; }`,
        // verified: the file's sum is kept for the place pass, which takes the files in the same order.
        `verified() { printf '%s\\n' "$sum" > "$w/$i.sum" && i=$((i + 1)); }`,
        // The part's trailing newline is read off after it (a stdin cut short fails the sum).
        `verify_text() { found "$1" text && head -c "$n" > "$w/$i" && { IFS= read -r rest || :; } && { has_sum "$w/$i" || { ${WRONG_BYTES}; exit 1; }; } && verified; }`,
        // next_verified: `$sum` and `$part` (a text file's bytes) of the next file.
        `next_verified() { read -r sum < "$w/$i.sum" && part=$w/$i && i=$((i + 1)); }`,
        `claim() { ${claimWords(a, user, false)}; }`,
        // holds_already PATH MODE BYTES: the path holds the bytes of the file BYTES, with that mode.
        `holds_already() { cmp -s "$3" ${a.path} && [ "$(stat -c %a ${a.path})" = ${a.mode} ]; }`,
        // put PATH MODE FILE: writes the path from FILE.
        `put() { ${writeWords(a, 'cat "$3"', sumOf)}; }`,
        `place_text() { next_verified && claim "$1" && { holds_already "$1" "$2" "$part" || put "$1" "$2" "$part"; }; }`,
    ];
    if (!binaries) return functions;
    return [
        ...functions,
        `verify_binary() { found "$1" staged; s=${STAGING_DIR}/"$sum"; if [ -f "$s" ]; then has_sum "$s" || { ${WRONG_BYTES}; exit 1; };` +
            ` else has_sum ${a.path} || { ${NO_STAGED_COPY}; exit 1; }; fi; verified; }`,
        `place_binary() { next_verified && claim "$1" && s=${STAGING_DIR}/"$sum" && if [ -f "$s" ]; then` +
            ` { holds_already "$1" "$2" "$s" || put "$1" "$2" "$s"; } && rm -f "$s";` +
            ` else [ "$(stat -c %a ${a.path})" = ${a.mode} ] || chmod ${a.mode} ${a.path}; fi` +
            ` && { rmdir ${STAGING_DIR} 2>/dev/null || true; }; }`,
    ];
}

/**
 * Places every file of the set (in the order of fileSetStdin) as `user`: every file's bytes are
 * verified as the stdin is read, then each file is claimed and written from its part (a binary
 * from its staged copy). The same on create and update: a set's paths never change (they are among its
 * triggers, so other paths make a new set, whose owner id differs, and the old one's delete lets
 * go of the rest).
 */
export function placeFileSetCommand(files: HostFile[], user: string): string {
    const verify = files.map((file) => `${file.artifact ? "verify_binary" : "verify_text"} ${shellCommand([file.path])}`);
    const place = files.map((file) => `${file.artifact ? "place_binary" : "place_text"} ${shellCommand([file.path])} ${statMode(file.mode)}`);
    return [
        `w=$(mktemp -d) && trap 'rm -rf "$w"' EXIT && i=0 || exit 1`,
        ...placeFunctions(
            user,
            files.some((f) => f.artifact),
        ),
        [...verify, "i=0", ...place].join(" &&\n"),
    ].join("\n");
}

/** `user` no longer places any file of the set: `release PATH own` where the file's folder is ours, `release PATH other` elsewhere. */
export function removeFileSetCommand(files: HostFile[], user: string): string {
    const release = files.map((file) => `release ${shellCommand([file.path])} ${folderIsOurs(file.path) ? "own" : "other"}`);
    return [`release() { ${releaseWords(ARGUMENT_WORDS, user)}; }`, release.join(" &&\n")].join("\n");
}
