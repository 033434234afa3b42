#!/usr/bin/env node
/**
 * npm run fleet -- (the package's bin gpu-workers-fleet) up|preview|destroy|refresh|status --stack NAME [--racks a,b] [--failed]
 * [--expect-no-changes] [--project-dir DIR]: drives one Pulumi stack per rack, `<stack>-<rack>`,
 * from the one stack config, through the Automation API. Each rack runs in a process and work
 * folder of its own, at most `gpu-workers:fleet.parallel` at once, plugins prepared once before
 * any starts; a host that changed rack has its state moved first. The exit code is 1 when any rack
 * failed (or, with --expect-no-changes, would change), 2 for a usage or config mistake.
 */
import { execFileSync, fork, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Deployment, LocalWorkspace } from "@pulumi/pulumi/automation";
import { parse } from "yaml";
import { WEB_PART } from "../stacks/config/fleet-schema";
import { StackConfigError } from "../stacks/config/stack";
import { FleetDisplay, RackRow, summaryTable, table } from "./fleet/display";
import { FleetPlan, planFleet, Rack } from "./fleet/members";
import { Move, moveState, movesOf } from "./fleet/moves";
import { anyChange, hostOf, previewSummary } from "./fleet/preview-summary";
import { MemberJob, MemberReport, Operation, OPERATIONS, PlannedChange } from "./fleet/protocol";
import { failedRacks, readRecord, writeRecord } from "./fleet/record";
import { memberStackFile, projectOf, readFleetStackFile, stackFilePath, writeMemberStackFile } from "./fleet/stack-file";
import { fleetDir, prepareWorkDir, workDirOf } from "./fleet/workdir";

const USAGE =
    "usage: gpu-workers-fleet (in this repo: npm run fleet --) up|preview|destroy|refresh|status --stack NAME [--racks a,b] [--failed] [--expect-no-changes] [--project-dir DIR]";

interface Args {
    operation: Operation | "status";
    stack: string;
    racks?: string[];
    failed: boolean;
    expectNoChanges: boolean;
    projectDir: string;
}

class UsageError extends Error {}

export function parseArgs(argv: string[]): Args {
    const [operation, ...rest] = argv;
    if (!operation || ![...OPERATIONS, "status"].includes(operation))
        throw new UsageError(`expected an operation (${[...OPERATIONS, "status"].join(", ")}), got ${operation ?? "none"}`);
    const args: Partial<Args> = { operation: operation as Args["operation"], failed: false, expectNoChanges: false };
    for (let i = 0; i < rest.length; i++) {
        const flag = rest[i];
        const next = () => {
            const v = rest[++i];
            if (v === undefined || v.startsWith("--")) throw new UsageError(`${flag} needs a value`);
            return v;
        };
        if (flag === "--stack") args.stack = next();
        else if (flag === "--racks")
            args.racks = next()
                .split(",")
                .filter((r) => r !== "");
        else if (flag === "--project-dir") args.projectDir = next();
        else if (flag === "--failed") args.failed = true;
        else if (flag === "--expect-no-changes") args.expectNoChanges = true;
        else throw new UsageError(`unknown argument ${flag}`);
    }
    if (!args.stack) throw new UsageError("--stack NAME is required");
    if (args.expectNoChanges && operation !== "preview") throw new UsageError("--expect-no-changes is for preview");
    if (args.failed && args.racks) throw new UsageError("give --racks or --failed, not both");
    args.projectDir = path.resolve(args.projectDir ?? process.cwd());
    if (!fs.existsSync(path.join(args.projectDir, "Pulumi.yaml"))) throw new UsageError(`no Pulumi.yaml in ${args.projectDir} (give --project-dir)`);
    return args as Args;
}

/**
 * The fleet's members: the web's stack where the config has a web (or had one: its stack is then
 * converged empty), the racks the config names, and those a rack's stack was made for before
 * whose hosts have all gone (they are converged empty). `made`: the member stacks the backend holds.
 */
