/**
 * The forms a setting may take where it reaches a host: a shell command line (as an argument),
 * an env file, a systemd unit, TOML, XML, JSON or the ssh command line. Each is strict: no
 * newline, NUL, quote, `$`, backquote, backslash or space, and nothing that begins with `-`
 * where the value becomes an argument. And the folders a worker may take for its own: never the
 * file system's root, a system folder, or one that others may write to. Pure.
 */
import { isIP } from "net";
import * as path from "path";
import { z } from "zod";

const DNS_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** An IP literal (no IPv6 zone: `%` has a meaning of its own in units and URLs). */
export function isIpAddress(value: string): boolean {
    return isIP(value) !== 0 && !value.includes("%");
}

/** A DNS name (letters, digits and dashes in dot-separated labels) or an IP literal. */
export function isHostAddress(value: string): boolean {
    return DNS_NAME.test(value) || isIpAddress(value);
}

/** A whole number from min up (to max where given), with one message saying so (or the one given). */
export function wholeNumber(min: number, max?: number, error?: string) {
    const message = error ?? (max === undefined ? `expected a whole number of at least ${min}` : `expected a whole number from ${min} to ${max}`);
    const n = z.number({ error: message }).int({ error: message }).min(min, { error: message });
    return max === undefined ? n : n.max(max, { error: message });
}

const HOST_ERROR = "expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5";
export const hostAddress = z.string({ error: HOST_ERROR }).refine(isHostAddress, { error: HOST_ERROR });

const IP_ERROR = "expected an IP address, e.g. 127.0.0.1";
export const ipAddress = z.string({ error: IP_ERROR }).refine(isIpAddress, { error: IP_ERROR });

/** POSIX's portable user names, as useradd takes them: no leading `-` or digit, at most 32. */
export const POSIX_USER = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;
const USER_ERROR = "expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)";
export const posixUser = z.string({ error: USER_ERROR }).regex(POSIX_USER, { error: USER_ERROR });

/** A name LXD, libvirt or Concourse takes for a profile, network, domain or team. */
export const PLAIN_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export function plainName(what: string) {
    const error = `expected ${what} of letters, digits, _ . and - (not starting with . or -, at most 63)`;
    return z.string({ error }).regex(PLAIN_NAME, { error });
}

/** The ending of a folder name that makes a dataset writable; an argument of the validator, so no leading `-`. */
const SUFFIX_ERROR = "expected a folder-name ending of letters, digits, _ . and - (not starting with -), such as _rw";
export const writableSuffix = z.string({ error: SUFFIX_ERROR }).regex(/^[A-Za-z0-9_.][A-Za-z0-9_.-]*$/, { error: SUFFIX_ERROR });

/** A Concourse tag: one plain word of the worker unit's command line (no space, quote, % or line break). */
export const CONCOURSE_TAG = /^[A-Za-z0-9][A-Za-z0-9_.:=+,-]*$/;

/** The characters a host path may hold: no space, quote, `$`, backquote, backslash, `%` or control character. */
const PATH_CHARS = /^[A-Za-z0-9._+@:,=~/-]+$/;

/** Why `value` is no absolute path in normal form of plain characters, or undefined. */
export function hostPathProblem(value: string): string | undefined {
    if (!value.startsWith("/")) return "expected an absolute path";
    if (!PATH_CHARS.test(value)) return "expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)";
    const normal = path.posix.normalize(value).replace(/(.)\/$/, "$1");
    if (normal !== value) return `expected the path in normal form (no . or .. segment, no // and no trailing /): ${normal}`;
    return undefined;
}

function pathSchema(check: (value: string) => string | undefined) {
    return z.string({ error: "expected an absolute path" }).superRefine((value, ctx) => {
        const problem = hostPathProblem(value) ?? check(value);
        if (problem) ctx.addIssue({ code: "custom", message: problem, input: value });
    });
}

/** An absolute host path in normal form, of plain characters. */
export const hostPath = pathSchema(() => undefined);

