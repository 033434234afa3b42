/**
 * npm run fleet end to end: six machines reached over SSH (LXD instances with sshd, as bare metal
 * would be) in three racks of one stack config, each rack converged in a stack of its own by the
 * real engine through the driver (node dist/cli/fleet.js), as a person runs it. Where a Concourse
 * release is supplied, the fleet has a web node too, in a stack of its own that goes first, and every
 * worker of every rack registers with it.
 */
import * as assert from "assert";
import { ChildProcess, execFileSync, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { e2eConcourseDefaults, flyFor, PLACEHOLDER_TSA_KEY, suppliedRelease } from "../support/concourse";
import { makeStack, setStackConfig, StackConfig } from "../support/engine";
import { engineSuite } from "../support/engine-suite";
import { pendingWithout } from "../support/supplied";

const FLEET = path.join(PACKAGE_ROOT, "dist", "cli", "fleet.js");
const FIRST_PORT = 2461;
const RACKS = ["ra", "rb", "rc"];
/** The web's ports on this machine, and the TSA as each host reaches it (a proxy device to the web's). */
const WEB_PORTS = { ssh: 2467, web: 2468, tsa: 2469 };
const TSA_INSIDE = 2222;

describe("npm run fleet: racks as stacks", function () {
    this.timeout(1_200_000);
    const suite = engineSuite("gw-fleet-");
    const { lxd } = suite;
    let stack: Stack;
    let config: StackConfig;
    const instances = [0, 1, 2, 3, 4, 5].map((i) => `fleet-h${i}`);

    /** Runs the driver; returns its exit status and output. */
    function fleet(...args: string[]): { status: number; out: string } {
        const r = spawnSync("node", [FLEET, ...args, "--stack", "fleet", "--project-dir", suite.project], {
            env: { ...process.env, ...suite.env, CI: "true" },
            encoding: "utf8",
        });
        return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
    }

    function rackStack(rack: string): Promise<Stack> {
        return LocalWorkspace.selectStack(
            { stackName: `fleet-${rack}`, workDir: path.join(suite.project, ".fleet", "fleet", "work", `fleet-${rack}`) },
            { envVars: suite.env },
        );
    }

    /** Each host's name to the rack stacks whose state holds its worker. */
    async function holders(): Promise<Record<string, string[]>> {
        const held: Record<string, string[]> = {};
        for (const rack of RACKS) {
            const state = (await (await rackStack(rack)).exportStack()).deployment as { resources: { type: string; urn: string }[] };
            for (const r of state.resources.filter((x) => x.type === "gpu-workers:worker:GpuWorker"))
                (held[r.urn.split("::").pop()!] ??= []).push(`fleet-${rack}`);
        }
        return held;
    }

    /** Commands the host's steps ran so far: the wrapper's config placed, counted by its file's change time. */
    const wrapperStamp = (instance: string) => lxd.exec(instance, "stat -c %Z /etc/gpu-workers/runc-wrapper.json").trim();

    /** With a release, the web of the fleet: an LXD instance its own stack makes. */
    const withWeb = suppliedRelease() !== undefined;
    const webConfig = () => ({
        name: "ci",
        transport: {
            lxd: {
                server: { socket: lxd.socket },
                instance: "fleet-ci",
                image: "gpu-workers/debian-12",
                sshPort: WEB_PORTS.ssh,
                publish: { web: WEB_PORTS.web, tsa: WEB_PORTS.tsa },
            },
        },
    });

    before(async () => {
        const hosts: unknown[] = [];
        const secrets: Record<string, string> = {};
        instances.forEach((instance, i) => {
            // A worker that runs starts containers itself (nesting), in a container of its own (a user namespace), as the real Concourse test's bm.
            const made = lxd.sshHost(instance, FIRST_PORT + i, `h${i}`, suite.root, withWeb ? { "security.nesting": "true" } : {});
            if (withWeb)
                lxd.lxc(
                    "config",
                    "device",
                    "add",
                    instance,
                    "tsa",
                    "proxy",
                    `listen=tcp:127.0.0.1:${TSA_INSIDE}`,
                    `connect=tcp:127.0.0.1:${WEB_PORTS.tsa}`,
                    "bind=instance",
                );
            const concourse = withWeb ? { concourse: { tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE, userNamespace: true } } : {};
            hosts.push({ ...made.host, rack: RACKS[Math.floor(i / 2)], ...concourse });
            Object.assign(secrets, made.secrets);
        });
        config = {
            defaults: {
                concourse: withWeb
                    ? e2eConcourseDefaults({ tags: ["e2e"] })
                    : e2eConcourseDefaults({ tsaHost: "127.0.0.1", tsaPublicKey: PLACEHOLDER_TSA_KEY, tags: ["e2e"] }),
            },
            ...(withWeb ? { web: webConfig() } : {}),
            hosts,
            secrets,
        };
        stack = await makeStack(suite.project, "fleet", suite.env, config);
        await stack.setConfig("gpu-workers:fleet", { value: JSON.stringify({ parallel: 3 }) });
    });

    it("a plain up converges its hosts in the one stack; fleet up moves them into their racks' stacks, runs nothing again there, and converges every rack", async () => {
        // Two hosts first, by a plain `pulumi up` of the stack (without a web, whose workers name their TSA).
        const plain = withWeb ? undefined : { ...config, hosts: config.hosts.slice(0, 2) };
        if (plain) {
            await setStackConfig(stack, plain);
            await stack.up();
        }
        const stamp = plain ? wrapperStamp(instances[0]) : undefined;
        await setStackConfig(stack, config);
        const r = fleet("up");
        assert.strictEqual(r.status, 0, r.out);
        if (plain) {
            for (const host of ["h0", "h1"]) assert.match(r.out, new RegExp(`${host}: moving its state from fleet to fleet-ra`));
            assert.doesNotMatch(r.out, /ra \(fleet-ra, 2 hosts\): done \(.*(create|delete|replace)/, "the moved hosts' resources are kept");
            assert.strictEqual(wrapperStamp(instances[0]), stamp, "the wrapper's config was not placed again");
            const left = ((await stack.exportStack()).deployment as { resources: { type: string }[] }).resources.filter((x) =>
                x.type.startsWith("gpu-workers:"),
            );
            assert.deepStrictEqual(left, [], "the one stack holds no host any more");
        }
        for (const rack of RACKS) assert.match(r.out, new RegExp(`${rack} \\(fleet-${rack}, 2 hosts\\): done`), r.out);
        assert.deepStrictEqual(await holders(), Object.fromEntries(instances.map((_, i) => [`h${i}`, [`fleet-${RACKS[Math.floor(i / 2)]}`]])));
        for (const instance of instances) assert.match(lxd.exec(instance, "cat /etc/gpu-workers/runc-wrapper.json"), /datasets|hookPath|runc/);
        for (const rack of RACKS) assert.ok(fs.statSync(path.join(suite.project, ".fleet", "fleet", "logs", `fleet-${rack}.log`)).size > 0);
    });

    it("with a web: its stack goes first, and every worker of every rack registers with it", async function () {
        pendingWithout(this, "concourse");
        const r = fleet("status");
        assert.match(r.out, /web\s+fleet-web\s+1\s+yes\s+ok/, r.out);
        const webStack = await LocalWorkspace.selectStack(
            { stackName: "fleet-web", workDir: path.join(suite.project, ".fleet", "fleet", "work", "fleet-web") },
            { envVars: suite.env },
        );
        const fly = await flyFor("gw-fleet", (await webStack.outputs()).web.value as { url: string; username: string; password: string });
        try {
            const running = fly
                .workers()
                .filter((w) => w.state === "running")
                .map((w) => w.name);
            assert.deepStrictEqual(running.sort(), instances.map((_, i) => `h${i}`).sort());
        } finally {
            fly.cleanup();
        }
    });

    it("preview --expect-no-changes exits 0 on the converged fleet", () => {
        const r = fleet("preview", "--expect-no-changes");
        assert.strictEqual(r.status, 0, r.out);
        for (const rack of RACKS) assert.match(r.out, new RegExp(`rack ${rack} \\(fleet-${rack}\\): no changes`));
    });

    it("a changed setting on one rack's host shows in that rack alone, and --expect-no-changes exits non-zero", async () => {
        (config.hosts[2] as Record<string, unknown>).datasets = { root: "/srv", writableSuffixes: ["_scratch"] };
        await setStackConfig(stack, config);
        const r = fleet("preview", "--expect-no-changes");
        assert.strictEqual(r.status, 1, r.out);
        assert.match(r.out, /rack ra \(fleet-ra\): no changes/);
        assert.match(r.out, /rack rc \(fleet-rc\): no changes/);
        assert.match(r.out, /rack rb \(fleet-rb\): \d+ update/);
        assert.match(r.out, /\n {2}h2: \d+ update/);
        assert.doesNotMatch(r.out, /\n {2}h3: /, "h3, in the same rack, is unchanged");
        assert.match(r.out, /h2-files/);
        const up = fleet("up", "--racks", "rb");
        assert.strictEqual(up.status, 0, up.out);
        assert.match(lxd.exec(instances[2], "cat /etc/gpu-workers/runc-wrapper.json"), /_scratch/);
        // h2 follows the defaults again from the next up on, as the tests below change them.
        delete (config.hosts[2] as Record<string, unknown>).datasets;
        await setStackConfig(stack, config);
    });

    it("a host moved to another rack keeps its resources, and nothing runs again on it", async () => {
        const before = wrapperStamp(instances[5]);
        (config.hosts[5] as Record<string, unknown>).rack = "ra";
        await setStackConfig(stack, config);
        const preview = fleet("preview");
        assert.match(preview.out, /h5: moves from fleet-rc to fleet-ra/);
        const r = fleet("up");
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /h5: moving its state from fleet-rc to fleet-ra/);
        assert.match(r.out, /ra \(fleet-ra, 3 hosts\): done \(.*same/);
        assert.doesNotMatch(r.out, /ra \(fleet-ra, 3 hosts\): done \(.*(create|delete|replace)/);
        assert.doesNotMatch(r.out, /rc \(fleet-rc, 1 hosts\): done \(.*(create|delete|replace)/);
        assert.deepStrictEqual((await holders()).h5, ["fleet-ra"]);
        assert.strictEqual(wrapperStamp(instances[5]), before, "the wrapper's config was not placed again");
        assert.strictEqual(fleet("preview", "--expect-no-changes").status, 0);
    });

    /** Starts `fleet up`, and kills -9 rack `rack`'s engine and its process once its up is under way. */
    async function upKillingRack(rack: string): Promise<{ status: number; out: string }> {
        const child: ChildProcess = spawn("node", [FLEET, "up", "--stack", "fleet", "--project-dir", suite.project], {
            env: { ...process.env, ...suite.env, CI: "true" },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
        const log = path.join(suite.project, ".fleet", "fleet", "logs", `fleet-${rack}.log`);
        const logged = fs.existsSync(log) ? fs.statSync(log).size : 0;
        const status = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
        // Once the rack's engine has started updating a resource, kill it and its member process.
        for (let i = 0; i < 600; i++) {
            await new Promise((r) => setTimeout(r, 500));
            const tail = fs.existsSync(log) ? fs.readFileSync(log, "utf8").slice(logged) : "";
            if (!/updating/.test(tail)) continue;
            const workDir = path.join(suite.project, ".fleet", "fleet", "work", `fleet-${rack}`);
            const engines = execFileSync(
                "bash",
                ["-c", `for p in $(pgrep -x pulumi); do [ "$(readlink /proc/$p/cwd)" = "$1" ] && echo $p; done; true`, "bash", workDir],
                {
                    encoding: "utf8",
                },
            )
                .trim()
                .split("\n")
                .filter((p) => p !== "");
            for (const pid of engines) {
                const parent = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1];
                spawnSync("kill", ["-9", pid, parent]);
            }
            if (engines.length > 0) break;
        }
        return { status: await status, out };
    }

    it("kill -9 of one rack mid-up: the other racks finish; up --failed clears the lock it left and converges it", async () => {
        config.defaults = { ...(config.defaults as object), datasets: { root: "/srv", writableSuffixes: ["_tmp"] } };
        await setStackConfig(stack, config);
        const killed = await upKillingRack("rb");
        assert.strictEqual(killed.status, 1, killed.out);
        assert.match(killed.out, /ra \(fleet-ra, 3 hosts\): done/);
        assert.match(killed.out, /rc \(fleet-rc, 1 hosts\): done/);
        assert.match(killed.out, /rb \(fleet-rb, 2 hosts\): failed/);
        const again = fleet("up", "--failed");
        assert.strictEqual(again.status, 0, again.out);
        assert.match(again.out, /rb: the stack was locked by a run that is gone \(pid \d+ of this machine\): ran pulumi cancel, then up again/);
        assert.doesNotMatch(again.out, /\bra\b.*done/, "only the failed rack ran again");
        for (const i of [2, 3]) assert.match(lxd.exec(instances[i], "cat /etc/gpu-workers/runc-wrapper.json"), /_tmp/);
        assert.strictEqual(fleet("preview", "--expect-no-changes").status, 0);
    });

    it("with skipCheckpoints, the same kill, then refresh and up, converge with nothing done twice on the host", async () => {
        await stack.setConfig("gpu-workers:fleet", { value: JSON.stringify({ parallel: 3, skipCheckpoints: true }) });
        config.defaults = { ...(config.defaults as object), datasets: { root: "/srv", writableSuffixes: ["_cache"] } };
        await setStackConfig(stack, config);
        const killed = await upKillingRack("rb");
        assert.strictEqual(killed.status, 1, killed.out);
        assert.match(killed.out, /rb \(fleet-rb, 2 hosts\): failed/);
        const refresh = fleet("refresh", "--racks", "rb");
        assert.strictEqual(refresh.status, 0, refresh.out);
        const stamps = [2, 3].map((i) => wrapperStamp(instances[i]));
        const placed = [2, 3].map((i) => lxd.exec(instances[i], "cat /etc/gpu-workers/runc-wrapper.json").includes("_cache"));
        const up = fleet("up", "--failed");
        assert.strictEqual(up.status, 0, up.out);
        [2, 3].forEach((i, k) => {
            assert.match(lxd.exec(instances[i], "cat /etc/gpu-workers/runc-wrapper.json"), /_cache/);
            // A file the killed run had placed already, and refresh found, is not placed again.
            if (placed[k]) assert.strictEqual(wrapperStamp(instances[i]), stamps[k], `h${i}'s wrapper config was placed twice`);
        });
        assert.strictEqual(fleet("preview", "--expect-no-changes").status, 0);
    });

    it("status lists the racks and their last results; destroy takes every rack stack down, and no stack of another's", async () => {
        // A stack of its own whose name a rack could have: the fleet never takes it for a member.
        const other = await makeStack(suite.project, "fleet-other", suite.env, config);
        const status = fleet("status");
        assert.strictEqual(status.status, 0, status.out);
        assert.match(status.out, /ra\s+fleet-ra\s+3\s+yes\s+ok/);
        assert.doesNotMatch(status.out, /fleet-other/);
        const r = fleet("destroy");
        assert.strictEqual(r.status, 0, r.out);
        assert.ok(!fs.existsSync(path.join(suite.project, ".fleet", "fleet", "work", "fleet-ra")));
        for (const instance of instances)
            assert.strictEqual(lxd.exec(instance, "test -e /etc/gpu-workers/runc-wrapper.json && echo left || true").trim(), "", instance);
        const left = (await other.workspace.listStacks()).map((x) => x.name.split("/").pop());
        assert.deepStrictEqual(left.filter((name) => name?.startsWith("fleet-")).sort(), ["fleet-other"]);
        // A rack whose stack would be that one stops the run, naming it.
        (config.hosts[0] as Record<string, unknown>).rack = "other";
        await setStackConfig(stack, config);
        const refused = fleet("preview");
        assert.strictEqual(refused.status, 2, refused.out);
        assert.match(refused.out, /stack fleet-other exists and is no member of fleet fleet/);
    });
});
