/**
 * End to end through the real Pulumi engine (Automation API): the program converges LXD
 * instances on a private LXD daemon, reached over SSH by the builtin transport, as users run it.
 * The chain runs through the validator; where the Concourse release is supplied the workers run
 * it too, and with no web in these stacks register nowhere (the TSA is a placeholder), which
 * test/e2e/concourse.test.ts covers.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { e2eConcourseDefaults, PLACEHOLDER_TSA_KEY } from "../support/concourse";
import { makeStack, PASSPHRASE, setStackConfig, StackConfig } from "../support/engine";
import { engineSuite } from "../support/engine-suite";
import { pendingWithout } from "../support/supplied";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

function changes(result: { summary: { resourceChanges?: Record<string, number> } }): Record<string, number> {
    return Object.fromEntries(Object.entries(result.summary.resourceChanges ?? {}).filter(([, n]) => n > 0));
}

describe("end to end through the Pulumi engine", function () {
    this.timeout(600_000);
    const suite = engineSuite("gw-e2e-");
    const { lxd, stacks } = suite;

    function lxdHost(name: string, port: number, extra: Record<string, unknown> = {}) {
        return {
            name,
            transport: {
                lxd: { server: { socket: lxd.socket }, instance: `e2e-${name}`, image: "gpu-workers/debian-12", sshPort: port, shiftWritable: false },
            },
            vendor: "none",
            ...extra,
        };
    }

    const defaults = () => ({ concourse: e2eConcourseDefaults({ tsaHost: "127.0.0.1", tsaPublicKey: PLACEHOLDER_TSA_KEY, tags: ["e2e"] }) });

    /** SSH logins the instance's sshd accepted so far. */
    const logins = (instance: string) => Number(lxd.exec(instance, "journalctl -u ssh --no-pager -o cat | grep -c 'Accepted publickey' || true").trim());

    describe("an LXD host created by the stack", () => {
        let stack: Stack;
        let config: StackConfig;
        const instance = "e2e-lx";
        // Host steps, the drift guard's refresh check too, run through the program's own SSH client: an
        // `ssh` first on the engine's PATH writes down any call that spawns one (then does what ssh does).
        const sshCalls = () => path.join(suite.root, "ssh-calls.log");
        const sshSpawned = () => (fs.existsSync(sshCalls()) ? fs.readFileSync(sshCalls(), "utf8") : "");
        let pathBefore: string | undefined;

        before(async () => {
            const bin = path.join(suite.root, "ssh-recorder");
            fs.mkdirSync(bin, { recursive: true });
            const realSsh = execFileSync("bash", ["-c", "command -v ssh"], { encoding: "utf8" }).trim();
            fs.writeFileSync(
                path.join(bin, "ssh"),
                `#!/bin/sh\nprintf '%s\\n' "ssh $*" >> ${JSON.stringify(sshCalls())}\nexec ${JSON.stringify(realSsh)} "$@"\n`,
                { mode: 0o755 },
            );
            pathBefore = process.env.PATH;
            process.env.PATH = `${bin}:${process.env.PATH}`;
            config = { defaults: defaults(), hosts: [lxdHost("lx", 2311)] };
            stack = await makeStack(suite.project, "lx", suite.env, config);
            stacks.push(stack);
        });

        after(() => {
            process.env.PATH = pathBefore;
        });

        it("up on a fresh host converges the chain through the validator, over one SSH login", async () => {
            const result = await stack.up();
            const workers = result.outputs.workers.value as Record<string, { tags: string[]; stoppedBeforeWorker: string | null }>;
            assert.deepStrictEqual(workers.lx.tags, ["e2e"]);
            const onHost = lxd.exec(
                instance,
                [
                    "sha256sum $(command -v runc) /usr/local/lib/gpu-workers/runc-wrapper | cut -d' ' -f1 | uniq | wc -l",
                    "test -f /etc/containerd/conf.d/gpu-workers.toml && echo drop-in",
                ].join("; "),
            );
            assert.deepStrictEqual(onHost.trim().split("\n"), ["1", "drop-in"], "runc is the wrapper; containerd has its drop-in");
            const resources = (await stack.exportStack()).deployment.resources as { urn: string; type: string }[];
            assert.ok(
                resources.some((r) => r.urn.endsWith("::lx-validate-validate")),
                "the validator ran",
            );
            assert.ok(!resources.some((r) => r.type.startsWith("command:")), "nothing of the Command provider");
            assert.strictEqual(logins(instance), 1, "every step of the host went over one SSH login");
            assert.strictEqual(sshSpawned(), "", "no host step spawned an ssh process");
        });

        it("with the Concourse release: the real worker runs, with the tags as flags, over Concourse's runc wrapped", function () {
            pendingWithout(this, "concourse");
            const onHost = lxd.exec(
                instance,
                [
                    "sha256sum /usr/local/lib/gpu-workers/runc-wrapper /usr/local/concourse/bin/runc | cut -d' ' -f1 | uniq | wc -l",
                    "systemctl is-active concourse-worker",
                    "tr '\\0' ' ' < /proc/$(systemctl show -p MainPID --value concourse-worker)/cmdline",
                ].join("; "),
            );
            const [distinct, active, args] = onHost.trim().split("\n");
            assert.strictEqual(distinct, "1", "Concourse's runc is the wrapper");
            assert.strictEqual(active, "active");
            assert.strictEqual(args.trim(), "/usr/local/concourse/bin/concourse worker --tag=e2e", "the real worker runs with the tags as flags");
        });

        it("a second up changes nothing, runs no host command and dials no host", async () => {
            const before = lxd.exec(instance, "stat -c %i:%Y /etc/gpu-workers/runc-wrapper.json /usr/local/lib/gpu-workers/containerd-runtime.toml");
            const loggedIn = logins(instance);
            const result = await stack.up();
            assert.deepStrictEqual(Object.keys(changes(result)), ["same"]);
            assert.strictEqual(
                lxd.exec(instance, "stat -c %i:%Y /etc/gpu-workers/runc-wrapper.json /usr/local/lib/gpu-workers/containerd-runtime.toml"),
                before,
            );
            assert.strictEqual(logins(instance), loggedIn, "no SSH login");
        });

        it("a changed setting updates only what it touches, and the preview shows the new content", async () => {
            config.defaults = { ...defaults(), datasets: { root: "/srv", writableSuffixes: ["_scratch"] } };
            await setStackConfig(stack, config);
            const preview = await stack.preview({ diff: true });
            assert.match(preview.stdout, /_scratch/, "the diff shows the new wrapper config");
            const updated: string[] = [];
            await stack.up({
                onEvent: (e) => {
                    const m = e.resOutputsEvent?.metadata;
                    // The dynamic provider's own resource takes the stack's config as its inputs, so a
                    // config change updates it; it places nothing on a host.
                    if (m?.op === "update" && !m.urn.includes("::pulumi:providers:")) updated.push(m.urn.split("::").pop()!);
                },
            });
            // The worker's set of the program's own files (the wrapper's config is one), the steps that depend on the file (their file hashes changed), and the drift check that knows the file's hash.
            assert.deepStrictEqual(updated.sort(), ["lx-drift", "lx-files", "lx-runc-wrapper-runc-wrapper", "lx-validate-validate"]);
            assert.match(lxd.exec(instance, "cat /etc/gpu-workers/runc-wrapper.json"), /_scratch/);
            assert.strictEqual(sshSpawned(), "", "no host step spawned an ssh process");
        });

        it("drift: the wrapper removed by hand is restored by refresh and up", async () => {
            lxd.exec(instance, "cp /usr/local/lib/gpu-workers/runc.real /usr/sbin/runc");
            await stack.refresh();
            assert.strictEqual(sshSpawned(), "", "the drift check spawned no ssh process either");
            await stack.up();
            assert.strictEqual(lxd.exec(instance, "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapped").trim(), "wrapped");
        });

        it("the state holds no private key and no passphrase in plain text", () => {
            const files = execFileSync("find", [suite.root, "-name", "*.json", "-path", "*stacks*"], { encoding: "utf8" }).trim().split("\n");
            const state = files.map((f) => fs.readFileSync(f, "utf8")).join("\n");
            assert.ok(state.length > 1000, "the state was found");
            assert.doesNotMatch(state, /BEGIN (OPENSSH |RSA )?PRIVATE KEY/);
            assert.ok(!state.includes(PASSPHRASE));
        });

        it("a host command keeps its stdin in the state once, as an input: the outputs hold a sum of it", async () => {
            const resources = (await stack.exportStack()).deployment.resources as {
                urn: string;
                type: string;
                inputs: Record<string, unknown>;
                outputs: Record<string, unknown>;
            }[];
            const set = resources.find((r) => r.urn.endsWith("::lx-files"))!;
            assert.strictEqual(set.type, "pulumi-nodejs:dynamic/gpu-workers:SshCommand");
            assert.match(String(set.inputs.stdin), /^==> \/\S+ \(mode/, "the file set's stdin, as an input");
            assert.ok(!("stdin" in set.outputs), "not again as an output");
            assert.ok("commandSha256" in set.outputs);
        });

        it("destroy removes the instance", async () => {
            await stack.destroy();
            assert.doesNotMatch(lxd.lxc("list", "--format", "csv", "-c", "n"), new RegExp(instance));
        });
    });

    describe("a machine reached over SSH (bare metal)", () => {
        const name = "e2e-bm";
        const port = 2312;
        let stack: Stack;
        let pristine: string;
        const fingerprint = () =>
            lxd.exec(name, "sha256sum /usr/sbin/runc /etc/containerd/config.toml; ls /etc/containerd /usr/local/lib/gpu-workers 2>&1; true");
        const wrapperState = () => lxd.exec(name, "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapped; true").trim();

        before(async () => {
            const { host, secrets } = lxd.sshHost(name, port, "bm", suite.root);
            pristine = fingerprint();
            stack = await makeStack(suite.project, "bm", suite.env, { defaults: defaults(), hosts: [host], secrets });
            stacks.push(stack);
        });

        after(() => {
            try {
                lxd.lxc("delete", "--force", name);
            } catch {
                /* already gone */
            }
        });

        it("a fault mid-way (runc a symlink when the wrapper step runs) fails the up; the next up converges", async () => {
            // Still a runc for the steps before (a missing one they would install), but not one the wrapper may take the place of.
            lxd.exec(name, "mv /usr/sbin/runc /usr/sbin/runc.hidden && ln -s runc.hidden /usr/sbin/runc");
            await assert.rejects(stack.up(), /\/usr\/sbin\/runc is a symlink/);
            assert.match(lxd.exec(name, "ls /etc/containerd/conf.d"), /gpu-workers\.toml/, "the steps before the fault ran");
            lxd.exec(name, "rm /usr/sbin/runc && mv /usr/sbin/runc.hidden /usr/sbin/runc");
            await stack.up();
            assert.strictEqual(wrapperState(), "wrapped");
        });

        it("destroy leaves the host as it was before the first up", async () => {
            await stack.destroy();
            assert.strictEqual(fingerprint(), pristine);
        });

        it("an up interrupted mid-way (Ctrl-C) stops before the wrapper; the next up converges, and destroy is clean again", async () => {
            // The automation API sends SIGINT on abort: pulumi lets the steps in flight finish, starts no more.
            const interrupt = new AbortController();
            let output = "";
            const interrupted = stack.up({
                signal: interrupt.signal,
                onOutput: (out) => {
                    output += out;
                    if (!interrupt.signal.aborted && /bm-containerd\S*\s+creating/.test(output)) interrupt.abort();
                },
            });
            await assert.rejects(interrupted, Error, "the interrupted up reports failure");
            assert.ok(interrupt.signal.aborted, "the up was interrupted while the containerd step ran");
            assert.notStrictEqual(wrapperState(), "wrapped", "the wrapper step, after containerd, never started");
            await stack.up();
            assert.strictEqual(wrapperState(), "wrapped");
            await stack.destroy();
            assert.strictEqual(fingerprint(), pristine);
        });
    });

    it("a bad stack config stops the program with every problem and its path, no stack trace", async () => {
        const stack = await makeStack(suite.project, "bad", suite.env, {
            defaults: defaults(),
            hosts: [
                {
                    name: "bad",
                    transport: { ssh: { host: "127.0.0.1", privateKeySecret: "k", hostKey: HOST_KEY } },
                    vendor: "nvidia",
                    gpus: [{ index: -1, model: "X", memoryMiB: 1 }],
                    colour: "red",
                },
            ],
        });
        const error = await stack.preview().then(
            () => undefined,
            (e: Error) => e,
        );
        assert.ok(error, "the preview fails");
        assert.match(error.message, /hosts\[0\]\.gpus\[0\]\.index: expected a non-negative integer/);
        assert.match(error.message, /hosts\[0\]: unknown key colour/);
        assert.doesNotMatch(error.message, /at .*\.js:\d+/, "no stack trace");
        await stack.workspace.removeStack("bad");
    });

    it("an address that accepts but never speaks SSH fails the up with the address, where the provider's handshake would wait forever", async () => {
        // A wrong port, or an HTTP server waiting for its request: it accepts the connection and says nothing.
        const accepted: net.Socket[] = [];
        const silent = net.createServer((socket) => accepted.push(socket));
        await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
        const port = (silent.address() as net.AddressInfo).port;
        try {
            const stack = await makeStack(suite.project, "silent", suite.env, {
                defaults: defaults(),
                hosts: [
                    {
                        name: "silent",
                        transport: {
                            ssh: {
                                host: "127.0.0.1",
                                port,
                                privateKeySecret: "silent-key",
                                hostKey: generateOpensshKeyPair("h").publicKeyOpenssh.split(" ").slice(0, 2).join(" "),
                            },
                        },
                        vendor: "none",
                    },
                ],
                secrets: { "silent-key": generateOpensshKeyPair("silent").privateKeyOpenssh },
            });
            const started = Date.now();
            const error = await stack.up().then(
                () => undefined,
                (e: Error) => e,
            );
            const seconds = (Date.now() - started) / 1000;
            assert.ok(error, "the up fails");
            assert.match(
                error.message,
                new RegExp(`127\\.0\\.0\\.1:${port} accepted a connection but completed no SSH handshake in 15 s: it is not an SSH server`),
            );
            assert.doesNotMatch(error.message, /error serializing property/, "said once, in its own words");
            assert.doesNotMatch(error.message, /at .*\.(js|ts):\d+/, "no stack trace");
            assert.ok(seconds < 120, `it fails within the dial timeout, not never (${seconds.toFixed(0)} s)`);
            assert.ok(accepted.length >= 1, "the address was tried");
            const state = (await stack.exportStack()).deployment as { pending_operations?: unknown[] };
            assert.deepStrictEqual(state.pending_operations ?? [], [], "no operation left pending: nothing was started on the address");
            await stack.destroy();
            await stack.workspace.removeStack("silent");
        } finally {
            for (const socket of accepted) socket.destroy();
            silent.close();
        }
    });

    it("preview with unreachable hosts lists every file and tag", async () => {
        const hostKey = generateOpensshKeyPair("x").publicKeyOpenssh.split(" ").slice(0, 2).join(" ");
        // A release by URL: the preview downloads nothing, and the worker's files are known.
        const binary = { url: "https://releases.example.invalid/concourse-8.2.5-linux-amd64.tgz", sha256: "0".repeat(64) };
        const stack = await makeStack(suite.project, "offline", suite.env, {
            defaults: { concourse: { ...defaults().concourse, version: "8.2.5", binary } },
            hosts: [
                {
                    name: "far",
                    transport: { ssh: { host: "127.0.0.1", port: 1, privateKeySecret: "far-key", hostKey } },
                    vendor: "nvidia",
                    nvswitches: 4,
                    gpus: [0, 1].map((index) => ({ index, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559 })),
                },
            ],
            secrets: { "far-key": generateOpensshKeyPair("far").privateKeyOpenssh },
        });
        const preview = await stack.preview({ diff: true });
        assert.doesNotMatch(preview.stdout, /create\s*: \[unknown\]/, "every command is known before the host is reached");
        for (const file of [
            "/etc/gpu-workers/runc-wrapper.json",
            "/etc/nvidia-container-runtime/config.toml",
            "/usr/share/nvidia/nvswitch/fabricmanager.cfg",
            "/etc/systemd/system/concourse-worker.service",
            "/etc/concourse/worker.env",
        ]) {
            assert.ok(preview.stdout.includes(file), `preview names ${file}`);
        }
        for (const tag of ["gpu-type=nvidia", "gpu-count=2", "gpu-devices=0,1", "gpu-model=h100-80gb-hbm3", "e2e"]) {
            assert.ok(preview.stdout.includes(`"${tag}"`), `preview shows tag ${tag}`);
        }
        await stack.workspace.removeStack("offline");
    });
});