/** Folders of the system (each with everything in it). */
export const SYSTEM_TREES = [
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lock",
    "/var/run",
];
/**
 * Where the system and its services keep their state (each with everything in it): a dataset
 * root there hands every task the host's own records, databases, logs or queues.
 */
export const STATE_TREES = [
    "/var/lib/apt",
    "/var/lib/containerd",
    "/var/lib/docker",
    "/var/lib/dpkg",
    "/var/lib/gpu-workers",
    "/var/lib/incus",
    "/var/lib/kubelet",
    "/var/lib/libvirt",
    "/var/lib/lxcfs",
    "/var/lib/lxd",
    "/var/lib/mysql",
    "/var/lib/postgresql",
    "/var/lib/private",
    "/var/lib/sudo",
    "/var/lib/systemd",
    "/var/log",
    "/var/mail",
    "/var/spool",
];
/** The users' folders (each with everything in it): their owners could put there what tasks then get. */
export const USER_TREES = ["/home"];
/** Folders every user may write to (each with everything in it). */
export const SHARED_TREES = ["/tmp", "/var/tmp"];
/** System folders that hold others' folders: they themselves are refused, a folder of their own below them is not. */
export const SYSTEM_FOLDERS = ["/", "/var", "/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/opt"];
/** Folders that other software shares: no work dir (deleted on destroy) may be one of them. */
export const SHARED_FOLDERS = ["/media", "/mnt", "/opt", "/srv"];

/**
 * /run is a system folder, but a tmpfs only root writes to: a folder of its own there suits
 * dcgm-exporter's job mapping (it goes at reboot, as the containers do). Not these below it:
 * what every user may write to, and the runc wrapper's own state (WRAPPER_STATE_DIR).
 */
export const RUN_TREE = "/run";
export const RUN_REFUSED_TREES = ["/run/lock", "/run/shm", "/run/user", "/run/gpu-workers"];

function within(child: string, parent: string): boolean {
    return child === parent || child.startsWith(parent === "/" ? "/" : `${parent}/`);
}

/**
 * Why `folder` (absolute, in normal form) cannot be a dataset root or a work dir, in words
 * that follow the path ("is in /etc, a system folder"), or undefined.
 */
export function protectedFolderProblem(folder: string, use: "datasets" | "workDir" | "jobMapping"): string | undefined {
    if (folder === "/") return "is the whole file system";
    const tree = (list: string[]) => list.find((t) => within(folder, t));
    const where = (t: string, what: string) => (folder === t ? `is ${what}` : `is in ${t}, ${what}`);
    if (use === "jobMapping" && within(folder, RUN_TREE) && folder !== RUN_TREE) {
        const refused = tree(RUN_REFUSED_TREES);
        return refused && where(refused, "which users or the runc wrapper itself write to");
    }
    const system = tree(SYSTEM_TREES);
    if (system) return where(system, "a system folder");
    const state = tree(STATE_TREES);
    if (state) return where(state, "where the system or a service keeps its own state");
    const users = tree(USER_TREES);
    if (users) return where(users, "the users' folders (their owners could put there what a task then gets)");
    const shared = tree(SHARED_TREES);
    if (shared) return where(shared, "which every user may write to");
    if (SYSTEM_FOLDERS.includes(folder)) return "is a system folder";
    if (use !== "datasets" && SHARED_FOLDERS.includes(folder)) return "is a folder other software shares";
    return undefined;
}

/** The dataset root: every folder in it is mounted into every task. */
export const datasetRoot = pathSchema((value) => {
    const problem = protectedFolderProblem(value, "datasets");
    return (
        problem && `${value} ${problem}: every folder of the dataset root is mounted into every task; give a folder of its own, such as /srv or /data/datasets`
    );
});

/** The worker's work dir: destroy deletes it with everything in it. */
export const workDir = pathSchema((value) => {
    const problem = protectedFolderProblem(value, "workDir");
    return problem && `${value} ${problem}: destroy deletes the work dir with everything in it; give a folder of its own, such as /opt/concourse/worker`;
});

