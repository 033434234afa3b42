/**
 * A real Concourse, end to end through the real Pulumi engine: one stack brings up a web node
 * (an LXD instance with PostgreSQL, made by the stack) and three workers (an LXD instance made by
 * the stack, and two machines reached over SSH: an unprivileged container, and a privileged one
 * whose containers share the machine's user namespace, as on bare metal); fly then runs tasks
 * and a pipeline on them, privileged steps among them.
 * The Concourse release is supplied (GPU_WORKERS_CONCOURSE_RELEASE); without it the suite is pending.
 * fly comes from the web itself.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { create as checkRegistration } from "../../components/providers/checks/worker-registration-ops";
import { Fly, flyFor } from "../support/concourse";
import { buildFileHandleTool } from "../support/file-handle";
import { FAKE_GPU, privilegedProbeScript, probeLines, probeMeaning, withCapabilitiesTheWorkerHas } from "../support/privileged-probe";
import { RUNC_REAL_PATH } from "../../components/lib/links/runc-wrapper/render";
import { datasetSourceDir, ensureEngine, makeProject, makeStack, makeTempDir, setStackConfig, StackConfig, tempDirName, TestLxd } from "../support/engine";
import { pendingWithout, release } from "../support/supplied";

const PORTS = { web: 2390, tsa: 2391, webSsh: 2392, lx: 2393, bm: 2394, pbm: 2395 };
const TSA_INSIDE_BM = 2222;
/** The privileged machine: its containers share this machine's user namespace, as on bare metal. */
const PBM = "e2e-cpbm";

function changes(result: { summary: { resourceChanges?: Record<string, number> } }): Record<string, number> {
    return Object.fromEntries(Object.entries(result.summary.resourceChanges ?? {}).filter(([, n]) => n > 0));
}

