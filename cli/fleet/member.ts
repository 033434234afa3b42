/**
 * One rack's stack, run in a process of its own (the fleet driver forks it): the stack is made or
 * selected in the rack's work folder, given the fleet's config, and the operation runs through the
 * Automation API; progress and the result go back to the driver as MemberReport messages, the
 * engine's output to the rack's log file. A lock a dead run left is cleared (`pulumi cancel`).
 */
import * as fs from "fs";
import * as os from "os";
import { EngineEvent, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import type { MemberJob, MemberReport, PlannedChange } from "./protocol";

/** Ops of a preview that are no change of their own: a replace comes as its halves too, counted once as the replace. */
const NOT_A_CHANGE = new Set(["same", "create-replacement", "delete-replaced", "discard-replaced", "read-replacement"]);

/** The stack itself and its providers: no resource on a host. */
function isBookkeeping(type: string): boolean {
    return type === "pulumi:pulumi:Stack" || type.startsWith("pulumi:providers:");
}

function report(message: MemberReport): void {
    process.send!(message);
}

/** The stack's config made exactly the job's: keys the fleet no longer sets go; nothing is written where nothing differs (each write is a run of the CLI). */
async function configure(stack: Stack, job: MemberJob): Promise<void> {
    const now = await stack.getAllConfig();
    const stale = Object.keys(now).filter((k) => !(k in job.config));
    if (stale.length > 0) await stack.removeAllConfig(stale);
    const differs = Object.entries(job.config).some(([k, v]) => now[k]?.value !== v.value || Boolean(now[k]?.secret) !== Boolean(v.secret));
    if (differs) await stack.setAllConfig(job.config);
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

/** The last lines of an error worth showing: the engine's own, without its usage boilerplate. */
function errorLines(e: unknown): string[] {
    const text = e instanceof Error ? e.message : String(e);
    const stderr = /stderr: ([\s\S]*)/.exec(text)?.[1] ?? text;
    return stderr
        .split("\n")
        .map((l) => l.trimEnd())
        .filter((l) => l.trim() !== "")
        .slice(-8);
}

async function run(job: MemberJob): Promise<MemberReport> {
    const log = fs.createWriteStream(job.logFile, { flags: "a" });
    log.write(`# ${new Date().toISOString()} ${job.operation} ${job.stackName}\n`);
    const stack = await LocalWorkspace.createOrSelectStack({ stackName: job.stackName, workDir: job.workDir });
    await configure(stack, job);
    let done = 0;
    const planned: PlannedChange[] = [];
    const onEvent = (event: EngineEvent) => {
        if (event.resourcePreEvent) {
            const { op, urn, type, diffs } = event.resourcePreEvent.metadata;
            // A preview's events are all planning.
            // A provider's update (the config it is given changed) changes nothing on a host.
            if (job.operation === "preview" && !NOT_A_CHANGE.has(op) && !isBookkeeping(type)) planned.push({ op, urn, type, diffs: diffs ?? [] });
            report({ kind: "step", done, current: `${op} ${urn.split("::").pop()}` });
        }
        if (event.resOutputsEvent) report({ kind: "step", done: ++done, current: "" });
    };
    const common = { onOutput: (out: string) => log.write(out), onEvent, color: "never" as const };
    const operate = async () => {
        switch (job.operation) {
            case "up":
                return (await stack.up(common)).summary.resourceChanges;
            case "preview":
                return (await stack.preview(common)).changeSummary;
            case "refresh":
                return (await stack.refresh(common)).summary.resourceChanges;
            case "destroy":
                return (await stack.destroy(common)).summary.resourceChanges;
        }
    };
    try {
        let changes;
        try {
            changes = await operate();
        } catch (e) {
            const pids = deadLockHolders(e instanceof Error ? e.message : String(e));
            if (pids === null) throw e;
            report({
                kind: "note",
                text: `the stack was locked by a run that is gone (pid ${pids.join(", ")} of this machine): ran pulumi cancel, then ${job.operation} again`,
            });
            await stack.cancel();
            changes = await operate();
        }
        return {
            kind: "finished",
            ok: true,
            changes: Object.fromEntries(Object.entries(changes ?? {}).filter(([, n]) => (n ?? 0) > 0)),
            planned,
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
