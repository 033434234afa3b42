/**
 * What the GPU health watcher's test runs it with: the kernel's records (a FIFO that the test
 * writes recorded driver lines to as kernel-facility records, in /dev/kmsg's own format: only
 * the kernel can write facility 0 to /dev/kmsg, so recorded lines cannot go there; the
 * forgeries' test reads the real kernel log), the config the chain renders, and stand-ins for
 * what cannot run here: nvidia-smi (answering with the discovery fixtures' real captures,
 * refusing any other command line), and systemd with a Concourse worker (a process that, as
 * Concourse's does, exits 0 once SIGUSR1 has landed it or SIGUSR2 retired it).
 */
import { ChildProcess, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { GpuInventoryInput, inventorySchema } from "../../components/lib/gpu/inventory";
import { GpuHealthTerms, planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { renderHealthConfig } from "../../components/lib/links/gpu-health/render";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

export const WATCHER = path.join(PACKAGE_ROOT, "host", "gpu-health-watch.sh");
export const DISCOVERY = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery");
const KMSG_LINES = path.join(PACKAGE_ROOT, "test", "fixtures", "gpu-health", "kmsg-lines.tsv");

/** Why the forgeries' test cannot run here, or undefined: it reads the real kernel log and makes processes crash. */
export function kmsgProblem(): string | undefined {
    if (process.getuid?.() !== 0) return "reading /dev/kmsg and running processes as nobody need root";
    try {
        fs.accessSync("/dev/kmsg", fs.constants.R_OK | fs.constants.W_OK);
    } catch {
        return "/dev/kmsg is not readable and writable here";
    }
    return undefined;
}

/**
 * The kernel's side of /dev/kmsg for a watcher under test (GPU_WORKERS_KMSG): a FIFO, held open
 * here so that the watcher's reader never meets its end, taking records as /dev/kmsg gives them:
 * `PRIORITY,SEQUENCE,MICROSECONDS,-;MESSAGE`, the message escaped as the kernel escapes it.
 */
export class KmsgSeam {
    readonly path: string;
    private readonly fd: number;
    private seq = 0;

    constructor(dir: string) {
        this.path = path.join(dir, "kmsg");
        const made = spawnSync("mkfifo", ["-m", "0600", this.path], { encoding: "utf8" });
        if (made.status !== 0) throw new Error(`mkfifo ${this.path}: ${made.stderr}`);
        // Read and write: the open does not wait for a reader, and the FIFO never reaches its end.
        this.fd = fs.openSync(this.path, fs.constants.O_RDWR);
    }

    /** One record; the drivers print these lines at warning level (4) in the kernel's facility (0). */
    record(message: string, facility = 0, level = 4): void {
        this.seq += 1;
        let escaped = "";
        for (const b of Buffer.from(message, "utf8"))
            escaped += b < 0x20 || b >= 0x7f || b === 0x5c ? `\\x${b.toString(16).padStart(2, "0")}` : String.fromCharCode(b);
        this.write(`${facility * 8 + level},${this.seq},${Math.round(performance.now() * 1000)},-;${escaped}\n`);
    }

    /** Bytes as they are: a record in parts, or one the test lays out itself. */
    write(text: string): void {
        fs.writeSync(this.fd, text);
    }

    close(): void {
        fs.closeSync(this.fd);
    }
}

/** A PCI domain unique to this run: its kernel lines match no other run's GPUs, nor old lines. */
export function uniqueDomain(): string {
    return (0x1000 + ((process.pid * 7919 + Date.now()) % 0xe000)).toString(16).padStart(4, "0");
}

/** `00000000:0D:00.0` (a capture's) with the run's domain: `0000abcd:0D:00.0`. */
export function withDomain(busId: string, domain: string): string {
    return busId.replace(/^[0-9A-Fa-f]{4,8}:/, `0000${domain}:`);
}

/** A fixture's capture, every GPU address in it moved to the run's domain. */
export function capture(fixture: string, file: string, domain: string): string {
    const text = fs.readFileSync(path.join(DISCOVERY, fixture, "tools", file), "utf8");
    return text.replace(/\b0{4,8}:([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b/g, `0000${domain}:$1`);
}

/** The gpu-fallen-off-bus capture's refusal, for the GPU at `bus`. */
export function fallenOff(bus: string): string {
    return capture("gpu-fallen-off-bus", "nvidia-smi-query.txt", "0000").replace(/[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]/, bus);
}

/** The recorded kernel line of `name`, with `bus` (any form) as its address. */
export function kernelLine(name: string, bus: string): string {
    const row = fs
        .readFileSync(KMSG_LINES, "utf8")
        .split("\n")
        .find((l) => l.startsWith(`${name}\t`));
    if (!row) throw new Error(`no kernel line ${name} in ${KMSG_LINES}`);
    const m = /^([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$/.exec(bus)!;
    const domain = m[1].slice(-4).toLowerCase();
    return row
        .slice(name.length + 1)
        .replace("{nvrm}", `${domain}:${m[2]}:${m[3]}`.toLowerCase())
        .replaceAll("{pci}", `${domain}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase())
        .replaceAll("\\n", "\n");
}

/** In an instance, the test's seam folder (a disk device: kernel records, answers); below /var, which systemd mounts nothing over. */
export const SEAM_IN_INSTANCE = "/var/lib/gpu-health-seam";
/** The kernel's recorded segfault line for a process crashing in the file `file` (its name: the file name's first 15 characters). */
export function segfaultLine(file: string): string {
    const row = fs
        .readFileSync(KMSG_LINES, "utf8")
        .split("\n")
        .find((l) => l.startsWith("segfault\t"))!;
    return row.slice("segfault\t".length).replace("{comm}", file.slice(0, 15)).replace("{file}", file);
}

/**
 * File names that hold a driver's line, as a task can make them (any text but `/`): what a
 * hostile task names a program it crashes in, so that the kernel's segfault line carries it.
 * `nvrm` is a watched GPU's address as NVRM prints it (0000:3b:00), `pci` a device's (0000:03:00.0).
 */
export function forgedNames(nvrm: string, pci: string): string[] {
    const lines = [
        `NVRM: Xid (PCI:${nvrm}): 79, x`,
        `SXid (PCI:${pci}): 12028, Fatal x`,
        `nvidia-nvswitch0: SXid (PCI:${pci}): 20034, Fatal, x`,
        `amdgpu ${pci}: amdgpu: GPU reset begin!`,
        `amdgpu ${pci}: amdgpu: 2 uncorrectable hardware errors detected in umc block`,
        `i915 ${pci}: [drm] *ERROR* GT0: Failed to reset chip`,
        `xe ${pci}: [drm] *ERROR* Tile0: GT0: reset failed (-ETIMEDOUT)`,
        `xe ${pci}: [drm] *ERROR* CRITICAL: Xe has declared device ${pci} as wedged.`,
    ];
    // A line break in the name: dmesg prints it as one, and the forged line then starts a line.
    return [...lines, ...lines.map((l) => `a\n${l}`)];
}

/** Where the stand-in nvidia-smi reads its answers when GH_ANSWERS is not set (in an instance). */
export const ANSWERS_IN_INSTANCE = `${SEAM_IN_INSTANCE}/answers`;

/** The watcher's questions to nvidia-smi, and the answer file of each. */
export const SMI_QUERIES = {
    gpus: "--query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits",
    remap: "--query-remapped-rows=gpu_bus_id,remapped_rows.failure --format=csv,noheader",
    apps: "--query-compute-apps=gpu_bus_id,pid --format=csv,noheader",
} as const;

export const STANDIN_NVIDIA_SMI = `#!/bin/sh
# stand-in nvidia-smi: answers from files the test puts in $GH_ANSWERS; any other command line is refused
dir=\${GH_ANSWERS:-${ANSWERS_IN_INSTANCE}}
case "$*" in
${Object.entries(SMI_QUERIES)
    .map(([f, q]) => `  "${q}") f=${f} ;;`)
    .join("\n")}
  *) echo "stand-in nvidia-smi: unexpected arguments: $*" | tee -a "$dir/unexpected" >&2; exit 97 ;;
esac
[ -f "$dir/$f.txt" ] || { echo "stand-in nvidia-smi: no answer for: $*" | tee -a "$dir/unexpected" >&2; exit 98; }
cat "$dir/$f.txt"
[ -f "$dir/$f.exit" ] && exit "$(cat "$dir/$f.exit")"
exit 0
`;

/** The watcher's questions to xpu-smi, and the answer file of each. */
export const XPU_SMI_QUERIES = { discovery: "discovery -j", health: "health -l -j" } as const;

export const STANDIN_XPU_SMI = `#!/bin/sh
# stand-in xpu-smi: answers from files the test puts in $GH_ANSWERS; any other command line is refused
dir=\${GH_ANSWERS:-${ANSWERS_IN_INSTANCE}}
case "$*" in
${Object.entries(XPU_SMI_QUERIES)
    .map(([f, q]) => `  "${q}") f=xpu-${f} ;;`)
    .join("\n")}
  *) echo "stand-in xpu-smi: unexpected arguments: $*" | tee -a "$dir/unexpected" >&2; exit 97 ;;
esac
[ -f "$dir/$f.json" ] || { echo "stand-in xpu-smi: no answer for: $*" | tee -a "$dir/unexpected" >&2; exit 98; }
cat "$dir/$f.json"
`;

const XPU_SMI_FIXTURES = path.join(PACKAGE_ROOT, "test", "fixtures", "xpu-smi-health");

/** An xpu-smi answer of test/fixtures/xpu-smi-health, every bus id in it moved to the run's domain. */
export function xpuAnswer(file: string, domain: string): string {
    return fs.readFileSync(path.join(XPU_SMI_FIXTURES, file), "utf8").replace(/"0000:([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])"/g, `"${domain}:$1"`);
}

/**
 * What nvidia-smi answers the watcher's two GPU queries on the machine a `-q` capture was taken
 * on (derived, test/fixtures/gpu-health/source.md): per GPU its bus id and the sum of its volatile
 * uncorrectable ECC counts (`[N/A]` where the capture has none), and whether a row remap failed.
 * A refusal in place of a capture (a GPU fallen off the bus) is the answer to both.
 */
export function smiAnswers(q: string): { gpus: string; remap: string } {
    const sections = q.split(/^(?=GPU [0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$)/m).filter((t) => t.startsWith("GPU "));
    if (sections.length === 0) return { gpus: q, remap: q };
    const rows = sections.map((text) => {
        const bus = /^GPU (\S+)/.exec(text)![1];
        const volatile = /^ {8}Volatile\n((?: {12}.*\n)+)/m.exec(text)?.[1];
        const counts = volatile ? [...volatile.matchAll(/Uncorrectable[^:]*: (\d+)/g)].map((m) => Number(m[1])) : [];
        const ecc = counts.length > 0 ? String(counts.reduce((a, b) => a + b, 0)) : "[N/A]";
        const failure = /Remapping Failure Occurred\s+: (\w+)/.exec(text)?.[1] ?? "[N/A]";
        return { gpus: `${bus}, ${ecc}`, remap: `${bus}, ${failure}` };
    });
    return { gpus: rows.map((r) => r.gpus).join("\n") + "\n", remap: rows.map((r) => r.remap).join("\n") + "\n" };
}

/** Puts the answers of `q` (a capture, or a refusal with its exit code) in folder `dir`, each file replaced whole. */
export function putAnswers(dir: string, q: string, exit = 0, apps = ""): void {
    const answers = smiAnswers(q);
    const put = (name: string, text: string) => {
        fs.writeFileSync(path.join(dir, `${name}.new`), text);
        fs.renameSync(path.join(dir, `${name}.new`), path.join(dir, name));
    };
    put("gpus.txt", answers.gpus);
    put("gpus.exit", String(exit));
    put("remap.txt", answers.remap);
    put("remap.exit", String(exit));
    put("apps.txt", apps);
}

/**
 * A Concourse worker as it behaves on the signals: running; SIGUSR1 lands it, SIGUSR2 retires
 * it, and it exits 0. It writes its state to `state`. Landing takes a while (a real 8.2.5 worker
 * without builds took about 50 s from landing to landed): longer than the tests' settle time.
 */
export function standinWorker(state: string): string {
    return `#!/bin/bash
state=${state}
echo running >"$state"
trap 'echo landing >"$state"; sleep 5; echo landed >"$state"; exit 0' USR1
trap 'echo retiring >"$state"; sleep 5; echo retired >"$state"; exit 0' USR2
while :; do sleep 0.1; done
`;
}

/** systemd for one unit: is-active, kill --kill-whom=main --signal=SIG, start; anything else is refused. */
const STANDIN_SYSTEMCTL = `#!/bin/bash
dir=\${GH_SYSTEMD:?}
echo "$*" >>"$dir/calls"
alive() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
case "$1" in
  is-active) [ "$2" = --quiet ] && shift; alive "$2" ;;
  kill)
    [ "$2" = --kill-whom=main ] || { echo "stand-in systemctl: unexpected: $*" >>"$dir/unexpected"; exit 97; }
    sig=\${3#--signal=}; alive "$4" || exit 1
    kill -s "\${sig#SIG}" "$(cat "$dir/$4.pid")" ;;
  start)
    alive "$2" && exit 0
    setsid "$dir/worker" >/dev/null 2>&1 </dev/null &
    echo $! >"$dir/$2.pid" ;;
  *) echo "stand-in systemctl: unexpected: $*" >>"$dir/unexpected"; exit 97 ;;
esac
`;

export const WORKER_UNIT = "concourse-worker.service";

/** One watcher under test, with its stand-ins, its config and its status folder. */
export class WatcherRun {
    readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-health-"));
    readonly answers = path.join(this.dir, "answers");
    readonly systemd = path.join(this.dir, "systemd");
    readonly state = path.join(this.dir, "state");
    readonly root = path.join(this.dir, "root");
    readonly log = path.join(this.dir, "watcher.log");
    /** The kernel's records the watcher reads; undefined: the real kernel log. */
    readonly kmsg?: KmsgSeam;
    private child?: ChildProcess;
    private config?: string;

    /** `realKernelLog`: the watcher reads /dev/kmsg itself, as on a host. */
    constructor(opts: { realKernelLog?: boolean } = {}) {
        for (const d of [this.answers, this.systemd, path.join(this.dir, "bin"), this.root]) fs.mkdirSync(d, { recursive: true });
        if (!opts.realKernelLog) this.kmsg = new KmsgSeam(this.dir);
        fs.writeFileSync(path.join(this.dir, "bin", "nvidia-smi"), STANDIN_NVIDIA_SMI, { mode: 0o755 });
        fs.writeFileSync(path.join(this.dir, "bin", "systemctl"), STANDIN_SYSTEMCTL, { mode: 0o755 });
        fs.writeFileSync(path.join(this.systemd, "worker"), standinWorker(path.join(this.systemd, `${WORKER_UNIT}.state`)), { mode: 0o755 });
    }

    /** Installs the stand-in xpu-smi (absent until then, as on a host without it) with these answers. */
    xpuSmi(answers: { discovery: string; health: string }): void {
        fs.writeFileSync(path.join(this.dir, "bin", "xpu-smi"), STANDIN_XPU_SMI, { mode: 0o755 });
        for (const [name, text] of Object.entries(answers)) {
            fs.writeFileSync(path.join(this.answers, `xpu-${name}.new`), text);
            fs.renameSync(path.join(this.answers, `xpu-${name}.new`), path.join(this.answers, `xpu-${name}.json`));
        }
    }

    /** What nvidia-smi answers, from a `-q` capture (and its exit code), and `--query-compute-apps`. */
    answer(q: string, exit = 0, apps = ""): void {
        putAnswers(this.answers, q, exit, apps);
    }

    /** A driver's line, as a kernel record the watcher reads. */
    kernel(line: string): void {
        if (!this.kmsg) throw new Error("this watcher reads the real kernel log, where only the kernel writes");
        this.kmsg.record(line);
    }

    /** Starts the stand-in worker unit (it registers running). */
    startWorker(): void {
        this.systemctl(["start", WORKER_UNIT]);
    }

    systemctl(args: string[]): number | null {
        return spawnSync(path.join(this.dir, "bin", "systemctl"), args, { env: this.env() }).status;
    }

    /** The worker as `fly workers` would show it: running, landing, landed, retiring, retired. */
    workerState(): string {
        return fs.readFileSync(path.join(this.systemd, `${WORKER_UNIT}.state`), "utf8").trim();
    }

    private env(): NodeJS.ProcessEnv {
        return {
            ...process.env,
            PATH: `${path.join(this.dir, "bin")}:${process.env.PATH}`,
            GH_ANSWERS: this.answers,
            GH_SYSTEMD: this.systemd,
            GPU_WORKERS_ROOT: this.root,
            ...(this.kmsg ? { GPU_WORKERS_KMSG: this.kmsg.path } : {}),
        };
    }

    /** Starts the watcher with the config the chain renders for `inventory` and these terms; resolves once it watches. */
    async start(inventory: GpuInventoryInput, terms: Omit<GpuHealthTerms, "inventory">): Promise<void> {
        const settings = planGpuHealth({ inventory: inventorySchema.parse(inventory), workerUnit: WORKER_UNIT, ...terms });
        if (!settings) throw new Error("no watcher planned");
        this.config = path.join(this.dir, "gpu-health.conf");
        fs.writeFileSync(this.config, renderHealthConfig(settings));
        await this.spawnWatcher();
    }

    private async spawnWatcher(): Promise<void> {
        const started = this.logText().split("gpu-health: watching").length;
        const out = fs.openSync(this.log, "a");
        this.child = spawn("bash", [WATCHER, "--config", this.config!, "--state-dir", this.state], {
            env: this.env(),
            stdio: ["ignore", out, out],
            detached: true,
        });
        fs.closeSync(out);
        await this.until(() => this.logText().split("gpu-health: watching").length > started, 10_000, "the watcher to start");
    }

    /** Stops the watcher (as systemd's Restart=always would find it gone) and starts it again on the same config and status folder. */
    async restart(): Promise<void> {
        await this.stopWatcher();
        await this.spawnWatcher();
    }

    private async stopWatcher(): Promise<void> {
        const child = this.child;
        if (child?.pid && child.exitCode === null && child.signalCode === null) {
            const exited = new Promise((r) => child.once("exit", r));
            try {
                process.kill(-child.pid, "SIGTERM");
                await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
            } catch {
                // already gone
            }
        }
    }

    /** Whether a process of the watcher's (its process group) holds the real /dev/kmsg open. */
    readsKernelLog(): boolean {
        const group = this.child?.pid;
        for (const pid of fs.readdirSync("/proc").filter((p) => /^[0-9]+$/.test(p))) {
            try {
                const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
                if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) !== group) continue;
                if (fs.readdirSync(`/proc/${pid}/fd`).some((fd) => fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === "/dev/kmsg")) return true;
            } catch {
                // gone meanwhile
            }
        }
        return false;
    }

    logText(): string {
        return fs.existsSync(this.log) ? fs.readFileSync(this.log, "utf8") : "";
    }

    status(): string {
        return fs.readFileSync(path.join(this.state, "status"), "utf8").trim();
    }

    /** gpus.tsv's rows, each split on tabs. */
    rows(): string[][] {
        return fs
            .readFileSync(path.join(this.state, "gpus.tsv"), "utf8")
            .replace(/\n$/, "")
            .split("\n")
            .map((l) => l.split("\t"));
    }

    /** What a stand-in was asked and refused. */
    unexpected(): string {
        return [path.join(this.answers, "unexpected"), path.join(this.systemd, "unexpected")]
            .map((f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : ""))
            .join("");
    }

    async until(ok: () => boolean, ms: number, what: string): Promise<number> {
        return waitFor(ok, ms, what, () => `the watcher said:\n${this.logText()}`, 100);
    }

    /** Stops the watcher (its group: its kernel log reader too) and the stand-in worker, and removes the folder. */
    async stop(): Promise<void> {
        await this.stopWatcher();
        const pidFile = path.join(this.systemd, `${WORKER_UNIT}.pid`);
        if (fs.existsSync(pidFile)) {
            try {
                process.kill(Number(fs.readFileSync(pidFile, "utf8")), "SIGKILL");
            } catch {
                // already exited
            }
        }
        this.kmsg?.close();
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** Polls `ok` every `everyMs` until it holds (a throw counts as not yet), and returns how long that took; past `ms` it fails with `said()`. */
export async function waitFor(ok: () => boolean, ms: number, what: string, said: () => string, everyMs: number): Promise<number> {
    const start = Date.now();
    for (;;) {
        try {
            if (ok()) return Date.now() - start;
        } catch {
            // not there yet
        }
        if (Date.now() - start > ms) throw new Error(`waited ${ms} ms for ${what}; ${said()}`);
        await new Promise((r) => setTimeout(r, everyMs));
    }
}