function allRacks(plan: FleetPlan, args: Args, made: Map<string, unknown>): Rack[] {
    const known = new Set([args.stack, ...plan.racks.map((r) => r.stack), plan.webStack]);
    const gone = [...made.keys()]
        .filter((member) => !known.has(member) && member.startsWith(`${args.stack}-`))
        .sort()
        .map((member) => ({ name: member.slice(args.stack.length + 1), stack: member, hosts: [] }));
    const web: Rack[] = plan.web ? [plan.web] : made.has(plan.webStack) ? [{ name: WEB_PART, stack: plan.webStack, hosts: [], web: true }] : [];
    return [...web, ...plan.racks, ...gone];
}

/** A stack's state as the backend holds it, its secrets left encrypted (no secrets manager is needed); undefined where it cannot be read. */
function exportedState(name: string, projectDir: string): Deployment | undefined {
    const r = spawnSync("pulumi", ["stack", "export", "--stack", name, "--non-interactive"], { cwd: projectDir, encoding: "utf8", maxBuffer: 1 << 30 });
    return r.status === 0 ? (JSON.parse(r.stdout) as Deployment) : undefined;
}

/**
 * The fleet a stack says it is a member of: its state's output `fleetMember` (the program exports
 * it), or, for a stack this machine made that has not run yet, its work folder's config.
 */
