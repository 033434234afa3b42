/**
 * The shape every renderer returns: files to place on a host and steps to run there.
 * Pure data (no Pulumi): the components turn it into @pulumi/command remote commands, and the
 * offline render writes it to disk with a manifest. Both read the same values.
 */

/** A file placed on a host. Its full content is a resource input, so the preview diff shows it. */
export interface HostFile {
    /** Absolute path on the host. */
    path: string;
    /** Octal mode, e.g. "0644". */
    mode: string;
    /** Text content; for a binary artifact, leave it empty and set `artifact`. */
    content: string;
    /** A binary built or kept here and uploaded as is (its sha256 shows in the preview). */
    artifact?: Artifact;
    /** The content is a secret: it shows as [secret] in previews, state and renders. */
    secret?: boolean;
    /** The content is made during `up` (a generated key); this names which, and `content` is empty. */
    generated?: GeneratedContent;
}

/**
 * A file uploaded from this machine as it is (the built wrapper, containerd-toml, a Concourse
 * release): where it is and its sha256. The digest is taken once per program run where the build
 * output is known (components/chain/artifacts.ts) and handed to planning, which reads no file:
 * every host's plan refers to the same artifact, none holds its bytes.
 */
export interface Artifact {
    /** Where the file is on this machine. */
    path: string;
    /** Its sha256 (hex). */
    sha256: string;
}

/**
 * Contents only `up` knows: the keys generated for an LXD instance's login and sshd, the TSA
 * host key a web of the same stack generates (as its workers receive it), the public keys a
 * web is given to admit, and a worker's own public key (as its web admits it).
 */
export type GeneratedContent = "login-key.public" | "host-key.private" | "host-key.public" | "tsa-host-key.public" | "worker-keys.public" | "worker-key.public";

/** A command run on a host: `create` on first up or change, `remove` when the resource is deleted. */
export interface HostStep {
    /** Short name, unique on the host, e.g. "runc-wrapper-install". */
    name: string;
    /**
     * What the step acts on, where steps of one name act on different things on one host (each
     * worker's admission at the web names its key): two resources with the same slot on one
     * machine apply the same thing (lib/host/owner-records.ts). Default: the name.
     */
    slot?: string;
    /** Shell command run on create and on any change of its inputs. Must be idempotent. */
    create: string;
    /** Shell command that undoes `create`. Must be idempotent. */
    remove?: string;
    /** Names of the files (paths) and steps this one needs first. */
    dependsOn: string[];
    /** Exits 0 while what `create` did is still in place; a refresh runs it to notice drift. */
    check?: string;
}

/**
 * A check the program (not the host) runs after a step: `cdi-spec` records the kind and devices
 * of the CDI spec at `path` that the CDI library accepted on the host; `worker-registration`
 * waits until the Concourse web at `url` lists the worker as running with exactly its tags.
 */
export type ProgramCheck = { name: string; after: string } & (
    | { kind: "cdi-spec"; path: string }
    | {
          kind: "worker-registration";
          worker: string;
          tags: string[];
          team?: string;
          unit: string;
          url: string;
          username: string;
          timeoutSeconds: number;
          task: boolean;
      }
);

/** What a program check does, in one line (the preview's and the offline render's words). */
export function describeCheck(check: ProgramCheck): string {
    return check.kind === "cdi-spec"
        ? `record the kind and devices of the CDI spec at ${check.path}, which the CDI library accepted on the host (in the program)`
        : `wait up to ${check.timeoutSeconds}s until the web at ${check.url} lists worker ${check.worker} as running with tags [${check.tags.join(", ")}]${check.team ? ` in team ${check.team}` : ""} (in the program)`;
}

export interface RenderedComponent {
    files: HostFile[];
    steps: HostStep[];
    checks?: ProgramCheck[];
}

/** `/etc/concourse/worker.env` -> `etc-concourse-worker.env`: a readable resource name. */
export function pathSlug(path: string): string {
    return path.replace(/^\/+/, "").replace(/[^A-Za-z0-9._-]+/g, "-");
}

/**
 * A plain text file or a binary goes on the host with the other files of its kind of folder, by
 * one command (a file set: lib/host/placed-files.ts; a binary's bytes are copied beforehand, its
 * set installs them): its component's set, or in a GpuWorker, for the program's own folders, the
 * worker's. A secret or generated value keeps a resource of its own, so the others stay readable.
 */
export function inFileSet(file: HostFile): boolean {
    return !file.secret && !file.generated;
}

/** The name of `path`'s own resources: a secret's command, a binary's copy (fileUploadName). */
function ownFileResourceName(component: string, path: string): string {
    return `${component}-file-${pathSlug(path)}`;
}

/** The resource that places `file` for the component named `component`. */
export function fileResourceName(component: string, file: HostFile): string {
    if (inFileSet(file)) return `${component}-${inOwnFolder(file.path) ? "files" : "system-files"}`;
    return ownFileResourceName(component, file.path);
}

/** The copy of a binary's bytes to its staging path, before its file set installs it. */
export function fileUploadName(component: string, file: HostFile): string {
    return `${ownFileResourceName(component, file.path)}-upload`;
}

/** The resource that runs `step` (or a program check) of the component named `component`. */
export function stepResourceName(component: string, step: string): string {
    return `${component}-${step}`;
}

/** Quotes a word for POSIX sh: everything between single quotes is literal. */
export function shellQuote(word: string): string {
    return /^[A-Za-z0-9_./:=,+@%-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Joins a command line from words, quoting each as needed. */
export function shellCommand(words: string[]): string {
    return words.map(shellQuote).join(" ");
}

/**
 * `cmd` as root on a host reached as `user`: as it is for root, else through `sudo -n` (never a
 * password prompt: a step fails rather than hangs). The one place that decides.
 */
export function asRoot(user: string, cmd: string): string {
    return user === "root" ? cmd : `sudo -n sh -c ${shellCommand([cmd])}`;
}

/** Where the project keeps its own scripts and state on a host. */
export const HOST_LIB_DIR = "/usr/local/lib/gpu-workers";
export const HOST_ETC_DIR = "/etc/gpu-workers";
/** The program's own folders: nothing but its placed files is written there, and it may remove them once empty. */
export const OWN_DIRS = [HOST_LIB_DIR, HOST_ETC_DIR];

/** A path in the program's own folders (or below them). */
export function inOwnFolder(path: string): boolean {
    return OWN_DIRS.some((dir) => path.startsWith(`${dir}/`));
}
/**
 * The host scripts' records (their STATE_DIR): what they installed, and what was there before;
 * placed paths' records under placed/ (host/placed-files.sh writes them).
 */
export const HOST_STATE_DIR = "/var/lib/gpu-workers";
