/**
 * The LxdInstance provider against a real LXD daemon (busybox image): create, update in
 * place, refresh after a change made by hand with lxc, delete; disk, unix-char and gpu
 * devices; LXD's errors reaching the user; HTTPS with a client certificate and a pinned
 * server certificate. The provider is used as Pulumi runs it: serialized, then loaded back.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { execFileSync } from "child_process";
import { LxdClient } from "../../components/providers/lxd/client";
import * as ops from "../../components/providers/lxd/instance-ops";
import { lxdInstanceProvider } from "../../components/providers/lxd/instance-provider";
import { LxdValidationError } from "../../components/lib/lxd/validate";
import type { LxdInstanceSpec, LxdInstanceState } from "../../components/lib/lxd/types";
import { clientCertificate } from "../support/pki";
import { ensureLxdTools, freePort, mappedRootUid, TestDaemon } from "./lxd-support";
import { loadedProvider } from "../support/provider-module";

const IMAGE = "gpu-workers/busybox";
/** Runs a shell command inside an instance through lxc (not through our client). */
function inside(d: TestDaemon, name: string, script: string): { status: number | null; out: string } {
    const r = d.lxcResult("exec", name, "--", "sh", "-c", script);
    return { status: r.status, out: (r.stdout + r.stderr).trim() };
}

