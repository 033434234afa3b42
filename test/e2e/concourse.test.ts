/**
 * A real Concourse, end to end through the real Pulumi engine: one stack brings up a web node
 * (an LXD instance with PostgreSQL, made by the stack) and two workers (an LXD instance made by
 * the stack, and a machine reached over SSH); fly then runs tasks and a pipeline on them.
 * Concourse 8.2.5 comes from the kit beside the repo (dev/concourse-release.sh).
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { create as checkRegistration } from "../../components/providers/checks/worker-registration-ops";
import { concourseRelease, Fly } from "../support/concourse";
import { ensureEngine, makeProject, makeStack, setStackConfig, StackConfig, tempDir, TestLxd } from "../support/engine";

const PORTS = { web: 2390, tsa: 2391, webSsh: 2392, lx: 2393, bm: 2394 };
const TSA_INSIDE_BM = 2222;

function changes(result: { summary: { resourceChanges?: Record<string, number> } }): Record<string, number> {
    return Object.fromEntries(Object.entries(result.summary.resourceChanges ?? {}).filter(([, n]) => n > 0));
}

describe("a real Concourse: web and workers from one stack, tasks through the wrapper", function () {
    this.timeout(900_000);
    const root = tempDir("gw-ci-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    const datasets = path.join(root, "datasets");
    const fly = new Fly("gw-e2e");
    let env: Record<string, string>;
    let stack: Stack;
    let config: StackConfig;
    let web: { url: string; username: string; password: string };
    let bmSecrets: Record<string, string>;
    let bmHost: Record<string, unknown>;

    const lxHost = (extra: Record<string, unknown> = {}) => ({
        name: "lx",
        transport: { lxd: { server: { socket: lxd.socket }, instance: "e2e-lx", image: "gpu-workers/debian-12", sshPort: PORTS.lx, shiftWritable: false, datasetSource: datasets, datasetFolders: ["models", "scratch_rw"] } },
        vendor: "none",
        concourse: { tags: ["e2e", "lx"] },
        ...extra,
    });

    /** Runs a task file with fly execute; returns fly's output. */
    function execute(task: object, tags: string[], timeoutMs = 240_000) {
        const file = path.join(root, `task-${Date.now()}.yml`);
        fs.writeFileSync(file, JSON.stringify(task));
        return fly.run(["execute", "-c", file, ...tags.flatMap((t) => ["--tag", t])], timeoutMs);
    }

    const shellTask = (script: string, params: Record<string, string> = {}) => ({
        platform: "linux",
        image_resource: { type: "mock", source: { mirror_self: true } },
        params,
        run: { path: "sh", args: ["-ec", script] },
    });

    /** What the registration check is given for the bm worker, but for what each test asks. */
    const checkInputs = () => {
        const ssh = (bmHost.transport as { ssh: { hostKey: string } }).ssh;
        const connection = { host: "127.0.0.1", port: PORTS.bm, user: "root", privateKey: Object.values(bmSecrets)[0], hostKey: ssh.hostKey };
        return { api: { url: web.url, username: web.username, password: web.password }, unit: "concourse-worker.service", converged: "", connection };
    };

    before(async () => {
        env = ensureEngine(path.join(root, "state"));
        lxd.start();
        const release = concourseRelease();
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.mkdirSync(path.join(datasets, "scratch_rw"), { recursive: true });
        fs.writeFileSync(path.join(datasets, "models", "weights.txt"), "read me only\n");
        fs.chmodSync(datasets, 0o755);
        // The worker's container maps its users away from this machine's: the writable folder is open to all.
        fs.chmodSync(path.join(datasets, "scratch_rw"), 0o1777);
        // A machine reached over SSH that reaches the TSA as its own 127.0.0.1:2222, as a worker on another box would reach the web.
        // It starts containers itself, so it needs nesting (without it runc cannot mount a new /proc there).
        const bm = lxd.sshHost("e2e-cbm", PORTS.bm, "bm", root, { "security.nesting": "true" });
        // A new network namespace inherits this machine's ip_forward: start from 0, which the
        // worker's bridge turns on and its removal must put back.
        lxd.exec("e2e-cbm", "echo 0 >/proc/sys/net/ipv4/ip_forward");
        lxd.lxc("config", "device", "add", "e2e-cbm", "tsa", "proxy", `listen=tcp:127.0.0.1:${TSA_INSIDE_BM}`, `connect=tcp:127.0.0.1:${PORTS.tsa}`, "bind=instance");
        // It is an unprivileged container itself, which its stack entry has to say.
        bmHost = { ...bm.host, concourse: { tags: ["e2e", "bm"], tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE_BM, userNamespace: true } };
        bmSecrets = bm.secrets;
        config = {
            defaults: { concourse: { version: "8.2.5", binary: { path: release }, networkMtu: 1500 } },
            web: { name: "ci", transport: { lxd: { server: { socket: lxd.socket }, instance: "e2e-ci", image: "gpu-workers/debian-12", sshPort: PORTS.webSsh, publish: { web: PORTS.web, tsa: PORTS.tsa } } } },
            hosts: [lxHost(), bmHost],
            secrets: bmSecrets,
        };
        stack = await makeStack(makeProject(path.join(root, "project")), "ci", env, config);
    });

    after(async () => {
        try { await stack?.destroy(); } catch { /* the daemon goes next anyway */ }
        try { lxd.lxc("delete", "--force", "e2e-cbm"); } catch { /* already gone */ }
        lxd.stop();
        fly.cleanup();
        fs.rmSync(root, { recursive: true, force: true });
    });

    it("one up: the web answers, and both workers are running in it with the tags of their plans", async () => {
        const result = await stack.up();
        web = result.outputs.web.value as typeof web;
        assert.strictEqual(web.url, `http://127.0.0.1:${PORTS.web}`);
        assert.strictEqual(web.username, "admin");
        fly.login(web.url, web.username, web.password);
        const stateFiles = execFileSync("find", [path.join(root, "state"), "-name", "*.json", "-path", "*stacks*"], { encoding: "utf8" }).trim().split("\n");
        const state = stateFiles.map((f) => fs.readFileSync(f, "utf8")).join("\n");
        assert.ok(state.length > 1000 && !state.includes(web.password), "the generated password is no plain text in the state");
        assert.doesNotMatch(state, /BEGIN (RSA |OPENSSH )?PRIVATE KEY/, "nor is any key");
        const workers = result.outputs.workers.value as Record<string, { tags: string[] }>;
        assert.deepStrictEqual(workers.lx.tags, ["e2e", "lx"]);
        const listed = Object.fromEntries(fly.workers().map((w) => [w.name, w]));
        assert.deepStrictEqual({ state: listed.lx?.state, tags: listed.lx?.tags }, { state: "running", tags: ["e2e", "lx"] });
        assert.deepStrictEqual({ state: listed.bm?.state, tags: listed.bm?.tags }, { state: "running", tags: ["e2e", "bm"] });
    });

    it("a task tagged for the LXD worker runs through the wrapper: dataset modes, writes, and no GPU variables even when it asks", () => {
        const r = execute(shellTask([
            "test -f /srv/models/weights.txt",
            "if touch /srv/models/x 2>/dev/null; then echo 'models: writable'; else echo 'models: read-only'; fi",
            "echo from-the-task > /srv/scratch_rw/proof && echo 'scratch_rw: written'",
            "env | grep -E '^(NVIDIA|AMD|HSA)_' || echo 'gpu variables: none'",
        ].join("\n"), { NVIDIA_VISIBLE_DEVICES: "all" }), ["e2e", "lx"]);
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /models: read-only/);
        assert.match(r.stdout, /scratch_rw: written/);
        assert.match(r.stdout, /gpu variables: none/);
        assert.doesNotMatch(r.stdout, /NVIDIA_VISIBLE_DEVICES=/);
        assert.strictEqual(fs.readFileSync(path.join(datasets, "scratch_rw", "proof"), "utf8"), "from-the-task\n", "the write reached the host folder");
    });

    it("an untagged task does not land on the tagged workers", () => {
        const r = execute(shellTask("echo ran"), [], 60_000);
        assert.notStrictEqual(r.status, 0, r.stdout);
        assert.match(r.stdout + r.stderr, /no workers satisfying/);
        assert.doesNotMatch(r.stdout, /^ran$/m);
    });

    it("a pipeline is set, triggered and watched with fly", () => {
        const pipeline = path.join(root, "pipeline.yml");
        fs.copyFileSync(path.join(__dirname, "..", "..", "..", "examples", "pipeline.yml"), pipeline);
        fly.ok(["set-pipeline", "-p", "datasets", "-c", pipeline, "-v", "worker-tag=lx", "-n"]);
        fly.ok(["unpause-pipeline", "-p", "datasets"]);
        const out = fly.ok(["trigger-job", "-j", "datasets/check-datasets", "-w"], 240_000);
        assert.match(out, /\/srv\/models: read-only/);
        assert.match(out, /\/srv\/scratch_rw: read-write/);
        assert.match(out, /succeeded/);
    });

    it("the registration check reports what the web says: an absent worker, other tags, with the worker's log", async () => {
        const base = { ...checkInputs(), timeoutSeconds: 3, task: false };
        await assert.rejects(checkRegistration({ ...base, worker: "nobody", tags: [] }), /the web lists no worker nobody \(it lists: .*bm.*\)/);
        await assert.rejects(checkRegistration({ ...base, worker: "bm", tags: ["e2e", "gpu"] }),
            /worker bm: its tags are \[e2e, bm\], expected \[e2e, gpu\] \(after waiting 3s\)\nlast lines of concourse-worker\.service on 127\.0\.0\.1:2394:\n[\s\S]*"source":"worker"/);
    });

    it("the task check runs a task with the worker's tags through the web, and the build shows in fly", async () => {
        const r = await checkRegistration({ ...checkInputs(), timeoutSeconds: 30, worker: "bm", tags: ["e2e", "bm"], task: true });
        const outs = r.outs as { taskBuild: number; taskWorker: string; taskOutput: string };
        assert.strictEqual(outs.taskWorker, "bm", "only bm has its tags");
        assert.match(outs.taskOutput, /gpu-workers: the task check ran/);
        const build = fly.ok(["builds", "--json"]);
        const listed = (JSON.parse(build) as { id: number; status: string }[]).find((b) => b.id === outs.taskBuild);
        assert.strictEqual(listed?.status, "succeeded");
    });

    it("a tag added in the stack reaches fly workers after one up; a containerd runtime setting reaches containerd's config dump", async () => {
        config.hosts = [lxHost({ concourse: { tags: ["e2e", "lx", "added"] }, containerd: { runtimeName: "gpu-e2e" } }), bmHost];
        await setStackConfig(stack, config);
        await stack.up();
        const lx = fly.workers().find((w) => w.name === "lx");
        assert.deepStrictEqual({ state: lx?.state, tags: lx?.tags }, { state: "running", tags: ["e2e", "lx", "added"] });
        assert.match(lxd.exec("e2e-lx", "containerd config dump"), /runtimes\.gpu-e2e\]/);
    });

    it("a second up changes nothing", async () => {
        const result = await stack.up();
        assert.deepStrictEqual(Object.keys(changes(result)), ["same"], JSON.stringify(result.summary.resourceChanges));
    });

    it("a worker deleted from the stack is retired: the web forgets it, its host keeps no debris", async () => {
        const debris = () => lxd.exec("e2e-cbm", [
            "ip link show concourse0 >/dev/null 2>&1 && echo bridge",
            "iptables-save | grep -qE '^:(CNI|CONCOURSE)-' && echo chains",
            // The brackets keep pgrep from matching this very shell's command line.
            "pgrep -f '[c]ontainerd-shim' >/dev/null && echo shims",
            "grep -q ' /opt/concourse/worker' /proc/self/mounts && echo mounts",
            "echo ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)",
            "echo containerd=$(systemctl is-active containerd)",
            "true",
        ].join("; ")).trim().split("\n");
        // The bm worker has run a task, so it has the bridge, the chains and the containers' debris.
        const r = execute(shellTask("echo on-bm"), ["e2e", "bm"]);
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
        assert.ok(debris().includes("bridge"), "the task left the bridge that a removal must clean");
        config.hosts = [lxHost({ concourse: { tags: ["e2e", "lx", "added"] }, containerd: { runtimeName: "gpu-e2e" } })];
        await setStackConfig(stack, config);
        await stack.up();
        assert.deepStrictEqual(fly.workers().map((w) => w.name), ["lx"], "the web keeps no stalled worker");
        assert.deepStrictEqual(debris(), ["ip_forward=0", "containerd=active"]);
    });

    it("destroy removes the web and the worker instances", async () => {
        await stack.destroy();
        const left = lxd.lxc("list", "--format", "csv", "-c", "n").split("\n").filter((n) => n.startsWith("e2e-") && n !== "e2e-cbm");
        assert.deepStrictEqual(left, []);
    });
});
