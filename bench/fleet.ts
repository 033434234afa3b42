/**
 * npm run bench:fleet: one stack against racks (`npm run fleet`, each rack a stack of its own),
 * side by side in one run, with the real engine and hosts made as bench:up --fleet makes them (LXD
 * instances with sshd, reached over SSH as bare metal would be). The sides: 8 hosts in one stack
 * (`pulumi up`); the same 8 in 4 racks of 2 (`fleet up`); 16 hosts in 8 racks of 2, where this
 * machine holds 16 (BENCH_FLEET_MAX=8 leaves them out). Each converges from nothing and is
 * destroyed after, round after round (BENCH_FLEET_ROUNDS, default 2), the order turned each round.
 * Per up: the wall time; the CPU seconds of the command and every process under it (bash's
 * `times`: the CLI, the program, the providers, the fleet's rack processes); the machines' own CPU
 * (LXD's cgroup of each); the bytes of state the engine wrote, every checkpoint summed (the file
 * backend keeps each one it writes under PULUMI_RETAIN_CHECKPOINTS; they are counted, then
 * removed); and the wall time net of the machines' CPU, which shares this machine's cores here
 * where a real fleet's hosts have their own (docs/costs.md says how it is computed).
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { PACKAGE_ROOT } from "../components/program";
import { ensureEngine, makeProject, makeStack, tempDir, TestLxd } from "../test/support/engine";
import { TSA_KEY } from "../test/fixtures/ssh-keys/keys";
import { median, pairedRatio, verdict } from "./stats";
import { instancesCpu, measuredCommand, tearDown } from "./up-fleet";

const ROUNDS = Number(process.env.BENCH_FLEET_ROUNDS ?? 2);
const MAX_HOSTS = Number(process.env.BENCH_FLEET_MAX ?? 16);
const FIRST_PORT = 2581;
const FLEET = path.join(PACKAGE_ROOT, "dist", "cli", "fleet.js");

interface Side {
    label: string;
    hosts: number;
    /** Hosts a rack; 0: one stack, converged by pulumi up. */
    perRack: number;
}

interface Measure {
    wall: number;
    cpu: number;
    hostCpu: number;
    /** Bytes of every checkpoint the engine wrote during the up. */
    written: number;
    net: number;
}

const SIDES: Side[] = [
    { label: "one stack", hosts: 8, perRack: 0 },
    { label: "4 racks of 2", hosts: 8, perRack: 2 },
    { label: "8 racks of 2", hosts: 16, perRack: 2 },
].filter((s) => s.hosts <= MAX_HOSTS);

/** The checkpoints the file backend kept since the last call (`<stack>.json.<ns>`): their bytes, summed; they (and the blob store's `.attrs` of each) are removed. */
function takeCheckpoints(stateDir: string): number {
    const stacks = path.join(stateDir, ".pulumi", "stacks");
    let bytes = 0;
    const walk = (dir: string) => {
        for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
            const file = path.join(dir, entry.name);
            if (entry.isDirectory()) walk(file);
            else if (/\.json\.\d+(\.attrs)?$/.test(entry.name)) {
                // The blob store's .attrs beside each is its own bookkeeping, not state.
                if (!entry.name.endsWith(".attrs")) bytes += fs.statSync(file).size;
                fs.rmSync(file);
            }
        }
    };
    walk(stacks);
    return bytes;
}

