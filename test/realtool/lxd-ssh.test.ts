/**
 * A Debian 12 instance (debootstrap image from scripts/lxd-build-image.sh) made by the
 * provider with the sshd proxy device and an authorized key pushed at create: sshd answers on
 * a host loopback port, and a key login works. This is how GpuHost reaches LXD workers.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { execFileSync, spawnSync } from "child_process";
import { lxdSshProxyDevice } from "../../components/lib/lxd/devices";
import { lxdInstanceProvider } from "../../components/providers/lxd/instance-provider";
import type { LxdInstanceState } from "../../components/lib/lxd/types";
import { ensureLxdTools, freePort, REPO, TestDaemon } from "./lxd-support";
import { loadedProvider } from "../support/provider-module";

/** The first line a server sends on connect (sshd's version banner). */
function banner(port: number): Promise<string> {
    return new Promise((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1");
        let data = "";
        socket.setTimeout(10_000, () => socket.destroy(new Error(`no banner on 127.0.0.1:${port} within 10s`)));
        socket.on("data", (chunk) => {
            data += chunk.toString("latin1");
            if (data.includes("\n")) {
                socket.destroy();
                resolve(data.split(/\r?\n/)[0]);
            }
        });
        socket.on("error", reject);
    });
}

describe("LXD provider: Debian instance reached over SSH through a proxy device", function () {
    this.timeout(300_000);
    let d: TestDaemon;
    let provider: ReturnType<typeof loadedProvider>;
    let keyFile: string;
    let port: number;
    let outs: LxdInstanceState | undefined;
    const NAME = "t-ssh";

    before(async function () {
        // The first run builds the Debian image with debootstrap (cached afterwards).
        this.timeout(1_200_000);
        ensureLxdTools({ commands: ["ssh", "ssh-keygen"], packages: ["openssh-client"] });
        d = TestDaemon.start();
        d.importImage("debian-12");
        provider = loadedProvider(lxdInstanceProvider);
        keyFile = path.join(d.dir, "id_ed25519");
        execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "gpu-workers-test", "-f", keyFile]);
        port = await freePort();
    });

    after(async function () {
        this.timeout(240_000);
        if (outs) await provider.delete(NAME, outs).catch(() => undefined);
        d?.stop();
    });

    it("create with the proxy device, the key, and a wait for sshd", async () => {
        const started = Date.now();
        const result = await provider.create({
            server: { socket: d.socket },
            name: NAME,
            image: "gpu-workers/debian-12",
            config: { "security.nesting": "true" },
            devices: { sshd: lxdSshProxyDevice({ address: "127.0.0.1", port }) },
            files: [{ path: "/root/.ssh/authorized_keys", content: fs.readFileSync(`${keyFile}.pub`, "utf8"), mode: "0600" }],
            waitFor: { command: ["systemctl", "is-active", "--quiet", "ssh"], timeoutSeconds: 120 },
        });
        outs = result.outs;
        assert.strictEqual(outs?.status, "Running");
        console.log(`      (instance up with sshd active in ${Date.now() - started} ms)`);
    });

    it("sshd answers on the host's loopback port", async () => {
        assert.match(await banner(port), /^SSH-2\.0-OpenSSH_/);
    });

    it("a key login works and lands in the instance (hostname from the image template)", () => {
        const r = spawnSync(
            "ssh",
            [
                "-i",
                keyFile,
                "-p",
                String(port),
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "ConnectTimeout=10",
                "--",
                "root@127.0.0.1",
                "cat /etc/hostname; id -u; systemctl is-system-running || true",
            ],
            { encoding: "utf8", timeout: 60_000 },
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [hostname, uid, systemState] = r.stdout.trim().split("\n");
        assert.strictEqual(hostname, NAME);
        assert.strictEqual(uid, "0");
        assert.match(systemState, /^(running|degraded)$/);
    });

    it("each instance makes its own sshd host keys at first boot (none baked into the image)", () => {
        const tarball = execFileSync("bash", [path.join(REPO, "scripts/lxd-build-image.sh"), "build", "debian-12"], { encoding: "utf8" }).trim();
        const listing = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
        assert.ok(listing.includes("rootfs/etc/ssh/sshd_config"));
        assert.ok(!/ssh_host_[a-z0-9]+_key/.test(listing), "the image carries no host keys");
        const keys = d.lxc("exec", NAME, "--", "sh", "-c", "ls /etc/ssh/ssh_host_ed25519_key.pub").trim();
        assert.strictEqual(keys, "/etc/ssh/ssh_host_ed25519_key.pub");
    });

    it("delete closes the port", async () => {
        await provider.delete(NAME, outs);
        outs = undefined;
        assert.ok(!d.instanceExists(NAME));
        await assert.rejects(banner(port), /ECONNREFUSED|no banner/);
    });
});
