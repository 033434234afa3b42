/**
 * npm run bench:up — the real engine on LXD hosts of a private LXD daemon, measured side by side:
 *  1. a no-op `up` against `preview` on the same converged stack (interleaved; target <= 1.3)
 *  2. converging 4 hosts in one stack against 1 host (target <= 2: hosts converge in parallel),
 *     with the LXD instances created by the stack itself, on a copy-on-write (btrfs) pool as
 *     LXD hosts are usually set up; and, for reference, the same over SSH to machines made
 *     beforehand (our work alone, no instance creation).
 * On a `dir` pool (the fallback when btrfs cannot be had) LXD unpacks the whole image for each
 * new instance, several CPU-seconds apiece: on a 2-core machine four of those cannot take less
 * than twice one, whatever the program does.
 * It prints medians, ratios and PASS/MISS; it asserts nothing (tests do that).
 * With --fleet it measures a fleet over SSH instead (bench/up-fleet.ts).
 */
import { spawnSync } from "child_process";
import * as os from "os";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { ensureEngine, makeProject, makeStack, tempDir, TestLxd } from "../test/support/engine";
import { ensureCommands } from "../test/support/tools";
import { fleetBench, tearDown } from "./up-fleet";
import { TSA_KEY } from "../test/fixtures/ssh-keys/keys";

const ROUNDS = 5;

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * Wall time of one pulumi command as a user runs it. (The Automation API's up() also reads the
 * outputs with a second CLI call afterwards, which preview() does not: timing the CLI itself
 * keeps both sides the same work.)
 */
function timedPulumi(projectDir: string, env: Record<string, string>, args: string[]): number {
    const start = process.hrtime.bigint();
    const r = spawnSync("pulumi", [...args, "--non-interactive"], { cwd: projectDir, env: { ...process.env, ...env }, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`pulumi ${args.join(" ")} failed:\n${r.stdout}\n${r.stderr}`);
    return Number(process.hrtime.bigint() - start) / 1e9;
}

function hosts(lxd: TestLxd, prefix: string, count: number, firstPort: number) {
    return Array.from({ length: count }, (_, i) => ({
        name: `${prefix}${i}`,
        transport: {
            lxd: {
                server: { socket: lxd.socket },
                instance: `bench-${prefix}${i}`,
                image: "gpu-workers/debian-12",
                sshPort: firstPort + i,
                shiftWritable: false,
            },
        },
        vendor: "none",
    }));
}

/** Converges the two stacks alternately, destroying between rounds; returns their up times. */
async function convergeSideBySide(
    project: string,
    env: Record<string, string>,
    stacks: { one: Stack; four: Stack },
): Promise<{ one: number[]; four: number[] }> {
    const times = { one: [] as number[], four: [] as number[] };
    const rounds = 3;
    for (let round = 0; round < rounds; round++) {
        const order: ("one" | "four")[] = round % 2 === 0 ? ["one", "four"] : ["four", "one"];
        for (const label of order) {
            times[label].push(timedPulumi(project, env, ["up", "--yes", "--skip-preview", "--stack", stacks[label].name]));
            if (round < rounds - 1) await stacks[label].destroy();
        }
    }
    return times;
}

/**
 * Puts new instances on a btrfs pool (a loop file inside the daemon's folder), where LXD makes
 * an instance as a snapshot of the image. Returns the pool's driver, with why when it is not btrfs.
 */
function useCopyOnWritePool(lxd: TestLxd): string {
    try {
        ensureCommands(["mkfs.btrfs"], ["btrfs-progs"]);
        lxd.lxc("storage", "create", "bench", "btrfs", "size=8GiB");
        lxd.lxc("profile", "device", "set", "default", "root", "pool=bench");
        return "btrfs";
    } catch (e) {
        const why = ((e as { stderr?: string }).stderr || (e as Error).message).trim().split("\n")[0];
        return `dir (no btrfs pool: ${why})`;
    }
}

async function main(): Promise<void> {
    const root = tempDir("gw-bench-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    const stacks: Stack[] = [];
    try {
        const env = ensureEngine(path.join(root, "state"));
        lxd.start();
        const project = makeProject(path.join(root, "project"));
        const defaults = { concourse: { tsaHost: "127.0.0.1", tsaPublicKey: TSA_KEY } };
        const stackOf = async (name: string, count: number, port: number) => {
            const stack = await makeStack(project, name, env, { defaults, hosts: hosts(lxd, name, count, port) });
            stacks.push(stack);
            return stack;
        };

        const pool = useCopyOnWritePool(lxd);

        // 2. Converge 1 host, then 4, alternating; destroy undoes everything for the next round.
        const one = await stackOf("one", 1, 2501);
        const converge = await convergeSideBySide(project, env, { one, four: await stackOf("four", 4, 2511) });
        // For reference: the same over SSH, to machines made here beforehand.
        const sshHosts = Array.from({ length: 5 }, (_, i) => lxd.sshHost(`bench-bm${i}`, 2521 + i, `bm${i}`, root));
        const sshStack = async (name: string, picked: typeof sshHosts) => {
            const stack = await makeStack(project, name, env, {
                defaults,
                hosts: picked.map((h) => h.host),
                secrets: Object.assign({}, ...picked.map((h) => h.secrets)) as Record<string, string>,
            });
            stacks.push(stack);
            return stack;
        };
        const overSsh = await convergeSideBySide(project, env, {
            one: await sshStack("ssh-one", sshHosts.slice(0, 1)),
            four: await sshStack("ssh-four", sshHosts.slice(1)),
        });

        // 1. On the converged 1-host stack: preview and no-op up, interleaved.
        const times: Record<string, number[]> = { preview: [], up: [] };
        for (let i = 0; i < ROUNDS; i++) {
            times.preview.push(timedPulumi(project, env, ["preview", "--stack", one.name]));
            times.up.push(timedPulumi(project, env, ["up", "--yes", "--skip-preview", "--stack", one.name]));
        }

        const noop = median(times.up) / median(times.preview);
        const parallel = median(converge.four) / median(converge.one);
        const parallelSsh = median(overSsh.four) / median(overSsh.one);
        const verdict = (ratio: number, target: number) => `${ratio.toFixed(2)} (target <= ${target}) ${ratio <= target ? "PASS" : "MISS"}`;
        const runs = (xs: number[]) => `${median(xs).toFixed(2)}   runs: ${xs.map((t) => t.toFixed(2)).join(" ")}`;
        console.log(`bench:up (medians, seconds; ${os.cpus().length} CPUs; LXD storage pool: ${pool})`);
        console.log(`  preview                                ${runs(times.preview)}`);
        console.log(`  no-op up                               ${runs(times.up)}`);
        console.log(`  converge 1 host  (LXD instance made)   ${runs(converge.one)}`);
        console.log(`  converge 4 hosts (LXD instances made)  ${runs(converge.four)}`);
        console.log(`  converge 1 host  over SSH (reference)  ${runs(overSsh.one)}`);
        console.log(`  converge 4 hosts over SSH (reference)  ${runs(overSsh.four)}`);
        console.log(`  no-op up / preview                     ${verdict(noop, 1.3)}`);
        console.log(`  4 hosts / 1 host (LXD instances made)  ${verdict(parallel, 2)}`);
        console.log(`  4 hosts / 1 host over SSH (reference)  ${parallelSsh.toFixed(2)}`);
    } finally {
        await tearDown(stacks, lxd, root);
    }
}

(process.argv.includes("--fleet") ? fleetBench() : main()).catch((e) => {
    console.error(`bench:up: ${(e as Error).message}`);
    process.exit(1);
});
