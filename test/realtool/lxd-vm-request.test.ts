/**
 * A shared board's worker VM, as the program asks LXD for it, checked by a real LXD daemon
 * (5.0 on Debian 12). This machine cannot run VMs (no KVM, or no vhost_vsock module: which one
 * depends on the machine), and LXD refuses to create a virtual machine without them before it
 * looks at the rest of the request. So the highest rung reachable here:
 *  - LXD's own validation of the VM's config and devices (its GPUs by PCI address, the nic
 *    with a static address on a managed bridge, the NAT proxy to sshd, cloud-init user-data
 *    with the SSH keys), given as a profile: LXD validates a profile's config and devices for
 *    any instance type, with the same device validators. Controls show it refusing.
 *  - The VM request itself through the provider, from a VM image: LXD takes it up to the
 *    instance record and refuses it for the missing VM support, and for nothing else.
 *  - The user-data path end to end on a container (which LXD runs here): set as LXD's
 *    cloud-init.user-data, kept out of the stored config, a new one replacing the instance.
 * What only a VM start would check (LXD's rule that a VM's proxy is NAT-only, the nic's
 * address in the proxy) is checked by our validator (test/unit/lxd-validate.test.ts).
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as ops from "../../components/providers/lxd/instance-ops";
import { lxdInstanceProblems } from "../../components/lib/lxd/validate";
import { planHostAccess } from "../../components/lib/plan/host-access";
import { renderAccessUserData } from "../../components/lib/render/lxd-access";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { parseStack } from "../../stacks/checks/stack";
import { exampleStack } from "../fixtures/stacks/boards";
import { ensureCommands } from "../support/tools";
import { ensureLxdTools, TestDaemon } from "./lxd-support";

const VM_IMAGE = "gw-test/vm";

describe("a shared board's worker VM against LXD's own validation (real daemon, no VM support)", function () {
    this.timeout(300_000);
    let d: TestDaemon;
    // Short (interface names have at most 15 characters) and this run's own.
    const network = `gwt${process.pid % 100000}`;
    const subnet = `10.${200 + (process.pid % 50)}.${process.pid % 250}`;
    let instance: ReturnType<typeof workerInstance>;

    /** The example board's first worker, on this daemon's network, as the access plan makes its instance. */
    function workerInstance() {
        const raw = exampleStack();
        for (const [i, h] of raw.hosts.entries()) {
            const lxd = (h.transport as { lxd?: Record<string, unknown> }).lxd;
            if (!lxd) continue;
            Object.assign(lxd, { server: { socket: d.socket }, network, address: `${subnet}.${10 + i}`, sshAddress: "127.0.0.1" });
        }
        const plan = parseStack(raw).plans.boards[0];
        const access = planHostAccess("hgx-a-w1-host", "GpuHost", plan.workers[0].hostTransport);
        const user = generateOpensshKeyPair("login");
        const host = generateOpensshKeyPair("host");
        const generated: Record<string, string> = {
            "login-key.public": user.publicKeyOpenssh,
            "host-key.private": host.privateKeyOpenssh,
            "host-key.public": host.publicKeyOpenssh,
        };
        const userData = renderAccessUserData(access.lxd!.files.map((f) => ({ ...f, content: f.generated ? generated[f.generated] : f.content })));
        return { ...access.lxd!.instance, userData, delivery: access.lxd!.delivery };
    }

    before(function () {
        this.timeout(900_000);
        ensureLxdTools({ commands: ["dnsmasq", "qemu-img"], packages: ["dnsmasq-base", "qemu-utils"] });
        ensureCommands(["tar"], ["tar"]);
        d = TestDaemon.start();
        d.importImage("busybox");
        // A VM image: metadata and an empty qcow2 disk (LXD types an image by its root disk).
        const dir = path.join(d.dir, "vm-image");
        fs.mkdirSync(dir);
        fs.writeFileSync(
            path.join(dir, "metadata.yaml"),
            `architecture: x86_64\ncreation_date: ${Math.floor(Date.now() / 1000)}\nproperties:\n  description: an empty disk, for requests only\n`,
        );
        execFileSync("tar", ["-czf", path.join(dir, "metadata.tar.gz"), "-C", dir, "metadata.yaml"]);
        execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", path.join(dir, "rootfs.img"), "64M"]);
        d.lxc("image", "import", path.join(dir, "metadata.tar.gz"), path.join(dir, "rootfs.img"), "--alias", VM_IMAGE);
        // The managed bridge a worker VM's nic is on (DHCP on: LXD hands out static addresses through it).
        d.lxc("network", "create", network, "--type=bridge", `ipv4.address=${subnet}.1/24`, "ipv4.nat=false", "ipv6.address=none");
        instance = workerInstance();
    });

    after(function () {
        this.timeout(240_000);
        if (!d) return;
        for (const profile of ["gw-vm-request", "gw-vm-control"]) d.lxcResult("profile", "delete", profile);
        d.lxcResult("network", "delete", network);
        d.stop();
    });

    it("the planned instance: a VM with its partition's GPUs by PCI address, a nic on the bridge, a NAT proxy, its keys in user-data", () => {
        assert.strictEqual(instance.type, "virtual-machine");
        assert.strictEqual(instance.delivery, "cloud-init");
        const gpus = Object.values(instance.devices).filter((x) => x.type === "gpu");
        assert.deepStrictEqual(
            gpus.map((g) => g.pci),
            ["0000:0d:00.0", "0000:0e:00.0", "0000:0f:00.0", "0000:10:00.0"],
        );
        assert.deepStrictEqual(instance.devices.eth0, { type: "nic", network, "ipv4.address": `${subnet}.11` });
        assert.deepStrictEqual(instance.devices.sshd, {
            type: "proxy",
            nat: "true",
            listen: "tcp:127.0.0.1:2211",
            connect: `tcp:${subnet}.11:22`,
            bind: "host",
        });
        assert.match(instance.userData, /^#cloud-config\n/);
        assert.deepStrictEqual(
            lxdInstanceProblems({
                server: { socket: d.socket },
                name: instance.instance,
                image: VM_IMAGE,
                type: "virtual-machine",
                config: instance.config,
                devices: instance.devices,
                userData: instance.userData,
            }),
            [],
        );
    });

    /** POSTs a profile; LXD validates its config and every device (for any instance type). */
    function postProfile(name: string, config: Record<string, string>, devices: Record<string, Record<string, string>>) {
        return d.lxcResult("query", "-X", "POST", "-d", JSON.stringify({ name, description: "gpu-workers test", config, devices }), "/1.0/profiles");
    }

    it("LXD accepts the VM's config and devices (profile validation, the same device validators)", () => {
        const r = postProfile("gw-vm-request", { ...instance.config, "cloud-init.user-data": instance.userData }, instance.devices);
        assert.strictEqual(r.status, 0, r.stderr);
        const stored = d.query("/1.0/profiles/gw-vm-request");
        assert.strictEqual(stored.config["cloud-init.user-data"], instance.userData);
        assert.deepStrictEqual(Object.keys(stored.devices).sort(), Object.keys(instance.devices).sort());
        assert.strictEqual(stored.devices.gpu0.pci, "0000:0d:00.0");
    });

    it("controls: the same validation refuses a wildcard NAT listen, an address off the bridge's subnet, an unknown key", () => {
        const refused = (config: Record<string, string>, devices: Record<string, Record<string, string>>, message: RegExp) => {
            const r = postProfile("gw-vm-control", config, devices);
            assert.notStrictEqual(r.status, 0, "LXD took it");
            assert.match(r.stderr, message);
        };
        refused(
            instance.config,
            { ...instance.devices, sshd: { ...instance.devices.sshd, listen: "tcp:0.0.0.0:2211" } },
            /Cannot listen on wildcard address "0\.0\.0\.0" when in nat mode/,
        );
        refused(
            instance.config,
            { ...instance.devices, eth0: { ...instance.devices.eth0, "ipv4.address": "192.0.2.11" } },
            /Device IP address "192\.0\.2\.11" not within network/,
        );
        refused({ ...instance.config, "limits.cpus": "4" }, instance.devices, /Unknown configuration key: limits\.cpus/);
    });

    it("the VM request through the provider reaches LXD's instance record and is refused for the host's missing VM support only", async () => {
        const spec = {
            server: { socket: d.socket },
            name: instance.instance,
            image: VM_IMAGE,
            type: "virtual-machine" as const,
            profiles: ["default"],
            config: instance.config,
            devices: instance.devices,
            userData: instance.userData,
        };
        await assert.rejects(ops.create(spec), (e: Error) => {
            // Which part of VM support the machine lacks (KVM, vhost_vsock, QEMU, its firmware)
            // depends on the machine; every such refusal names the instance type as unsupported.
            assert.match(
                e.message,
                /^lxd: instance hgx-a-w1: create failed: Failed creating instance record: Instance type "virtual-machine" is not supported on this server: \S/,
            );
            return true;
        });
        assert.ok(!d.instanceExists(instance.instance), "nothing is left behind");
    });

    it("user-data end to end on a container: LXD gets it as cloud-init.user-data, the stored config leaves it out, a new one replaces", async () => {
        const spec = {
            server: { socket: d.socket },
            name: "gw-userdata",
            image: "gpu-workers/busybox",
            config: { "user.gpu-workers.role": "test" },
            userData: instance.userData,
        };
        const { outs } = await ops.create(spec);
        try {
            assert.strictEqual(d.query("/1.0/instances/gw-userdata").config["cloud-init.user-data"], instance.userData);
            assert.deepStrictEqual(outs.config, { "user.gpu-workers.role": "test" });
            assert.strictEqual(outs.userData, instance.userData);
            const read = await ops.read("gw-userdata", outs);
            assert.deepStrictEqual(read.props.config, { "user.gpu-workers.role": "test" });
            assert.deepStrictEqual(ops.diff("gw-userdata", outs, spec).changes, false);
            assert.deepStrictEqual(ops.diff("gw-userdata", outs, { ...spec, userData: "#cloud-config\n# other keys\n" }).replaces, ["userData"]);
        } finally {
            await ops.remove("gw-userdata", outs);
        }
    });
});