/** dcgm-exporter's job-mapping folder: root makes it, writes a file per GPU there at create and rewrites or removes it at delete. */
export const jobMappingDir = pathSchema((value) => {
    const problem = protectedFolderProblem(value, "jobMapping");
    return (
        problem &&
        `${value} ${problem}: root writes and removes dcgm-exporter's job-mapping files there; give a folder of its own that only root can write, such as /run/dcgm-jobs`
    );
});

/** Why a job-mapping folder cannot go with this dataset root and work dir (all absolute, in normal form), or undefined. */
export function jobMappingAndFoldersProblem(dir: string, root: string, workDir?: string): string | undefined {
    if (within(dir, root))
        return `${dir} ${dir === root ? "is" : "is inside"} datasets.root ${root}: every task gets the dataset root, and one that can write a folder there could make root write elsewhere`;
    if (workDir !== undefined && within(dir, workDir))
        return `${dir} ${dir === workDir ? "is" : "is inside"} concourse.workDir ${workDir}: Concourse keeps its containers' volumes there, and destroy deletes it`;
    return undefined;
}

/** Why a work dir and a dataset root (both absolute, in normal form) cannot go together, or undefined. */
export function workDirAndDatasetsProblem(dir: string, root: string): string | undefined {
    if (dir === root) return `${dir} is datasets.root too: destroy deletes the work dir, and with it every dataset`;
    if (within(dir, root))
        return `${dir} is inside datasets.root ${root}: every task would get the worker's own files, and destroy would delete them from under the datasets`;
    if (within(root, dir)) return `${dir} holds datasets.root ${root}: destroy deletes the work dir, and with it every dataset`;
    return undefined;
}

/**
 * A libvirt connection on the board itself: QEMU's system or session daemon over its local
 * socket, optionally a socket of its own. No remote transport and no other parameter: libvirt
 * runs the program a URI names (`qemu+ext:///system?command=/path`, and ssh's for `qemu+ssh`)
 * as the user that connects, root on the board.
 */
export const LIBVIRT_URI = /^qemu(\+unix)?:\/\/\/(system|session)(\?socket=\/[A-Za-z0-9._+@:,=~/-]+)?$/;
const LIBVIRT_URI_ERROR =
    "expected a libvirt URI of the board's own QEMU daemon: qemu:///system or qemu:///session, or qemu+unix:///system?socket=/path (no remote transport, no other parameter: qemu+ext and qemu+ssh run a program)";
export const libvirtUri = z.string({ error: LIBVIRT_URI_ERROR }).regex(LIBVIRT_URI, { error: LIBVIRT_URI_ERROR });

const URL_PARTS = /^([a-z]+):\/\/([^/?#]*)([/?#].*)?$/;
/** What may follow the host in a URL: no space, quote, `$`, backquote, backslash or control character. */
const URL_REST = /^[A-Za-z0-9._~:/?#@%+=&,-]*$/;

/** Why `value` is no plain http(s) URL (a DNS name or IP address, an optional port, a path of plain characters), or undefined. */
export function urlProblem(value: string): string | undefined {
    const expected =
        "expected an http:// or https:// URL of a DNS name or IP address, an optional port and a path of plain characters (no space, quote, $, backquote or backslash)";
    const parts = URL_PARTS.exec(value);
    if (!parts || !["http", "https"].includes(parts[1])) return expected;
    const authority = /^(\[([0-9A-Fa-f:.]+)\]|([^:@[\]]+))(:([0-9]{1,5}))?$/.exec(parts[2]);
    if (!authority) return expected;
    const host = authority[2] ?? authority[3];
    if (authority[2] !== undefined ? isIP(host) !== 6 : !isHostAddress(host)) return expected;
    if (authority[5] !== undefined && (Number(authority[5]) < 1 || Number(authority[5]) > 65535)) return expected;
    if (parts[3] !== undefined && !URL_REST.test(parts[3])) return expected;
    return undefined;
}

export const httpUrl = z.string({ error: "expected a URL" }).superRefine((value, ctx) => {
    const problem = urlProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem, input: value });
});