function fleetOf(name: string, state: Deployment | undefined, plan: FleetPlan): unknown {
    const resources = (state?.deployment as { resources?: { type: string; outputs?: { fleetMember?: { fleet?: unknown } } }[] } | undefined)?.resources ?? [];
    const exported = resources.find((r) => r.type === "pulumi:pulumi:Stack")?.outputs?.fleetMember?.fleet;
    if (exported !== undefined) return exported;
    const file = stackFilePath(workDirOf(plan.projectDir, plan.stack, name), name);
    if (!fs.existsSync(file)) return undefined;
    const local = (parse(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null)?.config?.["gpu-workers:fleetMember"];
    try {
        return typeof local === "string" ? (JSON.parse(local) as { fleet?: unknown }).fleet : undefined;
    } catch {
        return undefined;
    }
}

/**
 * The fleet's member stacks the backend holds, each with its state: those that say they are this
 * fleet's (fleetOf). Another stack that has a member's name (`prod-eu` of its own, beside a rack
 * eu of `prod`) is never taken over: the run stops, naming it.
 */
async function madeMembers(workspace: LocalWorkspace, plan: FleetPlan): Promise<Map<string, Deployment | undefined>> {
    const names = (await workspace.listStacks())
        .map((s) => s.name.split("/").pop()!)
        .filter((name) => name === plan.webStack || (name !== plan.stack && name.startsWith(`${plan.stack}-`)));
    const members = new Map<string, Deployment | undefined>();
    for (const name of names) {
        const state = exportedState(name, plan.projectDir);
        if (fleetOf(name, state, plan) === plan.stack) members.set(name, state);
        else if (plan.racks.some((r) => r.stack === name) || (plan.web && plan.webStack === name))
            throw new UsageError(
                `stack ${name} exists and is no member of fleet ${plan.stack} (it says no fleet, or another): the fleet would take it over; name the rack (or fleet.webStack) otherwise, or remove that stack`,
            );
    }
    return members;
}

/**
 * The order members run in: the web's stack first, then the racks, whose workers register with it;
 * on destroy, and where the web is going, the racks first, so that their workers retire through it.
 */
function phasesOf(members: Rack[], operation: Operation): Rack[][] {
    const web = members.filter((m) => m.web);
    const racks = members.filter((m) => !m.web);
    const webLast = operation === "destroy" || web.some((w) => w.hosts.length === 0);
    return (webLast ? [racks, web] : [web, racks]).filter((phase) => phase.length > 0);
}

/** The racks this run takes: --racks, --failed (those that failed last time) or all. */
function selected(racks: Rack[], args: Args): Rack[] {
    if (args.racks) {
        const unknown = args.racks.filter((r) => !racks.some((k) => k.name === r));
        if (unknown.length > 0)
            throw new UsageError(`--racks: no rack ${unknown.join(", ")} in stack ${args.stack} (its racks: ${racks.map((r) => r.name).join(", ")})`);
        return racks.filter((r) => args.racks!.includes(r.name));
    }
    if (args.failed) {
        const failed = failedRacks(readRecord(args.projectDir, args.stack, args.operation));
        return racks.filter((r) => failed.includes(r.name));
    }
    return racks;
}

function resourceCount(deployment: Deployment | undefined): number {
    return ((deployment?.deployment as { resources?: unknown[] } | undefined)?.resources ?? []).length;
}

/**
 * Plugins installed once, before any rack starts: concurrent installs race (pulumi/pulumi#22784).
 * Where the environment already turns automatic acquisition off, the plugins are taken as present.
 */
function preparePlugins(workDir: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    if (env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION !== "true") {
        execFileSync("pulumi", ["install", "--no-dependencies", "--non-interactive", "--color", "never"], {
            cwd: workDir,
            env,
            stdio: ["ignore", "inherit", "inherit"],
        });
    }
    return { ...env, PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true" };
}

interface RackResult {
    row: RackRow;
    planned: PlannedChange[];
}

/** Runs one rack's operation in a process of its own; resolves when it has ended, however it ended. */
function runRack(job: MemberJob, row: RackRow, display: FleetDisplay, env: NodeJS.ProcessEnv): Promise<RackResult> {
    return new Promise((resolve) => {
        const child = fork(path.join(__dirname, "fleet", "member.js"), [], { env, stdio: ["ignore", "ignore", "pipe", "ipc"] });
        let planned: PlannedChange[] = [];
        let stderr = "";
        child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
        row.state = "running";
        row.startedAt = Date.now();
        display.update();
        child.on("message", (m: MemberReport) => {
            if (m.kind === "step") Object.assign(row, { done: m.done, current: m.current || row.current });
            else if (m.kind === "note") display.note(row.rack, m.text);
            else if (m.kind === "finished") {
                row.state = m.ok ? "done" : "failed";
                if (m.ok) {
                    row.changes = m.changes;
                    planned = m.planned;
                } else row.error = m.error;
            }
            if (m.kind !== "note") display.update();
        });
        child.on("exit", (code, signal) => {
            if (row.state === "running") {
                row.state = "failed";
                row.error = [
                    ...stderr.trim().split("\n").slice(-4),
                    `the rack's process ended (${signal ?? `exit ${code}`}) before its ${job.operation} finished`,
                ];
            }
            row.finishedAt = Date.now();
            display.update();
            resolve({ row, planned });
        });
        child.send(job);
    });
}

/** Runs `work` over `items`, at most `limit` at once. */
async function pool<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
    const results = new Array<R>(items.length);
    let next = 0;
    const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
        while (next < items.length) {
            const i = next++;
            results[i] = await work(items[i]);
        }
    });
    await Promise.all(lanes);
    return results;
}

function status(racks: Rack[], args: Args, made: Map<string, unknown>): void {
    const last = (op: string, rack: string) => {
        const r = readRecord(args.projectDir, args.stack, op)?.racks[rack];
        return r === undefined ? "" : r.ok ? "ok" : "FAILED";
    };
    console.log(
        table(
            ["RACK", "STACK", "HOSTS", "MADE", ...OPERATIONS.map((op) => `LAST ${op.toUpperCase()}`)],
            racks.map((r) => [r.name, r.stack, String(r.hosts.length), made.has(r.stack) ? "yes" : "no", ...OPERATIONS.map((op) => last(op, r.name))]),
        ).join("\n"),
    );
}