describe("a real Concourse: web and workers from one stack, tasks through the wrapper", function () {
    this.timeout(900_000);
    const root = tempDirName("gw-ci-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    let started = false;
    let datasets = "";
    let fly: Fly;
    let env: Record<string, string>;
    let stack: Stack;
    let config: StackConfig;
    let web: { url: string; username: string; password: string };
    let bmSecrets: Record<string, string>;
    let bmHost: Record<string, unknown>;
    let pbmEntry: Record<string, unknown>;
    const pbmHost = (concourse: Record<string, unknown> = {}) => ({
        ...pbmEntry,
        concourse: { tags: ["e2e", "pbm"], tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE_BM, ...concourse },
    });

    const lxHost = (extra: Record<string, unknown> = {}) => ({
        name: "lx",
        transport: {
            lxd: {
                server: { socket: lxd.socket },
                instance: "e2e-lx",
                image: "gpu-workers/debian-12",
                sshPort: PORTS.lx,
                shiftWritable: false,
                datasetSource: datasets,
                datasetFolders: ["models", "scratch_rw"],
            },
        },
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

    /** Runs the privileged probe as a privileged step on pbm; returns what it saw, and the sha256 of pbm's worker key. */
    function probePrivileged(): { seen: ReturnType<typeof probeMeaning>; keySha256: string } {
        const handle = lxd.exec(PBM, "/srv/tools/file-handle name /etc/concourse/worker_key").trim();
        const file = path.join(root, `privileged-${Date.now()}.yml`);
        fs.writeFileSync(file, JSON.stringify(shellTask(privilegedProbeScript(handle))));
        const r = withCapabilitiesTheWorkerHas(
            (script) => lxd.exec(PBM, script),
            RUNC_REAL_PATH,
            () => fly.run(["execute", "-c", file, "--privileged", "--tag", "e2e", "--tag", "pbm"], 240_000),
        );
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
        return { seen: probeMeaning(probeLines(r.stdout)), keySha256: lxd.exec(PBM, "sha256sum /etc/concourse/worker_key").split(" ")[0] };
    }

    /** What the registration check is given for the bm worker, but for what each test asks. */
    const checkInputs = () => {
        const ssh = (bmHost.transport as { ssh: { hostKey: string } }).ssh;
        const connection = { host: "127.0.0.1", port: PORTS.bm, user: "root", privateKey: Object.values(bmSecrets)[0], hostKey: ssh.hostKey };
        return { api: { url: web.url, username: web.username, password: web.password }, unit: "concourse-worker.service", converged: "", connection };
    };

    before(async function () {
        pendingWithout(this, "concourse");
        makeTempDir(root);
        datasets = datasetSourceDir("gw-ci-");
        env = ensureEngine(path.join(root, "state"));
        lxd.start();
        started = true;
        const { tarball, version } = release();
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
        lxd.lxc(
            "config",
            "device",
            "add",
            "e2e-cbm",
            "tsa",
            "proxy",
            `listen=tcp:127.0.0.1:${TSA_INSIDE_BM}`,
            `connect=tcp:127.0.0.1:${PORTS.tsa}`,
            "bind=instance",
        );
        // It is an unprivileged container itself, which its stack entry has to say.
        bmHost = { ...bm.host, concourse: { tags: ["e2e", "bm"], tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE_BM, userNamespace: true } };
        bmSecrets = bm.secrets;
        // A privileged container: no user namespace of its own, so neither have the containers
        // its worker starts for a full-privileged step, as on bare metal (where an unprivileged
        // container's kernel would lock their mounts whatever their capabilities).
        // LXD also drops a few capabilities (sys_module, sys_rawio, sys_time, mac_*) from it and
        // denies a few syscalls (open_by_handle_at among them); a machine's root keeps them, and
        // runc cannot give a full-privileged step what its worker lacks.
        const pbm = lxd.sshHost(PBM, PORTS.pbm, "pbm", root, {
            "security.privileged": "true",
            "security.nesting": "true",
            "raw.lxc": "lxc.cap.drop =",
            "security.syscalls.deny_default": "false",
        });
        lxd.lxc("config", "device", "add", PBM, "tsa", "proxy", `listen=tcp:127.0.0.1:${TSA_INSIDE_BM}`, `connect=tcp:127.0.0.1:${PORTS.tsa}`, "bind=instance");
        // A GPU node the machine lets it use (its device cgroup allows it), which its tasks' cgroups do not.
        lxd.lxc("config", "device", "add", PBM, "gpu0", "unix-char", "path=/dev/nvidia0", `major=${FAKE_GPU.major}`, `minor=${FAKE_GPU.minor}`);
        lxd.exec(PBM, "mkdir -p /srv/models /srv/tools && echo 'read me only' > /srv/models/weights.txt");
        lxd.lxc("file", "push", "--mode", "0755", buildFileHandleTool(root), `${PBM}/srv/tools/file-handle`);
        pbmEntry = pbm.host;
        config = {
            defaults: { concourse: { version, binary: { path: tarball }, networkMtu: 1500 } },
            web: {
                name: "ci",
                transport: {
                    lxd: {
                        server: { socket: lxd.socket },
                        instance: "e2e-ci",
                        image: "gpu-workers/debian-12",
                        sshPort: PORTS.webSsh,
                        publish: { web: PORTS.web, tsa: PORTS.tsa },
                    },
                },
            },
            hosts: [lxHost(), bmHost, pbmHost()],
            secrets: { ...bmSecrets, ...pbm.secrets },
        };
        stack = await makeStack(makeProject(path.join(root, "project")), "ci", env, config);
    });

    after(async () => {
        try {
            await stack?.destroy();
        } catch {
            /* the daemon goes next anyway */
        }
        for (const instance of ["e2e-cbm", PBM]) {
            try {
                lxd.lxc("delete", "--force", instance);
            } catch {
                /* already gone */
            }
        }
        if (started) lxd.stop();
        fly?.cleanup();
        fs.rmSync(root, { recursive: true, force: true });
        if (datasets) fs.rmSync(datasets, { recursive: true, force: true });
    });

    it("one up: the web answers, and every worker is running in it with the tags of its plan", async () => {
        const result = await stack.up();
        web = result.outputs.web.value as typeof web;
        assert.strictEqual(web.url, `http://127.0.0.1:${PORTS.web}`);
        assert.strictEqual(web.username, "admin");
        fly = await flyFor("gw-e2e", web);
        const stateFiles = execFileSync("find", [path.join(root, "state"), "-name", "*.json", "-path", "*stacks*"], { encoding: "utf8" })
            .trim()
            .split("\n");
        const state = stateFiles.map((f) => fs.readFileSync(f, "utf8")).join("\n");
        assert.ok(state.length > 1000 && !state.includes(web.password), "the generated password is no plain text in the state");
        assert.doesNotMatch(state, /BEGIN (RSA |OPENSSH )?PRIVATE KEY/, "nor is any key");
        const workers = result.outputs.workers.value as Record<string, { tags: string[] }>;
        assert.deepStrictEqual(workers.lx.tags, ["e2e", "lx"]);
        const listed = Object.fromEntries(fly.workers().map((w) => [w.name, w]));
        assert.deepStrictEqual({ state: listed.lx?.state, tags: listed.lx?.tags }, { state: "running", tags: ["e2e", "lx"] });
        assert.deepStrictEqual({ state: listed.bm?.state, tags: listed.bm?.tags }, { state: "running", tags: ["e2e", "bm"] });
        assert.deepStrictEqual(
            { state: listed.pbm?.state, tags: listed.pbm?.tags },
            { state: "running", tags: ["e2e", "pbm"] },
            "the default privileged mode adds no tag",
        );
    });

    it("by default a privileged step on a machine whose containers share its user namespace gets nothing more: no CAP_SYS_ADMIN, the dataset stays read-only, no GPU node outside its cgroup, no worker key", () => {
        assert.match(lxd.exec(PBM, "cat /proc/self/uid_map"), /^\s*0\s+0\s+4294967295\s*$/, "the worker's host has no user namespace of its own");
        const { seen } = probePrivileged();
        assert.deepStrictEqual(seen, { ownUserNamespace: true, capSysAdmin: false, models: "read-only", gpuNode: "refused", workerKey: "refused" });
        assert.strictEqual(lxd.exec(PBM, "ls /srv/models"), "weights.txt\n", "nothing was written into the dataset");
    });

    it("a task tagged for the LXD worker runs through the wrapper: dataset modes, writes, and no GPU variables even when it asks", () => {
        const r = execute(
            shellTask(
                [
                    "test -f /srv/models/weights.txt",
                    "if touch /srv/models/x 2>/dev/null; then echo 'models: writable'; else echo 'models: read-only'; fi",
                    "echo from-the-task > /srv/scratch_rw/proof && echo 'scratch_rw: written'",
                    "env | grep -E '^(NVIDIA|AMD|HSA)_' || echo 'gpu variables: none'",
                ].join("\n"),
                { NVIDIA_VISIBLE_DEVICES: "all" },
            ),
            ["e2e", "lx"],
        );
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
        await assert.rejects(
            checkRegistration({ ...base, worker: "bm", tags: ["e2e", "gpu"] }),
            /worker bm: its tags are \[e2e, bm\], expected \[e2e, gpu\] \(after waiting 3s\)\nlast lines of concourse-worker\.service on 127\.0\.0\.1:2394:\n[\s\S]*"source":"worker"/,
        );
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
        // The same up turns pbm's privileged mode to full (the next test).
        config.hosts = [
            lxHost({ concourse: { tags: ["e2e", "lx", "added"] }, containerd: { runtimeName: "gpu-e2e" } }),
            bmHost,
            pbmHost({ privilegedMode: "full" }),
        ];
        await setStackConfig(stack, config);
        await stack.up();
        const lx = fly.workers().find((w) => w.name === "lx");
        assert.deepStrictEqual({ state: lx?.state, tags: lx?.tags }, { state: "running", tags: ["e2e", "lx", "added"] });
        assert.match(lxd.exec("e2e-lx", "containerd config dump"), /runtimes\.gpu-e2e\]/);
    });

    it("privilegedMode: full is an opt-in that shows in fly workers (privileged=full), and there a privileged step is root on the worker: all the default keeps out", () => {
        const pbm = fly.workers().find((w) => w.name === "pbm");
        assert.deepStrictEqual({ state: pbm?.state, tags: pbm?.tags }, { state: "running", tags: ["privileged=full", "e2e", "pbm"] });
        const { seen, keySha256 } = probePrivileged();
        try {
            // No user namespace: root in the step is root on the worker; and the probes of the test before see what they look for.
            assert.deepStrictEqual(seen, { ownUserNamespace: false, capSysAdmin: true, models: "written", gpuNode: "opened", workerKey: `read ${keySha256}` });
        } finally {
            lxd.exec(PBM, "rm -f /srv/models/written-by-a-task");
        }
    });

    it("a second up changes nothing", async () => {
        const result = await stack.up();
        assert.deepStrictEqual(Object.keys(changes(result)), ["same"], JSON.stringify(result.summary.resourceChanges));
    });

    it("a worker deleted from the stack is retired: the web forgets it, its host keeps no debris", async () => {
        const debris = () =>
            lxd
                .exec(
                    "e2e-cbm",
                    [
                        "ip link show concourse0 >/dev/null 2>&1 && echo bridge",
                        "iptables-save | grep -qE '^:(CNI|CONCOURSE)-' && echo chains",
                        // The brackets keep pgrep from matching this very shell's command line.
                        "pgrep -f '[c]ontainerd-shim' >/dev/null && echo shims",
                        "grep -q ' /opt/concourse/worker' /proc/self/mounts && echo mounts",
                        "echo ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)",
                        "echo containerd=$(systemctl is-active containerd)",
                        "true",
                    ].join("; "),
                )
                .trim()
                .split("\n");
        // The bm worker has run a task, so it has the bridge, the chains and the containers' debris.
        const r = execute(shellTask("echo on-bm"), ["e2e", "bm"]);
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
        assert.ok(debris().includes("bridge"), "the task left the bridge that a removal must clean");
        config.hosts = [lxHost({ concourse: { tags: ["e2e", "lx", "added"] }, containerd: { runtimeName: "gpu-e2e" } })];
        await setStackConfig(stack, config);
        await stack.up();
        assert.deepStrictEqual(
            fly.workers().map((w) => w.name),
            ["lx"],
            "the web keeps no stalled worker",
        );
        assert.deepStrictEqual(debris(), ["ip_forward=0", "containerd=active"]);
    });

    it("destroy removes the web and the worker instances", async () => {
        await stack.destroy();
        const left = lxd
            .lxc("list", "--format", "csv", "-c", "n")
            .split("\n")
            .filter((n) => n.startsWith("e2e-") && n !== "e2e-cbm" && n !== PBM);
        assert.deepStrictEqual(left, []);
    });
});
