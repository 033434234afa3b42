/**
 * A worker behind a bastion, end to end through the real Pulumi engine: two machines (LXD
 * instances made here with `lxc`, as bare metal would be) on a private bridge that this machine
 * has no address on. The bastion's sshd is published on this machine's loopback; the worker's
 * sshd is published nowhere, so only the bastion reaches it. One `up` of a stack whose worker
 * names the bastion as its `transport.ssh.proxy` converges the worker and checks its
 * registration with the stack's web; the worker's sshd saw every login come from the bastion.
 */
import * as assert from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { e2eConcourseDefaults, flyFor, suppliedRelease } from "../support/concourse";
import { ensureEngine, makeProject, makeStack, makeTempDir, tempDirName, TestLxd } from "../support/engine";
import { pendingWithout } from "../support/supplied";

const PORTS = { web: 2490, tsa: 2491, webSsh: 2492, bastion: 2493 };
const TSA_INSIDE_WORKER = 2222;
/** The private network: a bridge on this machine with no address of this machine's on it. */
const BRIDGE = "gw-bastion0";
const LAN = { bastion: "10.231.0.1", worker: "10.231.0.2", prefix: 24 };
const BASTION = "e2e-bastion";
const WORKER = "e2e-behind";

/**
 * What an sshd at host:port says first when this machine connects, "" when nothing answers in
 * `ms`. (A TCP connect alone proves nothing here: this machine's network accepts connections to
 * any address it routes out.)
 */
function banner(host: string, port: number, ms = 5000): Promise<string> {
    return new Promise((resolve) => {
        let seen = "";
        const s = net.connect({ host, port });
        const done = () => (s.destroy(), resolve(seen));
        const timer = setTimeout(done, ms);
        s.on("data", (d: Buffer) => {
            seen += d.toString("latin1");
            if (seen.includes("\n")) {
                clearTimeout(timer);
                done();
            }
        });
        s.once("error", () => (clearTimeout(timer), done()));
        s.once("close", () => (clearTimeout(timer), done()));
    });
}