async function main(args: Args): Promise<number> {
    // Not selected: the project's current stack stays the person's own.
    const workspace = await LocalWorkspace.create({ workDir: args.projectDir });
    // The engine's version is checked once, by the workspace above; each later workspace would run the CLI again for it.
    process.env.PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK = "true";
    const config = await workspace.getAllConfig(args.stack).catch((e: Error) => {
        throw new UsageError(`no stack ${args.stack} in ${args.projectDir}: ${e.message.split("\n").find((l) => l.includes("error")) ?? e.message}`);
    });
    const plan = planFleet(config, args.stack, args.projectDir);
    const made = await madeMembers(workspace, plan);
    const racks = allRacks(plan, args, made);
    if (args.operation === "status") return (status(racks, args, made), 0);
    const operation = args.operation;
    const chosen = selected(racks, args);
    if (chosen.length === 0) {
        console.log(args.failed ? `no rack failed at the last fleet ${operation} of ${args.stack}` : `stack ${args.stack} has no racks`);
        return 0;
    }
    const logs = path.join(fleetDir(args.projectDir, args.stack), "logs");
    fs.mkdirSync(logs, { recursive: true });
    const workDirs = new Map(racks.map((r) => [r.stack, prepareWorkDir(args.projectDir, args.stack, r.stack)]));
    // Each member's config file, from the fleet's as written: made before any member's stack is.
    const project = projectOf(args.projectDir);
    const fleetFile = readFleetStackFile(project.stackConfigDir, args.stack);
    for (const rack of racks) writeMemberStackFile(workDirs.get(rack.stack)!, rack.stack, memberStackFile(fleetFile, rack, plan, project.name));
    workDirs.set(args.stack, args.projectDir);
    let env: NodeJS.ProcessEnv = { ...process.env, ...(plan.options.skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: "true" } : {}) };
    env = preparePlugins(workDirs.get(chosen[0].stack)!, env);
    // A rack's program reads the web's stack: it is made (empty, until its up) before any rack runs.
    if (plan.web && !made.has(plan.web.stack)) await makeMember(plan.web.stack, workDirs, made);
    // Every member's state, and the fleet stack's own: hosts a plain `pulumi up` converged there move into their racks' stacks.
    const states = new Map([[plan.stack, exportedState(plan.stack, plan.projectDir)], ...made]);
    // Every member's state is read to find moved hosts; a move touches the two stacks alone.
    const moves = operation === "up" || operation === "preview" ? movesOf(racks, states) : [];
    if (operation === "preview")
        for (const move of moves)
            console.log(`${move.host}: moves from ${move.from} to ${move.to} (fleet up moves its state first: nothing is replaced, nothing runs on the host)`);
    else await moveHosts(moves, { states, workDirs, env });
    const rows: RackRow[] = chosen.map((r) => ({
        rack: r.name,
        stack: r.stack,
        hosts: r.hosts.length,
        state: "waiting",
        done: 0,
        known: resourceCount(states.get(r.stack)),
        current: "",
    }));
    const display = new FleetDisplay(rows);
    const parallel = plan.options.parallel ?? os.cpus().length;
    const results: RackResult[] = [];
    for (const phase of phasesOf(chosen, operation)) {
        const rowsOf = phase.map((rack) => rows.find((r) => r.stack === rack.stack)!);
        // The racks of an up wait on a good web; on destroy, the web outlives workers that failed to retire.
        const blocker = results.find((r) => r.row.state !== "done");
        if (blocker && (operation === "up" || operation === "destroy")) {
            for (const row of rowsOf) Object.assign(row, { state: "skipped", error: [`not run: ${blocker.row.rack} (${blocker.row.stack}) failed first`] });
            display.update();
            results.push(...rowsOf.map((row) => ({ row, planned: [] })));
            continue;
        }
        results.push(
            ...(await pool(phase, parallel, (rack) => {
                const job: MemberJob = {
                    operation,
                    stackName: rack.stack,
                    workDir: workDirs.get(rack.stack)!,
                    made: states.has(rack.stack),
                    logFile: path.join(logs, `${rack.stack}.log`),
                };
                return runRack(
                    job,
                    rows.find((r) => r.stack === rack.stack)!,
                    display,
                    env,
                );
            })),
        );
    }
    display.finish();
    await retireEmpty(results, racks, operation, workDirs);
    writeRecord(args.projectDir, args.stack, operation, Object.fromEntries(results.map((r) => [r.row.rack, { ok: r.row.state === "done" }])));
    console.log("\n" + summaryTable(rows).join("\n"));
    console.log(`logs: ${logs}`);
    const failed = results.filter((r) => r.row.state !== "done");
    for (const f of failed) console.log(`\n${f.row.rack} ${f.row.state}:\n${(f.row.error ?? []).map((l) => `  ${l}`).join("\n")}`);
    if (operation === "preview") {
        const reviewed = reviewOf(results, racks, moves);
        console.log("\n" + previewSummary(reviewed).join("\n"));
        if (args.expectNoChanges && (anyChange(reviewed) || moves.length > 0)) {
            console.log("\nfleet preview --expect-no-changes: changes found");
            return 1;
        }
    }
    return failed.length > 0 ? 1 : 0;
}