describe("LXD provider against a real LXD daemon (busybox)", function () {
    this.timeout(300_000);
    let d: TestDaemon;
    let provider: ReturnType<typeof loadedProvider>;
    let fingerprint: string;
    let hostData: string;
    let testChar: string | undefined;

    before(function () {
        this.timeout(900_000);
        ensureLxdTools();
        d = TestDaemon.start();
        fingerprint = d.importImage("busybox");
        provider = loadedProvider(lxdInstanceProvider);
        hostData = path.join(d.dir, "host");
        fs.mkdirSync(path.join(hostData, "ro"), { recursive: true });
        fs.mkdirSync(path.join(hostData, "rw"), { recursive: true });
        fs.mkdirSync(path.join(hostData, "extra"), { recursive: true });
        fs.writeFileSync(path.join(hostData, "ro", "train.csv"), "a,b\n1,2\n");
        // A character device standing in for /dev/kfd (same major/minor as /dev/null); LXD takes
        // host nodes from /dev only.
        testChar = `/dev/gw-test-${path.basename(d.dir)}`;
        execFileSync("mknod", ["-m", "0600", testChar, "c", "1", "3"]);
    });

    after(function () {
        this.timeout(240_000);
        if (testChar) fs.rmSync(testChar, { force: true });
        d?.stop();
    });

    const NAME = "t-life";
    const spec = (): LxdInstanceSpec => ({
        server: { socket: d.socket },
        name: NAME,
        image: IMAGE,
        config: { "security.nesting": "true", "user.gpu-workers.role": "test" },
        devices: {
            "dataset-ro": { type: "disk", source: path.join(hostData, "ro"), path: "/srv/ro", readonly: "true" },
            "dataset-rw": { type: "disk", source: path.join(hostData, "rw"), path: "/srv/rw", readonly: "false" },
            kfd: { type: "unix-char", source: testChar!, path: "/dev/kfd", gid: "44", mode: "0660" },
        },
        files: [{ path: "/root/.ssh/authorized_keys", content: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAItest test\n", mode: "0600" }],
        waitFor: { command: ["test", "-s", "/root/.ssh/authorized_keys"], timeoutSeconds: 30 },
    });
    let created: LxdInstanceState;

    it("create: started, with its config, files and devices, as the daemon sees them", async () => {
        const { inputs, failures } = await provider.check({}, spec());
        assert.deepStrictEqual(failures, []);
        const result = await provider.create(inputs);
        created = result.outs;
        assert.strictEqual(result.id, NAME);
        assert.strictEqual(created.status, "Running");
        assert.strictEqual(created.imageFingerprint, fingerprint);
        assert.strictEqual(created.uuid, d.lxc("config", "get", NAME, "volatile.uuid").trim(), "the instance's UUID, which tells a replaced instance apart");
        assert.match(created.uuid, /^[0-9a-f-]{36}$/);

        const real = d.query(`/1.0/instances/${NAME}`);
        assert.strictEqual(real.status, "Running");
        assert.strictEqual(real.config["user.gpu-workers.role"], "test");
        assert.strictEqual(real.config["security.privileged"], undefined, "never privileged unless asked");
        assert.deepStrictEqual(Object.keys(real.devices).sort(), ["dataset-ro", "dataset-rw", "kfd"]);
        assert.deepStrictEqual(created.devices, real.devices);

        const keys = inside(d, NAME, "stat -c '%a %u' /root/.ssh /root/.ssh/authorized_keys; cat /root/.ssh/authorized_keys");
        assert.strictEqual(keys.out, "700 0\n600 0\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAItest test");
    });

    it("unix-char: the node inside has the given group and mode 0660, not more", () => {
        const r = inside(d, NAME, "stat -c '%g %a %F' /dev/kfd");
        assert.strictEqual(r.out, "44 660 character special file");
    });

    it("disk: read-only refuses writes; writable takes them (host folder owned by the instance's root)", () => {
        assert.strictEqual(inside(d, NAME, "cat /srv/ro/train.csv").out, "a,b\n1,2");
        const ro = inside(d, NAME, "echo x > /srv/ro/new");
        assert.notStrictEqual(ro.status, 0);
        assert.match(ro.out, /Read-only file system/);
        assert.ok(!fs.existsSync(path.join(hostData, "ro", "new")));

        // Without `shift` the folder must belong to the uid the instance's root maps to.
        const rootUid = mappedRootUid(d.query(`/1.0/instances/${NAME}`));
        assert.ok(rootUid > 0, "an unprivileged container's root is not the host's root");
        const denied = inside(d, NAME, "echo x > /srv/rw/before-chown");
        assert.notStrictEqual(denied.status, 0, "a host-root-owned folder is not writable from the container");
        fs.chownSync(path.join(hostData, "rw"), rootUid, rootUid);
        const rw = inside(d, NAME, "echo written > /srv/rw/out.txt && echo ok");
        assert.strictEqual(rw.out, "ok");
        assert.strictEqual(fs.readFileSync(path.join(hostData, "rw", "out.txt"), "utf8"), "written\n");
        assert.strictEqual(fs.statSync(path.join(hostData, "rw", "out.txt")).uid, rootUid);
    });

    it("disk with shift: works where idmapped mounts do, else LXD's refusal reaches the user", async () => {
        const shifted = path.join(hostData, "shifted");
        fs.mkdirSync(shifted, { recursive: true });
        const s: LxdInstanceSpec = {
            server: { socket: d.socket },
            name: "t-shift",
            image: IMAGE,
            devices: { "dataset-rw": { type: "disk", source: shifted, path: "/srv/rw", readonly: "false", shift: "true" } },
        };
        try {
            await provider.create(s);
        } catch (e) {
            // LXD 5.0 refuses when it sets the mount up; newer releases when the device starts.
            assert.match((e as Error).message, /^lxd: instance t-shift: (create|start) failed: .*"dataset-rw": .*idmapping abilities/i);
            assert.ok(!d.instanceExists("t-shift"), "the half-made instance is removed");
            return;
        }
        try {
            assert.strictEqual(inside(d, "t-shift", "echo x > /srv/rw/f && echo ok").out, "ok");
            assert.strictEqual(fs.statSync(path.join(shifted, "f")).uid, 0, "shift writes as the folder's host owner");
        } finally {
            await provider.delete("t-shift", { server: s.server, name: "t-shift" });
        }
    });

    it("update in place: a config key changed, a disk added, the unix-char removed", async () => {
        const before = d.query(`/1.0/instances/${NAME}`);
        const news = spec();
        news.config!["user.gpu-workers.role"] = "changed";
        delete news.devices!.kfd;
        news.devices!["dataset-extra"] = { type: "disk", source: path.join(hostData, "extra"), path: "/srv/extra", readonly: "true" };
        const { inputs } = await provider.check(created, news);
        const diff = await provider.diff(NAME, created, inputs);
        assert.strictEqual(diff.changes, true);
        assert.deepStrictEqual(diff.replaces, []);

        const { outs } = await provider.update(NAME, created, inputs);
        created = outs;
        const after = d.query(`/1.0/instances/${NAME}`);
        assert.strictEqual(after.config["volatile.uuid"], before.config["volatile.uuid"], "the same instance, not a new one");
        assert.strictEqual(after.status, "Running");
        assert.strictEqual(after.config["user.gpu-workers.role"], "changed");
        assert.deepStrictEqual(Object.keys(after.devices).sort(), ["dataset-extra", "dataset-ro", "dataset-rw"]);
        assert.notStrictEqual(inside(d, NAME, "test -e /dev/kfd").status, 0, "the removed device is gone inside");
        assert.strictEqual(inside(d, NAME, "grep -c ' /srv/extra ' /proc/mounts").out, "1", "the added disk is mounted inside");
        assert.deepStrictEqual((await provider.diff(NAME, created, inputs)).changes, false, "converged: no further change");
    });

    it("refresh: a device removed by hand with lxc shows up as drift, and update puts it back", async () => {
        d.lxc("config", "device", "remove", NAME, "dataset-ro");
        const refreshed = await provider.read(NAME, created);
        assert.strictEqual(refreshed.id, NAME);
        assert.ok(!("dataset-ro" in refreshed.props!.devices), "read shows the device gone");
        const { inputs } = await provider.check(refreshed.props, { ...spec(), config: created.config, devices: created.devices });
        const diff = await provider.diff(NAME, refreshed.props, inputs);
        assert.strictEqual(diff.changes, true);
        assert.deepStrictEqual(diff.replaces, []);
        const { outs } = await provider.update(NAME, refreshed.props, inputs);
        created = outs;
        assert.ok("dataset-ro" in d.query(`/1.0/instances/${NAME}`).devices);
        assert.strictEqual(inside(d, NAME, "cat /srv/ro/train.csv").out, "a,b\n1,2");
    });

    it("refresh: a config key changed by hand is seen; a stopped instance is started again", async () => {
        d.lxc("config", "set", NAME, "user.gpu-workers.role", "tampered");
        d.lxc("stop", "--force", NAME);
        const refreshed = await provider.read(NAME, created);
        assert.strictEqual(refreshed.props!.config["user.gpu-workers.role"], "tampered");
        assert.strictEqual(refreshed.props!.running, false);
        const { inputs } = await provider.check(refreshed.props, { ...spec(), config: created.config, devices: created.devices });
        assert.strictEqual((await provider.diff(NAME, refreshed.props, inputs)).changes, true);
        await provider.update(NAME, refreshed.props, inputs);
        const real = d.query(`/1.0/instances/${NAME}`);
        assert.strictEqual(real.status, "Running");
        assert.strictEqual(real.config["user.gpu-workers.role"], "changed");
    });

    it("delete: stops and deletes; deleting what is gone is fine; read then says gone", async () => {
        await provider.delete(NAME, created);
        assert.ok(!d.instanceExists(NAME));
        await provider.delete(NAME, created);
        assert.deepStrictEqual(await provider.read(NAME, created), { id: "", props: {} });
    });

    it("an instance from an image fingerprint (12 hex digits)", async () => {
        const s: LxdInstanceSpec = { server: { socket: d.socket }, name: "t-fp", image: fingerprint.slice(0, 12), running: false };
        const { outs } = await provider.create(s);
        try {
            assert.strictEqual(outs.imageFingerprint, fingerprint);
            assert.strictEqual(d.query("/1.0/instances/t-fp").status, "Stopped");
        } finally {
            await provider.delete("t-fp", outs);
        }
    });

    it("a gpu device on a machine without that GPU: LXD's message reaches the user, nothing is left", async () => {
        const hasGpu = fs.existsSync("/dev/dri/card0") || fs.existsSync("/dev/nvidia0");
        const gpu = hasGpu ? { type: "gpu", gputype: "physical", pci: "0000:ff:1f.7" } : { type: "gpu", gputype: "physical", id: "0" };
        await assert.rejects(provider.create({ server: { socket: d.socket }, name: "t-gpu", image: IMAGE, devices: { gpu0: gpu } }), (e: Error) => {
            assert.match(
                e.message,
                /^lxd: instance t-gpu: start failed: Failed to start device "gpu0": (Failed to detect requested GPU device|Invalid PCI address)/,
            );
            return true;
        });
        assert.ok(!d.instanceExists("t-gpu"), "the instance that could not start is removed again");
    });

    it("a missing image: LXD's message, naming the instance and the image", async () => {
        await assert.rejects(provider.create({ server: { socket: d.socket }, name: "t-noimg", image: "gpu-workers/missing" }), {
            message: "lxd: instance t-noimg: create failed: Image alias not found (image gpu-workers/missing)",
        });
        assert.ok(!d.instanceExists("t-noimg"));
    });

    it("bad input is refused before any call to LXD", async () => {
        const refusing: ops.LxdApiFactory = () => {
            throw new Error("LXD must not be called");
        };
        const base = { server: { socket: d.socket }, name: "t-bad", image: IMAGE };
        await assert.rejects(
            ops.create({ ...base, devices: { g: { type: "gpu-card" } } }, refusing),
            (e: Error) => e instanceof LxdValidationError && /device g: unknown device type "gpu-card"/.test(e.message),
        );
        await assert.rejects(ops.create({ ...base, devices: { gpu0: { type: "gpu", id: "nvidia.com/gpu" } } }, refusing), {
            message: 'lxd instance t-bad: device gpu0: id "nvidia.com/gpu" is not a CDI id (expected vendor.com/class=name)',
        });
        // And the provider as Pulumi runs it refuses the same, with nothing made on the server.
        await assert.rejects(provider.create({ ...base, devices: { gpu0: { type: "gpu", id: "gpu=0" } } }), /device gpu0: id "gpu=0" is not a CDI id/);
        assert.ok(!d.instanceExists("t-bad"));
        assert.deepStrictEqual((await provider.check({}, { ...base, devices: { g: { type: "gpu-card" } } })).failures?.length, 1);
    });

    describe("over HTTPS with a client certificate", () => {
        let url: string;
        let clientCert: string;
        let clientKey: string;
        let serverCert: string;

        before(async () => {
            const port = await freePort();
            d.lxc("config", "set", "core.https_address", `127.0.0.1:${port}`);
            url = `https://127.0.0.1:${port}`;
            const client = clientCertificate(path.join(d.dir, "client"), "gpu-workers-test");
            d.lxc("config", "trust", "add", client.certFile);
            clientCert = client.cert;
            clientKey = client.key;
            serverCert = fs.readFileSync(path.join(d.dir, "server.crt"), "utf8");
        });

        it("the provider creates, reads and deletes through HTTPS with the pinned server certificate", async () => {
            const server = { url, clientCert, clientKey, serverCert };
            const { outs } = await provider.create({ server, name: "t-https", image: IMAGE, running: false });
            assert.strictEqual(d.query("/1.0/instances/t-https").name, "t-https");
            assert.strictEqual((await provider.read("t-https", outs)).id, "t-https");
            await provider.delete("t-https", outs);
            assert.ok(!d.instanceExists("t-https"));
            // The server's record, read through the typed client, has the shape the client checks.
            const info = await new LxdClient(server).serverInfo();
            assert.strictEqual(info.auth, "trusted");
            assert.ok((info.api_extensions ?? []).length > 0, JSON.stringify(info).slice(0, 400));
        });

        it("a server that is not the pinned one is refused before the request is sent", async () => {
            const wrongPin = new LxdClient({ url, clientCert, clientKey, serverCert: clientCert });
            await assert.rejects(wrongPin.serverInfo(), /presented certificate .*, not the pinned/);
            const unpinned = new LxdClient({ url, clientCert, clientKey });
            await assert.rejects(
                unpinned.serverInfo(),
                /cannot verify server 127\.0\.0\.1:\d+: self-signed certificate \(pin its certificate with serverCert\)/,
            );
        });

        it("an untrusted client certificate gets LXD's refusal", async () => {
            const other = clientCertificate(path.join(d.dir, "stranger"), "stranger");
            const stranger = {
                url,
                clientCert: other.cert,
                clientKey: other.key,
                serverCert,
            };
            await assert.rejects(provider.create({ server: stranger, name: "t-stranger", image: IMAGE }), (e: Error) =>
                /^lxd: instance t-stranger: create failed: .*(not authorized|forbidden|untrusted)/i.test(e.message),
            );
            assert.ok(!d.instanceExists("t-stranger"));
        });
    });
});
