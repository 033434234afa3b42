/**
 * npm run bench:up -- --fleet: converging a fleet over SSH with the real engine, by each transport
 * of host steps: `builtin` always, and `command` side by side where its plugin
 * (pulumi-resource-command) is on PATH. Eight machines are made beforehand (LXD instances with
 * sshd, as bare metal would be); stacks of 1, 4 and 8 of them are converged from nothing, then
 * destroyed, round after round, the transports interleaved so their figures share the machine's
 * load. Each `up` is measured for its wall time, the CPU seconds of the pulumi CLI and every
 * process under it (the program, the providers and whatever they spawn, as `times` reports them
 * for a shell's children), the SSH connections it opened, counted where they land (sshd's
 * "Accepted publickey" lines in each machine's journal, before and after), and the bytes of the
 * stack's state it left. The machines' own CPU seconds (sshd and what the steps run there, as
 * LXD reports each instance's cgroup) are printed beside the CLI's: here the machines share this
 * machine's cores with the engine, where a real fleet's hosts have their own, so that part of a
 * fleet's wall time is the bench's, not the program's. It prints each measurement as it goes,
 * then medians per fleet size and per host, and the ratios the issue sets targets for.
 * BENCH_UP_ROUNDS sets the number of rounds (default 3).
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { ensureEngine, makeProject, makeStack, tempDir, TestLxd } from "../test/support/engine";
import { commandPlugin } from "../test/support/supplied";
import { median, pairedRatio, verdict } from "./stats";
import { TSA_KEY } from "../test/fixtures/ssh-keys/keys";

const SIZES = [1, 4, 8];
const ROUNDS = Number(process.env.BENCH_UP_ROUNDS ?? 3);
const FIRST_PORT = 2541;

/** Destroys the bench's stacks (a failure is reported, the rest still go), then its LXD daemon and folder. */
export async function tearDown(stacks: Stack[], lxd: TestLxd, root: string): Promise<void> {
    for (const stack of stacks) {
        try {
            await stack.destroy();
        } catch (e) {
            console.error(`bench:up: destroy failed: ${(e as Error).message.split("\n")[0]}`);
        }
    }
    lxd.stop();
    fs.rmSync(root, { recursive: true, force: true });
}

interface Measure {
    wall: number;
    cpu: number;
    ssh: number;
    /** CPU seconds the machines themselves used meanwhile. */
    hostCpu: number;
    /** Bytes of the stack's state after the up. */
    state: number;
}

/** The transports measured: builtin, and command where its plugin is supplied. */
function transports(): ("builtin" | "command")[] {
    if (commandPlugin()) return ["builtin", "command"];
    console.log("bench:up --fleet: builtin alone (the command transport needs pulumi-resource-command on PATH)");
    return ["builtin"];
}

/** Seconds in bash's `times` format (1m2.345s). */
function seconds(text: string): number {
    const m = /^(\d+)m([\d.]+)s$/.exec(text);
    if (!m) throw new Error(`bench:up: unexpected times output: ${text}`);
    return Number(m[1]) * 60 + Number(m[2]);
}

/**
 * Runs one command under bash and returns its wall time and the CPU seconds (user + system) of
 * every process it waited for, the command and all below it, from bash's `times`.
 */
export function measuredCommand(cwd: string, env: Record<string, string>, argv: string[], timesFile: string): { wall: number; cpu: number } {
    const start = process.hrtime.bigint();
    const r = spawnSync("bash", ["-c", '"$@"; s=$?; times >"$GW_TIMES"; exit $s', "bash", ...argv], {
        cwd,
        env: { ...process.env, ...env, GW_TIMES: timesFile },
        encoding: "utf8",
        maxBuffer: 64 << 20,
    });
    const wall = Number(process.hrtime.bigint() - start) / 1e9;
    if (r.status !== 0) throw new Error(`${argv.join(" ")} failed:\n${r.stdout}\n${r.stderr}`);
    // The second line is the children's user and system time.
    const children = fs.readFileSync(timesFile, "utf8").trim().split("\n")[1].trim().split(/\s+/);
    return { wall, cpu: seconds(children[0]) + seconds(children[1]) };
}

function measuredPulumi(projectDir: string, env: Record<string, string>, args: string[], timesFile: string): { wall: number; cpu: number } {
    return measuredCommand(projectDir, env, ["pulumi", ...args, "--non-interactive"], timesFile);
}

/** SSH logins each machine has accepted so far, from sshd's lines in its journal. */
function acceptedLogins(lxd: TestLxd, instances: string[]): number {
    return instances
        .map((instance) => Number(lxd.exec(instance, "journalctl --no-pager -o cat _COMM=sshd | grep -c '^Accepted publickey' || true").trim()))
        .reduce((a, b) => a + b, 0);
}

/** CPU seconds the instances have used since they started, from LXD's state of each (its cgroup's usage, in ns). */
export function instancesCpu(lxd: TestLxd, instances: string[]): number {
    return instances
        .map((instance) => {
            const usage = (JSON.parse(lxd.lxc("query", `/1.0/instances/${instance}/state`)) as { cpu?: { usage?: number } }).cpu?.usage;
            if (typeof usage !== "number" || usage <= 0) throw new Error(`bench:up: LXD reports no CPU usage for ${instance}: does the daemon see its cgroup?`);
            return usage / 1e9;
        })
        .reduce((a, b) => a + b, 0);
}