/** Makes a member's stack, in its work folder, whose config file is there already (the stack takes that file's secrets settings as they are). */
async function makeMember(stack: string, workDirs: Map<string, string>, made: Map<string, Deployment | undefined>): Promise<void> {
    const ws = await LocalWorkspace.create({ workDir: workDirs.get(stack)! });
    await ws.createStack(stack);
    made.set(stack, undefined);
}

/** Moves each host's state into its member's stack, making that stack first where it is new. */
async function moveHosts(
    moves: Move[],
    at: { states: Map<string, Deployment | undefined>; workDirs: Map<string, string>; env: NodeJS.ProcessEnv },
): Promise<void> {
    for (const move of moves) {
        if (!at.states.has(move.to)) await makeMember(move.to, at.workDirs, at.states);
        console.log(`${move.host}: moving its state from ${move.from} to ${move.to}`);
        await moveState(move, at.workDirs, at.env);
    }
}

/** Each member's planned changes for review, less those of hosts that move (the move shows them as a create and a delete). */
function reviewOf(results: RackResult[], racks: Rack[], moves: Move[]): { rack: Rack; planned: PlannedChange[] }[] {
    const moved = new Set(moves.map((m) => m.host));
    return results.map((r) => {
        const rack = racks.find((k) => k.stack === r.row.stack)!;
        const all = [...rack.hosts, ...moved];
        return { rack, planned: r.planned.filter((c) => !moved.has(hostOf(c.urn.split("::").pop()!, all) ?? "")) };
    });
}

/** A rack stack left with no hosts after a good up (its hosts moved or were removed) goes, with its work folder. */
async function retireEmpty(results: RackResult[], racks: Rack[], operation: Operation, workDirs: Map<string, string>): Promise<void> {
    if (operation !== "up" && operation !== "destroy") return;
    for (const { row } of results) {
        const rack = racks.find((r) => r.stack === row.stack)!;
        if (row.state !== "done" || (operation === "up" && rack.hosts.length > 0)) continue;
        const workDir = workDirs.get(rack.stack)!;
        const ws = await LocalWorkspace.create({ workDir });
        await ws.removeStack(rack.stack).catch(() => undefined);
        fs.rmSync(workDir, { recursive: true, force: true });
    }
}

if (require.main === module) {
    let args: Args;
    try {
        args = parseArgs(process.argv.slice(2));
    } catch (e) {
        console.error(`fleet: ${(e as Error).message}\n${USAGE}`);
        process.exit(2);
    }
    main(args).then(
        (code) => process.exit(code),
        (e: unknown) => {
            const mistake = e instanceof UsageError || e instanceof StackConfigError;
            console.error(`fleet: ${e instanceof Error ? e.message : String(e)}`);
            process.exit(mistake ? 2 : 1);
        },
    );
}