describe("a worker reached only through a bastion (transport.ssh.proxy)", function () {
    this.timeout(900_000);
    const root = tempDirName("gw-bastion-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    let started = false;
    let stack: Stack;
    let up: Awaited<ReturnType<Stack["up"]>>;
    let worker: { privateKeySecret: string; hostKey: string };
    let secrets: Record<string, string>;

    /** Puts an instance's NIC on the private bridge with its address. */
    const onLan = (instance: string, address: string) => lxd.exec(instance, `ip addr add ${address}/${LAN.prefix} dev lan0 && ip link set lan0 up`);
    const lanNic = ["lan0", "nic", "nictype=bridged", `parent=${BRIDGE}`, "name=lan0"];

    before(async () => {
        makeTempDir(root);
        const env = ensureEngine(path.join(root, "state"));
        lxd.start();
        started = true;
        // With the Concourse release, a web registers the worker; without, its chain ends at the validator.
        const release = suppliedRelease();
        // A run killed before its after hook leaves the bridge behind: start from none.
        spawnSync("ip", ["link", "del", BRIDGE]);
        execFileSync("ip", ["link", "add", BRIDGE, "type", "bridge"]);
        execFileSync("ip", ["link", "set", BRIDGE, "up"]);
        // The bastion: sshd published on this machine's loopback, and a leg on the private network.
        const bastionSshd = ["sshd", "proxy", `listen=tcp:127.0.0.1:${PORTS.bastion}`, "connect=tcp:127.0.0.1:22", "bind=host"];
        const bastion = lxd.sshMachine(BASTION, "bastion", root, {}, [bastionSshd, lanNic]);
        onLan(BASTION, LAN.bastion);
        // The worker: on the private network only. Its one proxy device is the TSA, which it
        // reaches as its own 127.0.0.1:2222 (listening inside it, connecting out to the web's
        // published port): outbound, as a fleet behind a bastion reaches its web.
        const tsa = ["tsa", "proxy", `listen=tcp:127.0.0.1:${TSA_INSIDE_WORKER}`, `connect=tcp:127.0.0.1:${PORTS.tsa}`, "bind=instance"];
        const behind = lxd.sshMachine(WORKER, "behind", root, { "security.nesting": "true" }, [lanNic, tsa]);
        onLan(WORKER, LAN.worker);
        worker = behind.ssh;
        secrets = { ...bastion.secrets, ...behind.secrets };
        const web = {
            name: "ci",
            transport: {
                lxd: {
                    server: { socket: lxd.socket },
                    instance: "e2e-bastion-ci",
                    image: "gpu-workers/debian-12",
                    sshPort: PORTS.webSsh,
                    publish: { web: PORTS.web, tsa: PORTS.tsa },
                },
            },
        };
        const config = {
            defaults: { concourse: e2eConcourseDefaults() },
            ...(release ? { web } : {}),
            hosts: [
                {
                    name: "behind",
                    transport: {
                        ssh: {
                            host: LAN.worker,
                            ...worker,
                            proxy: { host: "127.0.0.1", port: PORTS.bastion, ...bastion.ssh },
                        },
                    },
                    vendor: "none",
                    concourse: { tags: ["e2e", "behind"], tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE_WORKER, userNamespace: true },
                },
            ],
            secrets,
        };
        stack = await makeStack(makeProject(path.join(root, "project")), "bastion", env, config);
    });

    after(async () => {
        try {
            await stack?.destroy();
        } catch {
            /* the daemon goes next anyway */
        }
        for (const instance of [BASTION, WORKER]) {
            try {
                lxd.lxc("delete", "--force", instance);
            } catch {
                /* already gone */
            }
        }
        if (started) lxd.stop();
        spawnSync("ip", ["link", "del", BRIDGE], { stdio: "ignore" });
        fs.rmSync(root, { recursive: true, force: true });
    });

    it("this machine cannot reach the worker's sshd; the bastion can", async () => {
        const devices = JSON.parse(lxd.lxc("query", `/1.0/instances/${WORKER}`)).expanded_devices as Record<string, Record<string, string>>;
        const published = Object.entries(devices).filter(([, d]) => d.type === "proxy" && d.bind !== "instance");
        assert.deepStrictEqual(published, [], "no device publishes anything of the worker on this machine");
        const bridge = JSON.parse(execFileSync("ip", ["-j", "addr", "show", "dev", BRIDGE], { encoding: "utf8" })) as { addr_info: { local: string }[] }[];
        assert.deepStrictEqual(
            bridge[0].addr_info.map((a) => a.local).filter((a) => a.startsWith("10.")),
            [],
            "this machine has no address on the private network",
        );
        const route = execFileSync("ip", ["route", "get", LAN.worker], { encoding: "utf8" });
        assert.doesNotMatch(route, new RegExp(`dev ${BRIDGE}\\b`), "this machine routes nothing onto the private network");
        assert.doesNotMatch(await banner(LAN.worker, 22), /SSH-/, "the worker's sshd answered this machine");
        assert.match(await banner("127.0.0.1", PORTS.bastion), /^SSH-2\.0/, "the bastion's sshd is published");
        // The worker's own login, straight from here (no jump host): it gets no further than the connection.
        const keys = fs.mkdtempSync(path.join(root, "direct-"));
        fs.writeFileSync(path.join(keys, "key"), secrets[worker.privateKeySecret], { mode: 0o600 });
        fs.writeFileSync(path.join(keys, "known_hosts"), `${LAN.worker} ${worker.hostKey}\n`);
        const sshOptions = ["-F", "/dev/null", "-i", path.join(keys, "key"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"];
        const r = spawnSync(
            "ssh",
            [
                ...sshOptions,
                "-o",
                `UserKnownHostsFile=${path.join(keys, "known_hosts")}`,
                "-o",
                "ConnectTimeout=10",
                "--",
                `root@${LAN.worker}`,
                "echo logged-in",
            ],
            {
                encoding: "utf8",
                timeout: 30_000,
            },
        );
        assert.notStrictEqual(r.status, 0, r.stdout + r.stderr);
        assert.doesNotMatch(r.stdout, /logged-in/);
        // bash's /dev/tcp: the bastion opens a TCP connection to the worker's sshd.
        assert.match(lxd.exec(BASTION, `timeout 5 bash -c 'exec 3<>/dev/tcp/${LAN.worker}/22 && head -c 8 <&3'`), /^SSH-2\.0/);
    });

    it("one up converges the worker through the bastion: the chain through its validator", async () => {
        up = await stack.up();
        const resources = (await stack.exportStack()).deployment.resources as { urn: string }[];
        assert.ok(
            resources.some((r) => r.urn.endsWith("::behind-validate-validate")),
            resources.map((r) => r.urn).join("\n"),
        );
        assert.strictEqual(lxd.exec(WORKER, "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapped").trim(), "wrapped");
    });

    it("with the Concourse release: the worker registers with the web, its registration checked there", async function () {
        pendingWithout(this, "concourse");
        const web = up.outputs.web.value as { url: string; username: string; password: string };
        const resources = (await stack.exportStack()).deployment.resources as { urn: string }[];
        assert.ok(
            resources.some((r) => /::behind-.*registration$/.test(r.urn)),
            `the stack has the worker's registration check:\n${resources.map((r) => r.urn).join("\n")}`,
        );
        const fly = await flyFor("gw-bastion", web);
        try {
            const listed = fly.workers().find((w) => w.name === "behind");
            assert.deepStrictEqual({ state: listed?.state, tags: listed?.tags }, { state: "running", tags: ["e2e", "behind"] });
        } finally {
            fly.cleanup();
        }
        assert.strictEqual(lxd.exec(WORKER, "systemctl is-active concourse-worker").trim(), "active");
    });

    it("the worker's one login came from the bastion's address", () => {
        const accepted = lxd.exec(WORKER, "journalctl -u ssh --no-pager -o cat | grep 'Accepted publickey' || true").trim().split("\n").filter(Boolean);
        assert.strictEqual(
            accepted.length,
            1,
            `one connection for every step and check: the worker's sshd logged ${accepted.length} logins:\n${accepted.join("\n")}`,
        );
        const from = [...new Set(accepted.map((l) => / from (\S+) /.exec(l)?.[1]))];
        assert.deepStrictEqual(from, [LAN.bastion]);
    });

    it("a second up changes nothing", async () => {
        const result = await stack.up();
        const changed = Object.entries(result.summary.resourceChanges ?? {}).filter(([op, n]) => op !== "same" && n > 0);
        assert.deepStrictEqual(changed, [], JSON.stringify(result.summary.resourceChanges));
    });
});
