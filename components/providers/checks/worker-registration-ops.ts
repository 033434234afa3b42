/**
 * The WorkerRegistration provider's operations: after the worker step, wait until the web
 * lists the worker as running with exactly the tags of its plan and its team; otherwise fail
 * the `up` with what the web reports (absent, stalled, other tags or team) and the last lines
 * of the worker's log on its host. Then (with `task`) run one task tagged with those tags
 * through the web, and fail the `up` with the build's status and output unless it succeeds.
 */
import { TaskCheckOutcome, taskCheckOutcome, taskCheckPlan } from "../../lib/concourse/task-check";
import { asRoot, shellCommand } from "../../lib/host/steps";
import { runOverSsh, SshTarget } from "../host/ssh";
import { ApiWorker, ConcourseApi, createBuild, followBuild, token, workers } from "./concourse-api";

export interface WorkerRegistrationInputs {
    worker: string;
    tags: string[];
    /** The team the worker belongs to; absent: a worker of every team. */
    team?: string;
    api: ConcourseApi;
    /** The worker's host, for the log lines a failure shows. */
    connection: SshTarget;
    unit: string;
    timeoutSeconds: number;
    /** Run a task tagged with `tags` through the web once the worker is listed. */
    task: boolean;
    /** The worker step's output: a re-run of the step (a restart) checks again. */
    converged: string;
}

/** What is wrong with the web's view of the worker, or undefined when it is as planned. */
export function registrationProblem(expected: Pick<WorkerRegistrationInputs, "worker" | "tags" | "team">, listed: ApiWorker[]): string | undefined {
    const found = listed.find((w) => w.name === expected.worker);
    if (!found) return `the web lists no worker ${expected.worker} (it lists: ${listed.map((w) => w.name).join(", ") || "none"})`;
    const problems: string[] = [];
    if (found.state !== "running") problems.push(`its state is ${found.state}, not running`);
    const have = [...(found.tags ?? [])].sort();
    const want = [...expected.tags].sort();
    if (JSON.stringify(have) !== JSON.stringify(want)) problems.push(`its tags are [${(found.tags ?? []).join(", ")}], expected [${expected.tags.join(", ")}]`);
    if ((found.team || undefined) !== expected.team) problems.push(`its team is ${found.team || "(none)"}, expected ${expected.team ?? "(none)"}`);
    return problems.length > 0 ? `worker ${expected.worker}: ${problems.join("; ")}` : undefined;
}

async function logTail(inputs: WorkerRegistrationInputs): Promise<string> {
    const command = asRoot(inputs.connection.user, shellCommand(["journalctl", "-u", inputs.unit, "-n", "30", "--no-pager", "-o", "cat"]));
    try {
        const r = await runOverSsh(inputs.connection, command, "", 60);
        return (r.stdout || r.stderr).trim() || "(no log lines)";
    } catch (e) {
        return `(could not read the log: ${(e as Error).message})`;
    }
}

async function waitForRegistration(inputs: WorkerRegistrationInputs): Promise<ApiWorker> {
    const deadline = Date.now() + inputs.timeoutSeconds * 1000;
    let last: string;
    for (;;) {
        try {
            const listed = await workers(inputs.api, await token(inputs.api));
            const problem = registrationProblem(inputs, listed);
            if (!problem) return listed.find((w) => w.name === inputs.worker)!;
            last = problem;
        } catch (e) {
            last = `could not ask the web at ${inputs.api.url}: ${(e as Error).message}`;
        }
        if (Date.now() >= deadline) break;
        await new Promise((r) => setTimeout(r, 1000));
    }
    throw new Error(
        `${last} (after waiting ${inputs.timeoutSeconds}s)\nlast lines of ${inputs.unit} on ${inputs.connection.host}:${inputs.connection.port}:\n${await logTail(inputs)}`,
    );
}

/** How long the task check may take: the first one also fetches the mock image onto the worker. */
export const TASK_CHECK_TIMEOUT_SECONDS = 300;

/** The build's outcome, or what is wrong with it. */
export function taskCheckProblem(inputs: Pick<WorkerRegistrationInputs, "worker" | "tags">, build: number, outcome: TaskCheckOutcome): string | undefined {
    if (outcome.status === "succeeded") return undefined;
    const output = outcome.log.trim().split("\n").slice(-20).join("\n") || "(no output)";
    return (
        `worker ${inputs.worker}: the task check (one-off build ${build}, tags [${inputs.tags.join(", ")}]) ended ${outcome.status}` +
        `${outcome.worker ? ` on worker ${outcome.worker}` : ""}; its output:\n${output}`
    );
}

async function runTaskCheck(inputs: WorkerRegistrationInputs): Promise<{ build: number } & TaskCheckOutcome> {
    const bearer = await token(inputs.api);
    const build = await createBuild(inputs.api, bearer, inputs.team ?? "main", taskCheckPlan(inputs.tags));
    const outcome = taskCheckOutcome(await followBuild(inputs.api, bearer, build, TASK_CHECK_TIMEOUT_SECONDS));
    const problem = taskCheckProblem(inputs, build, outcome);
    if (problem) throw new Error(problem);
    return { build, ...outcome };
}

async function check(inputs: WorkerRegistrationInputs) {
    const seen = await waitForRegistration(inputs);
    // The task may land on another worker with the same tags: the outputs say which ran it.
    const task = inputs.task ? await runTaskCheck(inputs) : undefined;
    return { ...inputs, state: seen.state, ...(task ? { taskBuild: task.build, taskWorker: task.worker ?? "", taskOutput: task.log } : {}) };
}

export async function create(inputs: WorkerRegistrationInputs) {
    return { id: inputs.worker, outs: await check(inputs) };
}

const WATCHED: (keyof WorkerRegistrationInputs)[] = ["worker", "tags", "team", "api", "unit", "task", "converged"];

export async function diff(_id: string, olds: WorkerRegistrationInputs, news: WorkerRegistrationInputs) {
    return { changes: WATCHED.some((k) => JSON.stringify(olds[k] ?? null) !== JSON.stringify(news[k] ?? null)) };
}

export async function update(_id: string, _olds: WorkerRegistrationInputs, news: WorkerRegistrationInputs) {
    return { outs: await check(news) };
}