export async function main(): Promise<void> {
    const root = tempDir("gw-bench-fleet-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    const stacks: Stack[] = [];
    const stateDir = path.join(root, "state");
    try {
        const env = { ...ensureEngine(stateDir), PULUMI_RETAIN_CHECKPOINTS: "true" };
        const project = makeProject(path.join(root, "project"));
        const cores = os.cpus().length;
        lxd.start();
        const most = Math.max(...SIDES.map((s) => s.hosts));
        // Users of their own on this machine each, as separate machines have (bench:up --fleet says why).
        const machines = Array.from({ length: most }, (_, i) =>
            lxd.sshHost(`bench-r${i}`, FIRST_PORT + i, `r${i}`, root, { "security.idmap.isolated": "true" }),
        );
        const instances = machines.map((_, i) => `bench-r${i}`);
        const stackOf = new Map<Side, Stack>();
        for (const side of SIDES) {
            const picked = machines.slice(0, side.hosts);
            const stack = await makeStack(project, `bench-${side.hosts}-${side.perRack}`, env, {
                defaults: { concourse: { tsaHost: "127.0.0.1", tsaPublicKey: TSA_KEY } },
                hosts: picked.map((m, i) => ({ ...m.host, ...(side.perRack > 0 ? { rack: `r${Math.floor(i / side.perRack)}` } : {}) })),
                secrets: Object.assign({}, ...picked.map((m) => m.secrets)) as Record<string, string>,
            });
            await stack.setConfig("gpu-workers:fleet", { value: JSON.stringify({ parallel: cores }) });
            stackOf.set(side, stack);
            if (side.perRack === 0) stacks.push(stack);
        }
        const command = (side: Side, operation: "up" | "destroy") =>
            side.perRack === 0
                ? ["pulumi", operation, "--yes", "--skip-preview", "--non-interactive", "--stack", stackOf.get(side)!.name]
                : ["node", FLEET, operation, "--stack", stackOf.get(side)!.name, "--project-dir", project];
        const results = new Map<Side, Measure[]>(SIDES.map((s) => [s, []]));
        const timesFile = path.join(root, "times");
        for (let round = 0; round < ROUNDS; round++) {
            const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
            for (const side of order) {
                const used = instances.slice(0, side.hosts);
                takeCheckpoints(stateDir);
                const hostCpuBefore = instancesCpu(lxd, used);
                const run = measuredCommand(project, { ...env, CI: "true" }, command(side, "up"), timesFile);
                const hostCpu = instancesCpu(lxd, used) - hostCpuBefore;
                const written = takeCheckpoints(stateDir);
                const measure = { ...run, hostCpu, written, net: run.wall - hostCpu / cores };
                results.get(side)!.push(measure);
                console.log(
                    `  round ${round + 1}: ${side.hosts} hosts, ${side.label}: ${run.wall.toFixed(1)} s (net ${measure.net.toFixed(1)} s), CPU ${run.cpu.toFixed(1)} s, the machines' CPU ${hostCpu.toFixed(1)} s, state written ${(written / 1e6).toFixed(1)} MB`,
                );
                measuredCommand(project, { ...env, CI: "true" }, command(side, "destroy"), timesFile);
                takeCheckpoints(stateDir);
            }
        }

        const f = (x: number, digits = 1) => x.toFixed(digits).padStart(8);
        console.log(`bench:fleet (medians of ${ROUNDS} rounds; ${cores} CPUs, which the machines share with the CLI; each up from nothing)`);
        console.log("  hosts  layout         wall s   net s   CPU s  CPU/host  machines' CPU s  state MB  MB/host");
        for (const side of SIDES) {
            const ms = results.get(side)!;
            const at = (pick: (m: Measure) => number) => median(ms.map(pick));
            console.log(
                `  ${String(side.hosts).padStart(5)}  ${side.label.padEnd(13)} ${f(at((m) => m.wall))} ${f(at((m) => m.net))} ${f(at((m) => m.cpu))} ${f(at((m) => m.cpu) / side.hosts, 2)}  ${f(at((m) => m.hostCpu))}         ${f(at((m) => m.written) / 1e6)} ${f(at((m) => m.written) / 1e6 / side.hosts, 2)}`,
            );
        }
        const perHost = (side: Side, pick: (m: Measure) => number) => results.get(side)!.map((m) => pick(m) / side.hosts);
        const show = (label: string, a: number[], b: number[], target: number) => {
            const r = pairedRatio(a, b);
            console.log(`  ${label.padEnd(58)} ${r.value.toFixed(2)} [${r.low.toFixed(2)}, ${r.high.toFixed(2)}] (target <= ${target}) ${verdict(r, target)}`);
        };
        const [one, racks8, racks16] = SIDES;
        show(
            "CLI CPU a host, 4 racks of 2 / one stack (8 hosts)",
            perHost(racks8, (m) => m.cpu),
            perHost(one, (m) => m.cpu),
            1,
        );
        show(
            "state written a host, 4 racks of 2 / one stack (8 hosts)",
            perHost(racks8, (m) => m.written),
            perHost(one, (m) => m.written),
            1,
        );
        if (racks16)
            show(
                "state written a host, 16 hosts in racks / 8 in racks (flat)",
                perHost(racks16, (m) => m.written),
                perHost(racks8, (m) => m.written),
                1.1,
            );
        if (racks16)
            show(
                "CLI CPU a host, 16 hosts in racks / 8 in racks",
                perHost(racks16, (m) => m.cpu),
                perHost(racks8, (m) => m.cpu),
                1.1,
            );
    } finally {
        await tearDown(stacks, lxd, root);
    }
}

main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
});