export async function fleetBench(): Promise<void> {
    const root = tempDir("gw-fleet-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    const stacks: Stack[] = [];
    try {
        const env = ensureEngine(path.join(root, "state"));
        const project = makeProject(path.join(root, "project"));
        const programs = transports().map((hostSteps) => ({ label: hostSteps, hostSteps }));
        lxd.start();
        // Each with users of its own on this machine, as separate machines have: containers that
        // share one idmap share the kernel's per-user key quota, which eight converging at once exhaust.
        const machines = Array.from({ length: Math.max(...SIZES) }, (_, i) =>
            lxd.sshHost(`bench-f${i}`, FIRST_PORT + i, `f${i}`, root, { "security.idmap.isolated": "true" }),
        );
        const instances = machines.map((_, i) => `bench-f${i}`);
        const defaults = { concourse: { tsaHost: "127.0.0.1", tsaPublicKey: TSA_KEY } };

        // One stack per program and size, each on the first `size` machines; only one is up at a time.
        const stackOf = new Map<string, Stack>();
        for (const [p, program] of programs.entries()) {
            for (const size of SIZES) {
                const picked = machines.slice(0, size);
                const stack = await makeStack(project, `fleet-${p}-${size}`, env, {
                    defaults,
                    hosts: picked.map((m) => m.host),
                    secrets: Object.assign({}, ...picked.map((m) => m.secrets)) as Record<string, string>,
                    hostSteps: program.hostSteps,
                });
                stacks.push(stack);
                stackOf.set(`${p}/${size}`, stack);
            }
        }

        const results = new Map<string, Measure[]>();
        const timesFile = path.join(root, "times");
        for (let round = 0; round < ROUNDS; round++) {
            // Alternate the order each round, so neither side always runs on a warmer machine.
            const sizes = round % 2 === 0 ? SIZES : [...SIZES].reverse();
            for (const size of sizes) {
                const order = [...programs.keys()];
                if ((round + size) % 2 === 1) order.reverse();
                for (const p of order) {
                    const stack = stackOf.get(`${p}/${size}`)!;
                    const before = acceptedLogins(lxd, instances);
                    const used = instances.slice(0, size);
                    const hostCpuBefore = instancesCpu(lxd, used);
                    const run = measuredPulumi(project, env, ["up", "--yes", "--skip-preview", "--stack", stack.name], timesFile);
                    const hostCpu = instancesCpu(lxd, used) - hostCpuBefore;
                    const exported = JSON.stringify(await stack.exportStack());
                    // BENCH_UP_STATE=DIR keeps each converged state (every resource's creation time) for a look at the critical path.
                    if (process.env.BENCH_UP_STATE)
                        fs.writeFileSync(path.join(process.env.BENCH_UP_STATE, `${programs[p].label}-${size}-${round}.json`), exported);
                    const ssh = acceptedLogins(lxd, instances) - before;
                    if (ssh === 0) throw new Error("bench:up: no SSH login counted in the machines' journals: is sshd logging to the journal?");
                    const state = Buffer.byteLength(exported);
                    results.set(`${p}/${size}`, [...(results.get(`${p}/${size}`) ?? []), { ...run, ssh, hostCpu, state }]);
                    // As it goes, so that a run cut short still says what it measured.
                    console.log(
                        `  round ${round + 1}: ${programs[p].label}, ${size} hosts: ${run.wall.toFixed(2)} s, CPU ${run.cpu.toFixed(2)} s, the machines' CPU ${hostCpu.toFixed(2)} s, ${ssh} SSH logins, state ${(state / 1024).toFixed(0)} KiB`,
                    );
                    await stack.destroy();
                }
            }
        }

        const fixed = (x: number, digits = 2) => x.toFixed(digits).padStart(8);
        console.log(`bench:up --fleet (medians of ${ROUNDS} rounds; ${os.cpus().length} CPUs; converge from nothing over SSH, machines made beforehand)`);
        console.log(
            `  transport  hosts  wall s  wall/host   CPU s   CPU/host  machines' CPU s  per host  SSH conns  SSH/host  state KiB  KiB/host   wall runs`,
        );
        for (const [p, program] of programs.entries()) {
            for (const size of SIZES) {
                const ms = results.get(`${p}/${size}`)!;
                const wall = median(ms.map((m) => m.wall));
                const cpu = median(ms.map((m) => m.cpu));
                const ssh = median(ms.map((m) => m.ssh));
                const hostCpu = median(ms.map((m) => m.hostCpu));
                const state = median(ms.map((m) => m.state)) / 1024;
                console.log(
                    `  ${program.label.padEnd(9)} ${String(size).padStart(6)} ${fixed(wall)} ${fixed(wall / size)}   ${fixed(cpu)} ${fixed(cpu / size)}         ${fixed(hostCpu)}  ${fixed(hostCpu / size)}  ${String(ssh).padStart(9)} ${fixed(ssh / size, 1)}  ${fixed(state, 0)}  ${fixed(state / size, 0)}   ${ms.map((m) => m.wall.toFixed(2)).join(" ")}`,
                );
            }
        }
        const walls = (p: number, size: number) => results.get(`${p}/${size}`)!.map((m) => m.wall);
        const show = (label: string, a: number[], b: number[], target: number) => {
            const r = pairedRatio(a, b);
            console.log(`  ${label.padEnd(46)} ${r.value.toFixed(2)} [${r.low.toFixed(2)}, ${r.high.toFixed(2)}] (target <= ${target}) ${verdict(r, target)}`);
        };
        for (const [p, program] of programs.entries()) show(`8 hosts / 1 host, ${program.label}`, walls(p, 8), walls(p, 1), 2.5);
        if (programs.length > 1) for (const size of SIZES) show(`${size} hosts, builtin / command`, walls(0, size), walls(1, size), 1);
    } finally {
        await tearDown(stacks, lxd, root);
    }
}
