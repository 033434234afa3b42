/**
 * One rack's stack, run in a process of its own (the fleet driver forks it): the stack is made
 * where it is new (its config file the driver wrote already), and the operation runs as one run
 * of the CLI, with the arguments the Automation API's Stack gives it and its event log read as
 * the API reads it; progress and the result go back to the driver as MemberReport messages, the
 * CLI's output to the rack's log file. A lock a dead run left is cleared (`pulumi cancel`).
 *
 * Not the API's Stack itself: loading it costs this process about 1 CPU s, and its `up` runs the
 * CLI three times more after the update (the stack's outputs twice and its history) for results
 * the fleet never reads; a rack pays both on every operation.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import type { EngineEvent, OpMap } from "@pulumi/pulumi/automation";
import { EventLogTail } from "./event-log";
import type { MemberJob, MemberReport, Operation, PlannedChange } from "./protocol";

/** Ops of a preview that are no change of their own: a replace comes as its halves too, counted once as the replace. */
const NOT_A_CHANGE = new Set(["same", "create-replacement", "delete-replaced", "discard-replaced", "read-replacement"]);

/** Each operation's command, as the Automation API runs it. */
const COMMANDS: Record<Operation, string[]> = {
    up: ["up", "--yes", "--skip-preview"],
    preview: ["preview"],
    refresh: ["refresh", "--yes", "--skip-preview"],
    destroy: ["destroy", "--yes", "--skip-preview"],
};

/** The stack itself and its providers: no resource on a host. */
function isBookkeeping(type: string): boolean {
    return type === "pulumi:pulumi:Stack" || type.startsWith("pulumi:providers:");
}

function report(message: MemberReport): void {
    process.send!(message);
}

class CliError extends Error {
    constructor(
        command: string,
        readonly stderr: string,
    ) {
        super(`pulumi ${command} failed: ${stderr}`);
    }
}

/** Runs the CLI on the job's stack in its work folder; its output goes to `log`. */
function pulumi(job: MemberJob, args: string[], log: fs.WriteStream): Promise<void> {
    return new Promise((resolve, reject) => {
        const child = spawn("pulumi", [...args, "--stack", job.stackName, "--non-interactive", "--color", "never"], {
            cwd: job.workDir,
            // As the Automation API runs it: --event-log is a flag of the debug commands.
            env: { ...process.env, PULUMI_AUTOMATION_API: "true", PULUMI_DEBUG_COMMANDS: "true", PULUMI_SKIP_UPDATE_CHECK: "true" },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => log.write(d));
        child.stderr.on("data", (d: Buffer) => {
            stderr += d.toString();
            log.write(d);
        });
        child.on("error", reject);
        child.on("close", (code, signal) => (code === 0 ? resolve() : reject(new CliError(args[0], stderr.trim() || `ended by ${signal ?? `exit ${code}`}`))));
    });
}

/**
 * The holders of the locks an error names, where every one is a process of this machine that is
 * gone (the diy backend's message names each as "created by user@host (pid N)"); null where the
 * error is no lock, or any holder may be alive or is another machine's.
 */
export function deadLockHolders(message: string, hostname = os.hostname()): number[] | null {
    if (!/the stack is currently locked by \d+ lock/.test(message)) return null;
    const holders = [...message.matchAll(/created by [^@\s]+@(\S+) \(pid (\d+)\)/g)];
    if (holders.length === 0 || holders.some((m) => m[1] !== hostname || alive(Number(m[2])))) return null;
    return [...new Set(holders.map((m) => Number(m[2])))];
}

function alive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (e) {
        return (e as NodeJS.ErrnoException).code !== "ESRCH";
    }
}

/** The last lines of an error worth showing: the CLI's own, without its usage boilerplate. */
function errorLines(e: unknown): string[] {
    const text = e instanceof CliError ? e.stderr : e instanceof Error ? e.message : String(e);
    return text
        .split("\n")
        .map((l) => l.trimEnd())
        .filter((l) => l.trim() !== "")
        .slice(-8);
}

/** The operation, once: the changes its summary counts, and (a preview) what it plans. */
async function operate(job: MemberJob, log: fs.WriteStream): Promise<{ changes: OpMap; planned: PlannedChange[] }> {
    const events = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gw-fleet-events-")), "events.json");
    let done = 0;
    let changes: OpMap = {};
    const planned: PlannedChange[] = [];
    const tail = new EventLogTail(events, (event: EngineEvent) => {
        if (event.resourcePreEvent) {
            const { op, urn, type, diffs } = event.resourcePreEvent.metadata;
            // A preview's events are all planning; a provider's update (the config it is given changed) changes nothing on a host.
            if (job.operation === "preview" && !NOT_A_CHANGE.has(op) && !isBookkeeping(type)) planned.push({ op, urn, type, diffs: diffs ?? [] });
            report({ kind: "step", done, current: `${op} ${urn.split("::").pop()}` });
        }
        if (event.resOutputsEvent) report({ kind: "step", done: ++done, current: "" });
        if (event.summaryEvent) changes = event.summaryEvent.resourceChanges;
    });
    try {
        await pulumi(job, [...COMMANDS[job.operation], "--event-log", events, "--exec-kind", "auto.local"], log);
    } finally {
        tail.finish();
        fs.rmSync(path.dirname(events), { recursive: true, force: true });
    }
    return { changes, planned };
}

async function run(job: MemberJob): Promise<MemberReport> {
    const log = fs.createWriteStream(job.logFile, { flags: "a" });
    log.write(`# ${new Date().toISOString()} ${job.operation} ${job.stackName}\n`);
    try {
        if (!job.made) await pulumi(job, ["stack", "init"], log);
        let result;
        try {
            result = await operate(job, log);
        } catch (e) {
            const pids = deadLockHolders(e instanceof Error ? e.message : String(e));
            if (pids === null) throw e;
            report({
                kind: "note",
                text: `the stack was locked by a run that is gone (pid ${pids.join(", ")} of this machine): ran pulumi cancel, then ${job.operation} again`,
            });
            await pulumi(job, ["cancel", "--yes"], log);
            result = await operate(job, log);
        }
        return {
            kind: "finished",
            ok: true,
            changes: Object.fromEntries(Object.entries(result.changes).filter(([, n]) => (n ?? 0) > 0)),
            planned: result.planned,
        };
    } catch (e) {
        log.write(`\n# failed: ${e instanceof Error ? e.message : String(e)}\n`);
        return { kind: "finished", ok: false, error: errorLines(e) };
    } finally {
        await new Promise((resolve) => log.end(resolve));
    }
}

process.once("message", (job: MemberJob) => {
    report({ kind: "started" });
    void run(job)
        .catch((e: unknown): MemberReport => ({ kind: "finished", ok: false, error: errorLines(e) }))
        .then((result) => process.send!(result, () => process.exit(0)));
});
