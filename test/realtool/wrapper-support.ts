/**
 * Shared by the wrapper's real-tool tests and its benchmark: a wrapper built to read its
 * settings from a temp file, a busybox rootfs and OCI image made locally (no network),
 * plain runc bundles, and a private containerd (own root, state, socket and log).
 */
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ensureCommands } from "../support/tools";

export const REPO = path.resolve(__dirname, "../../..");
/** What the program places on hosts, and developer tooling. */
export const HOST_DIR = path.join(REPO, "host");
export const SCRIPTS_DIR = path.join(REPO, "scripts");

/** runc, containerd + ctr, static busybox for images, umoci to pack them. */
export function ensureWrapperTools(): void {
    ensureCommands(["runc", "containerd", "ctr", "busybox", "umoci", "sha256sum"], ["runc", "containerd", "busybox-static", "umoci", "coreutils"]);
}

export function sh(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeout?: number } = {}): string {
    const r = spawnSync(cmd, args, { encoding: "utf8", env: opts.env ?? process.env, cwd: opts.cwd, timeout: opts.timeout ?? 120_000 });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || String(r.error ?? "")).trim()}`);
    return r.stdout;
}

export function sha256(file: string): string {
    return sh("sha256sum", [file]).split(" ")[0];
}

/**
 * Builds a test variant of the wrapper: its settings at `configPath` (never /etc in tests),
 * and every other path of its own: the log for failures before the settings are read
 * beside `configPath` (`variantLog`), what it learns about the runtime in `run/` there,
 * and the real runc that calls other than create and run go to (default: this machine's).
 * GW_WRAPPER_CHECKOUT=DIR builds it from another checkout's wrapper/ and scripts/ (dev/ in an older
 * commit, to show that a test fails on the wrapper before a fix).
 */
/** A checkout's developer tooling: scripts/, or dev/ in a commit from before issue 19. */
function toolingDir(checkout: string): string {
    const scripts = path.join(checkout, "scripts");
    return fs.existsSync(scripts) ? scripts : path.join(checkout, "dev");
}

export function buildTestWrapper(dir: string, configPath: string, opts: { realRunc?: string; output?: string } = {}): string {
    const output = opts.output ?? path.join(dir, "runc-wrapper");
    const realRunc = opts.realRunc ?? sh("sh", ["-c", "command -v runc"]).trim();
    const toolDir = process.env.GW_WRAPPER_CHECKOUT ? toolingDir(process.env.GW_WRAPPER_CHECKOUT) : SCRIPTS_DIR;
    sh("bash", [path.join(toolDir, "build-wrapper.sh"), "--output", output, "--config-path", configPath, "--real-runc", realRunc], { timeout: 300_000 });
    return output;
}

/** The settings file as the chain renders it, with some members set otherwise (allowPrivileged). */
export function withSettings(json: string, extra: Record<string, unknown>): string {
    return JSON.stringify({ ...JSON.parse(json), ...extra }, null, 2) + "\n";
}

/** A wrapper settings' allocation block (docs/gpu-allocation.md) over `units` plain NVIDIA GPUs 0..units-1, exclusive unless `extra` says otherwise. */
export function nvidiaAllocation(units: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
        mode: "exclusive",
        perTask: 1,
        replicas: 1,
        waitSeconds: 60,
        visibleEnv: "NVIDIA_VISIBLE_DEVICES",
        holderEnv: { NVIDIA_DRIVER_CAPABILITIES: "compute,utility" },
        holderDeviceNodes: [],
        ...extra,
        units: Array.from({ length: units }, (_, i) => ({ id: String(i), gpu: String(i), visible: String(i), deviceNodes: [], gpuNodes: [`/dev/nvidia${i}`] })),
    };
}

/** Builds a small static C program (gcc, the static C library): a test's own tool inside a busybox container. */
export function buildStaticC(source: string, output: string): string {
    ensureCommands(["gcc"], ["gcc", "libc6-dev"]);
    const file = `${output}.c`;
    fs.writeFileSync(file, source);
    sh("gcc", ["-static", "-O2", "-o", output, file]);
    return output;
}

/** Where a variant built for `configPath` logs what fails before its settings are read. */
export function variantLog(configPath: string): string {
    return path.join(path.dirname(configPath), "runc-wrapper.log");
}

/** Writes the wrapper's settings the way production has them: root-owned, 0644. */
export function writeSettings(file: string, json: string): void {
    fs.writeFileSync(`${file}.tmp`, json, { mode: 0o644 });
    fs.chmodSync(`${file}.tmp`, 0o644);
    fs.renameSync(`${file}.tmp`, file);
}

const APPLETS = [
    "sh",
    "ls",
    "cat",
    "echo",
    "true",
    "env",
    "grep",
    "touch",
    "rm",
    "test",
    "[",
    "printf",
    "find",
    "sleep",
    "mkdir",
    "stat",
    "mount",
    "readlink",
    "id",
];

/** A rootfs of static busybox: /bin/busybox and its applets as links. */
export function makeBusyboxRootfs(rootfs: string): void {
    fs.mkdirSync(path.join(rootfs, "bin"), { recursive: true });
    fs.copyFileSync(sh("sh", ["-c", "command -v busybox"]).trim(), path.join(rootfs, "bin", "busybox"));
    fs.chmodSync(path.join(rootfs, "bin", "busybox"), 0o755);
    for (const a of APPLETS) {
        const link = path.join(rootfs, "bin", a);
        if (!fs.existsSync(link)) fs.symlinkSync("busybox", link);
    }
    for (const d of ["proc", "sys", "dev", "tmp", "etc"]) fs.mkdirSync(path.join(rootfs, d), { recursive: true });
}

/**
 * An OCI image archive of busybox, packed with umoci: its config sets env that a task
 * image might (NVIDIA_VISIBLE_DEVICES=all, AMD_VISIBLE_DEVICES, HSA_OVERRIDE_GFX_VERSION).
 */
export function makeBusyboxImage(dir: string, env: string[]): string {
    const layout = path.join(dir, "oci");
    const unpacked = path.join(dir, "unpacked");
    sh("umoci", ["init", "--layout", layout]);
    sh("umoci", ["new", "--image", `${layout}:latest`]);
    sh("umoci", ["unpack", "--image", `${layout}:latest`, unpacked]);
    makeBusyboxRootfs(path.join(unpacked, "rootfs"));
    sh("umoci", ["repack", "--image", `${layout}:latest`, unpacked]);
    sh("umoci", ["config", "--image", `${layout}:latest`, "--config.cmd", "/bin/sh", ...env.flatMap((e) => ["--config.env", e])]);
    const archive = path.join(dir, "busybox-oci.tar");
    sh("tar", ["-C", layout, "-cf", archive, "."]);
    fs.rmSync(unpacked, { recursive: true, force: true });
    return archive;
}

/** A runc bundle whose process is `args`, from `runc spec` (no terminal, no network namespace change). */
export function makeBundle(dir: string, rootfs: string, args: string[], env: string[] = ["PATH=/bin"]): string {
    fs.mkdirSync(dir, { recursive: true });
    sh("runc", ["spec", "--bundle", dir]);
    const specPath = path.join(dir, "config.json");
    const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
    spec.root = { path: rootfs, readonly: true };
    spec.process.terminal = false;
    spec.process.args = args;
    spec.process.env = env;
    fs.writeFileSync(specPath, JSON.stringify(spec, null, 2));
    return dir;
}

/** A containerd of the test's own: config, root, state, socket and log under `dir`. */
export class TestContainerd {
    readonly socket: string;
    readonly log: string;
    /** containerd's, once started. */
    pid?: number;

    constructor(
        readonly dir: string,
        readonly config: string,
        private readonly env: NodeJS.ProcessEnv = process.env,
        /** A command that execs containerd (into a namespace of its own): its pid stays containerd's. */
        private readonly launcher: string[] = [],
    ) {
        this.socket = path.join(dir, "containerd.sock");
        this.log = path.join(dir, "containerd.log");
    }

    async start(): Promise<void> {
        const out = fs.openSync(this.log, "a");
        const [command, ...args] = [
            ...this.launcher,
            "containerd",
            ...["--config", this.config, "--address", this.socket, "--root", path.join(this.dir, "root"), "--state", path.join(this.dir, "state")],
        ];
        const child = spawn(command, args, {
            detached: true,
            stdio: ["ignore", out, out],
            env: this.env,
        });
        fs.closeSync(out);
        child.unref();
        this.pid = child.pid;
        for (let i = 0; i < 100; i++) {
            if (fs.existsSync(this.socket) && spawnSync("ctr", ["-a", this.socket, "version"], { stdio: "ignore", timeout: 10_000 }).status === 0) return;
            await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`containerd did not start; its log:\n${fs.readFileSync(this.log, "utf8").split("\n").slice(-20).join("\n")}`);
    }

    ctr(args: string[], timeout = 120_000): string {
        return sh("ctr", ["-a", this.socket, ...args], { timeout });
    }

    ctrResult(args: string[], timeout = 120_000): { status: number | null; stdout: string; stderr: string } {
        const r = spawnSync("ctr", ["-a", this.socket, ...args], { encoding: "utf8", timeout });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }

    /** Stops containerd and the shims it left (their own process groups), then waits. */
    async stop(): Promise<void> {
        if (this.pid === undefined) return;
        const shims = spawnSync("sh", ["-c", `for p in /proc/[0-9]*; do if grep -qsF -- "${this.socket}" "$p/cmdline"; then echo "\${p#/proc/}"; fi; done`], {
            encoding: "utf8",
        })
            .stdout.split("\n")
            .filter(Boolean)
            .map(Number);
        for (const pid of [this.pid, ...shims]) {
            try {
                process.kill(pid, "SIGTERM");
            } catch {
                /* gone */
            }
        }
        for (let i = 0; i < 50 && alive(this.pid); i++) await new Promise((r) => setTimeout(r, 100));
        if (alive(this.pid))
            try {
                process.kill(this.pid, "SIGKILL");
            } catch {
                /* gone */
            }
        this.pid = undefined;
        // Leave nothing mounted under the test folder (overlay snapshots of stopped tasks).
        const mounts = fs
            .readFileSync("/proc/self/mounts", "utf8")
            .split("\n")
            .map((l) => l.split(" ")[1] ?? "")
            .filter((m) => m.startsWith(`${this.dir}/`))
            .reverse();
        for (const m of mounts) spawnSync("umount", ["-l", m.replace(/\\040/g, " ")], { stdio: "ignore" });
    }
}

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

/** Undoes /proc/self/mountinfo's octal escapes (space, tab, newline, backslash). */
export function unescapeMountinfo(field: string): string {
    return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Mount points in mountinfo text below `root`, each with ro/rw and the filesystem type. */
export function mountsBelow(mountinfo: string, root: string): Map<string, { mode: "ro" | "rw"; fstype: string }> {
    const out = new Map<string, { mode: "ro" | "rw"; fstype: string }>();
    for (const line of mountinfo.split("\n")) {
        const [left, right] = line.split(" - ");
        const fields = left.split(" ");
        if (right === undefined || fields.length < 6) continue; // not a mountinfo line
        const point = unescapeMountinfo(fields[4]);
        if (!point.startsWith(`${root}/`)) continue;
        const mode = fields[5].split(",").includes("ro") ? "ro" : "rw";
        out.set(point, { mode, fstype: right.split(" ")[0] });
    }
    return out;
}

export function tempDir(prefix: string): string {
    return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
