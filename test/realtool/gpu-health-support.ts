/**
 * What the GPU health watcher's test runs it with: the real kernel log (lines written to
 * /dev/kmsg, read back by the watcher's own dmesg), the config the chain renders, and stand-ins
 * for what cannot run here: nvidia-smi (answering with the discovery fixtures' real captures,
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

/** Why the watcher's test cannot run here, or undefined: it writes the real kernel log. */
export function kmsgProblem(): string | undefined {
    if (process.getuid?.() !== 0) return "writing /dev/kmsg needs root";
    try {
        fs.accessSync("/dev/kmsg", fs.constants.W_OK | fs.constants.R_OK);
    } catch {
        return "/dev/kmsg is not readable and writable here";
    }
    const help = spawnSync("dmesg", ["--help"], { encoding: "utf8" });
    if (!/--follow-new/.test(help.stdout ?? "")) return "this dmesg has no --follow-new (util-linux 2.38 has)";
    return undefined;
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
        .replace("{pci}", `${domain}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase());
}

/** Puts `line` in the kernel log, at warning level as the drivers print these. */
export function writeKmsg(line: string): void {
    fs.writeFileSync("/dev/kmsg", `<4>${line}\n`);
}

/** Where the stand-in nvidia-smi reads its answers when GH_ANSWERS is not set (in an instance). */
export const ANSWERS_IN_INSTANCE = "/var/lib/gpu-health-answers";

export const STANDIN_NVIDIA_SMI = `#!/bin/sh
# stand-in nvidia-smi: answers from files the test puts in $GH_ANSWERS; any other command line is refused
dir=\${GH_ANSWERS:-${ANSWERS_IN_INSTANCE}}
case "$*" in
  "-q") f=q ;;
  "--query-compute-apps=gpu_bus_id,pid --format=csv,noheader") f=apps ;;
  *) echo "stand-in nvidia-smi: unexpected arguments: $*" | tee -a "$dir/unexpected" >&2; exit 97 ;;
esac
[ -f "$dir/$f.txt" ] || { echo "stand-in nvidia-smi: no answer for: $*" | tee -a "$dir/unexpected" >&2; exit 98; }
cat "$dir/$f.txt"
[ -f "$dir/$f.exit" ] && exit "$(cat "$dir/$f.exit")"
exit 0
`;

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
    private child?: ChildProcess;

    constructor() {
        for (const d of [this.answers, this.systemd, path.join(this.dir, "bin"), this.root]) fs.mkdirSync(d, { recursive: true });
        fs.writeFileSync(path.join(this.dir, "bin", "nvidia-smi"), STANDIN_NVIDIA_SMI, { mode: 0o755 });
        fs.writeFileSync(path.join(this.dir, "bin", "systemctl"), STANDIN_SYSTEMCTL, { mode: 0o755 });
        fs.writeFileSync(path.join(this.systemd, "worker"), standinWorker(path.join(this.systemd, `${WORKER_UNIT}.state`)), { mode: 0o755 });
    }

    /** What nvidia-smi answers `-q` (and exits with) and `--query-compute-apps`. */
    answer(q: string, exit = 0, apps = ""): void {
        fs.writeFileSync(path.join(this.answers, "q.txt.new"), q);
        fs.renameSync(path.join(this.answers, "q.txt.new"), path.join(this.answers, "q.txt"));
        fs.writeFileSync(path.join(this.answers, "q.exit"), String(exit));
        fs.writeFileSync(path.join(this.answers, "apps.txt"), apps);
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
        };
    }

    /** Starts the watcher with the config the chain renders for `inventory` and these terms; resolves once it watches. */
    async start(inventory: GpuInventoryInput, terms: Omit<GpuHealthTerms, "inventory">): Promise<void> {
        const settings = planGpuHealth({ inventory: inventorySchema.parse(inventory), workerUnit: WORKER_UNIT, ...terms });
        if (!settings) throw new Error("no watcher planned");
        const config = path.join(this.dir, "gpu-health.conf");
        fs.writeFileSync(config, renderHealthConfig(settings));
        const out = fs.openSync(this.log, "a");
        this.child = spawn("bash", [WATCHER, "--config", config, "--state-dir", this.state], { env: this.env(), stdio: ["ignore", out, out], detached: true });
        fs.closeSync(out);
        await this.until(() => this.logText().includes("gpu-health: watching"), 10_000, "the watcher to start");
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

    /** Stops the watcher (its group: its dmesg too) and the stand-in worker, and removes the folder. */
    async stop(): Promise<void> {
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
        const pidFile = path.join(this.systemd, `${WORKER_UNIT}.pid`);
        if (fs.existsSync(pidFile)) {
            try {
                process.kill(Number(fs.readFileSync(pidFile, "utf8")), "SIGKILL");
            } catch {
                // already exited
            }
        }
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
