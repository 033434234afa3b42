import * as assert from "assert";
import { isCdiId, lxdInstanceProblems, LxdValidationError, PULUMI_UNKNOWN, validateLxdInstance } from "../../components/lib/lxd/validate";
import type { LxdDevice, LxdInstanceSpec } from "../../components/lib/lxd/types";

const base: LxdInstanceSpec = { server: {}, name: "gpu-a", image: "gpu-workers/debian-12" };
const withDevice = (device: Record<string, string>, name = "gpu0"): LxdInstanceSpec => ({ ...base, devices: { [name]: device } });
const problems = (spec: Partial<LxdInstanceSpec>) => lxdInstanceProblems(spec);

describe("LXD instance validation (before any LXD call)", () => {
    it("accepts a worker-shaped spec", () => {
        assert.deepStrictEqual(
            problems({
                ...base,
                config: { "security.nesting": "true", "nvidia.driver.capabilities": "compute,utility", "user.role": "worker" },
                devices: {
                    gpu0: { type: "gpu", gputype: "physical", id: "nvidia.com/gpu=0" },
                    kfd: { type: "unix-char", source: "/dev/kfd", path: "/dev/kfd", gid: "109", mode: "0660" },
                    "dataset-mnist": { type: "disk", source: "/srv/datasets/mnist", path: "/srv/mnist", readonly: "true" },
                    sshd: { type: "proxy", listen: "tcp:127.0.0.1:2201", connect: "tcp:127.0.0.1:22", bind: "host" },
                    eth0: { type: "none" },
                },
                files: [{ path: "/root/.ssh/authorized_keys", content: "ssh-ed25519 AAAA", mode: "0600" }],
                waitFor: { command: ["systemctl", "is-active", "ssh"], timeoutSeconds: 60 },
            }),
            [],
        );
    });

    describe("CDI ids", () => {
        for (const good of [
            "nvidia.com/gpu=0",
            "nvidia.com/gpu=all",
            "nvidia.com/igpu=all",
            "nvidia.com/gpu=0:1",
            "amd.com/gpu=0",
            "nvidia.com/gpu=GPU-5e8f1c2a",
        ]) {
            it(`accepts ${good}`, () => {
                assert.ok(isCdiId(good));
                assert.deepStrictEqual(problems(withDevice({ type: "gpu", gputype: "physical", id: good })), []);
            });
        }
        for (const bad of ["nvidia.com/gpu", "gpu=0", "nvidia.com/gpu=", "nvidia/gpu=0", "nvidia.com/=0", "nvidia.com/gpu=0 1"]) {
            it(`rejects ${JSON.stringify(bad)}, naming instance and device`, () => {
                assert.ok(!isCdiId(bad));
                assert.deepStrictEqual(problems(withDevice({ type: "gpu", id: bad })), [
                    `lxd instance gpu-a: device gpu0: id "${bad}" is not a CDI id (expected vendor.com/class=name)`,
                ]);
            });
        }
        it("takes a plain number as a DRM card id", () => {
            assert.deepStrictEqual(problems(withDevice({ type: "gpu", id: "1" })), []);
        });
        it("the exact message of the issue", () => {
            assert.throws(
                () => validateLxdInstance(withDevice({ type: "gpu", gputype: "physical", id: "nvidia.com/gpu" })),
                (e: Error) => {
                    assert.ok(e instanceof LxdValidationError);
                    assert.strictEqual(e.message, 'lxd instance gpu-a: device gpu0: id "nvidia.com/gpu" is not a CDI id (expected vendor.com/class=name)');
                    return true;
                },
            );
        });
        it("a CDI id only with gputype physical", () => {
            assert.match(
                problems(withDevice({ type: "gpu", gputype: "mig", id: "nvidia.com/gpu=0:1", "mig.gi": "1", "mig.ci": "0" })).join(),
                /only gputype physical/,
            );
        });
    });

    describe("gpu devices", () => {
        it("mig needs mig.uuid or both mig.gi and mig.ci", () => {
            assert.deepStrictEqual(problems(withDevice({ type: "gpu", gputype: "mig" })), [
                "lxd instance gpu-a: device gpu0: a mig gpu needs mig.uuid, or both mig.gi and mig.ci",
            ]);
            assert.match(problems(withDevice({ type: "gpu", gputype: "mig", "mig.gi": "1" })).join(), /both mig.gi and mig.ci/);
            assert.deepStrictEqual(problems(withDevice({ type: "gpu", gputype: "mig", "mig.gi": "1", "mig.ci": "0", pci: "0000:18:00.0" })), []);
            assert.deepStrictEqual(problems(withDevice({ type: "gpu", gputype: "mig", "mig.uuid": "MIG-2f4e8d3c-1a2b-4c5d-8e9f-0a1b2c3d4e5f" })), []);
            assert.match(problems(withDevice({ type: "gpu", gputype: "mig", "mig.uuid": "MIG-123" })).join(), /not a MIG UUID/);
        });
        it("mig keys on a physical gpu, bad pci, bad vendor id, unknown gputype", () => {
            assert.match(problems(withDevice({ type: "gpu", "mig.uuid": "x" })).join(), /mig.uuid is not a key of a physical gpu device/);
            assert.match(problems(withDevice({ type: "gpu", pci: "18:00" })).join(), /pci "18:00" is not a PCI address/);
            assert.match(problems(withDevice({ type: "gpu", vendorid: "nvidia" })).join(), /vendorid "nvidia" is not a 4-digit hex/);
            assert.match(problems(withDevice({ type: "gpu", gputype: "virtual" })).join(), /gputype "virtual" is not one of physical, mig, mdev, sriov/);
        });
        it("a gpu node is never opened to everyone", () => {
            assert.match(problems(withDevice({ type: "gpu", id: "0", mode: "0666" })).join(), /mode "0666" opens the device to everyone/);
        });
    });

    it("rejects an unknown device type", () => {
        assert.deepStrictEqual(problems(withDevice({ type: "gpus" }, "gpu1")), [
            'lxd instance gpu-a: device gpu1: unknown device type "gpus" (expected one of none, nic, disk, unix-char, unix-block, usb, gpu, infiniband, proxy, unix-hotplug, tpm, pci)',
        ]);
        assert.match(problems(withDevice({ id: "0" })).join(), /device gpu0: needs a type/);
    });

    it("unix-char: mode 0660 with a gid, never world-accessible", () => {
        assert.deepStrictEqual(problems(withDevice({ type: "unix-char", source: "/dev/kfd", gid: "109", mode: "0660" }, "kfd")), []);
        assert.deepStrictEqual(problems(withDevice({ type: "unix-char", source: "/dev/kfd", mode: "0666" }, "kfd")), [
            'lxd instance gpu-a: device kfd: mode "0666" opens the device to everyone; grant access with gid and mode 0660',
        ]);
        assert.match(
            problems(withDevice({ type: "unix-char", gid: "render" }, "kfd")).join("\n"),
            /needs source[\s\S]*gid "render" is not a non-negative integer/,
        );
        assert.match(
            problems(withDevice({ type: "unix-char", source: "/tmp/kfd", path: "/dev/kfd" }, "kfd")).join(),
            /source "\/tmp\/kfd" is not a device node under \/dev/,
        );
    });

    it("disk: needs path and source (or pool); readonly is true/false", () => {
        assert.deepStrictEqual(problems(withDevice({ type: "disk", source: "/srv/x" }, "data")), [
            "lxd instance gpu-a: device data: needs path (where it appears inside the instance)",
        ]);
        assert.deepStrictEqual(problems(withDevice({ type: "disk", path: "/srv/x" }, "data")), [
            "lxd instance gpu-a: device data: needs source (a host folder) or pool",
        ]);
        assert.deepStrictEqual(problems(withDevice({ type: "disk", path: "/", pool: "default" }, "root")), []);
        assert.match(problems(withDevice({ type: "disk", path: "/x", source: "/y", readonly: "yes" }, "data")).join(), /readonly "yes" must be true or false/);
        assert.match(problems(withDevice({ type: "disk", path: "/x", source: "/y", readOnly: "true" }, "data")).join(), /unknown key readOnly/);
    });

    it("proxy: listen and connect are tcp/udp:address:port or unix:path", () => {
        const proxy = (listen: string, connect = "tcp:127.0.0.1:22") => problems(withDevice({ type: "proxy", listen, connect }, "sshd"));
        assert.deepStrictEqual(proxy("tcp:127.0.0.1:2201"), []);
        assert.deepStrictEqual(proxy("tcp:[::1]:2201"), []);
        assert.deepStrictEqual(proxy("unix:/run/x.sock", "unix:/run/y.sock"), []);
        assert.deepStrictEqual(proxy("tcp:127.0.0.1"), [
            'lxd instance gpu-a: device sshd: listen "tcp:127.0.0.1" is not tcp:<address>:<port>, udp:<address>:<port> or unix:<path> (e.g. tcp:127.0.0.1:2201)',
        ]);
        assert.match(proxy("127.0.0.1:2201").join(), /listen "127.0.0.1:2201" is not tcp/);
        assert.match(proxy("tcp:127.0.0.1:70000").join(), /port outside 1-65535/);
        assert.match(problems(withDevice({ type: "proxy", listen: "tcp:127.0.0.1:2201" }, "sshd")).join(), /needs connect/);
    });

    it("proxy in NAT mode (a VM's only mode): host-bound, tcp to tcp, no wildcard listen, one IP family, to an address", () => {
        const nat = (d: Record<string, string>, type?: "virtual-machine") =>
            problems({ ...withDevice({ type: "proxy", nat: "true", ...d }, "sshd"), ...(type ? { type } : {}) });
        assert.deepStrictEqual(nat({ listen: "tcp:10.0.0.20:2211", connect: "tcp:10.10.0.11:22", bind: "host" }, "virtual-machine"), []);
        assert.deepStrictEqual(
            problems({
                ...withDevice({ type: "proxy", listen: "tcp:10.0.0.20:2211", connect: "tcp:127.0.0.1:22", bind: "host" }, "sshd"),
                type: "virtual-machine",
            }),
            [
                "lxd instance gpu-a: device sshd: a virtual machine's proxy must use NAT (nat=true), the only proxy mode LXD has for VMs; it needs a nic with a static ipv4.address",
            ],
        );
        assert.deepStrictEqual(nat({ listen: "tcp:0.0.0.0:2211", connect: "tcp:10.10.0.11:22" }), [
            'lxd instance gpu-a: device sshd: listen "tcp:0.0.0.0:2211": a NAT proxy cannot listen on a wildcard address (give the host\'s own address)',
        ]);
        assert.match(nat({ listen: "tcp:10.0.0.20:2211", connect: "tcp:10.10.0.11:22", bind: "instance" }).join(), /a NAT proxy must be bound to the host/);
        assert.match(nat({ listen: "tcp:10.0.0.20:2211", connect: "udp:10.10.0.11:22" }).join(), /forwards tcp to tcp or udp to udp/);
        assert.match(nat({ listen: "tcp:10.0.0.20:2211", connect: "tcp:[fd00::11]:22" }).join(), /cannot mix IPv4 and IPv6/);
        assert.match(nat({ listen: "tcp:10.0.0.20:2211", connect: "tcp:worker:22" }).join(), /connects to the instance's static IP address, not a name/);
    });

    it("userData: cloud-init user-data, given once (not also in config)", () => {
        assert.deepStrictEqual(problems({ ...base, type: "virtual-machine", userData: "#cloud-config\n{}\n" }), []);
        assert.match(problems({ ...base, userData: "hello" }).join(), /userData: expected cloud-init user-data/);
        assert.match(
            problems({ ...base, userData: "#cloud-config\n", config: { "cloud-init.user-data": "#cloud-config\n" } }).join(),
            /config: cloud-init\.user-data and userData both give the user-data/,
        );
    });

    it("bad instance name, empty image, remote image", () => {
        assert.match(problems({ ...base, name: "gpu_a" }).join(), /lxd instance gpu_a: name "gpu_a" must be 1-63 letters/);
        assert.match(problems({ ...base, name: "1gpu" }).join(), /must be 1-63 letters, digits and dashes, start with a letter/);
        assert.match(problems({ ...base, name: "gpu-" }).join(), /not end with a dash/);
        assert.deepStrictEqual(problems({ ...base, image: "" }), ["lxd instance gpu-a: image is empty (expected an image alias or fingerprint on the server)"]);
        assert.deepStrictEqual(problems({ ...base, image: undefined }), [
            "lxd instance gpu-a: image is empty (expected an image alias or fingerprint on the server)",
        ]);
        assert.match(problems({ ...base, image: "images:debian/12" }).join(), /names a remote/);
    });

    it("config: LXD-managed keys and non-strings are refused", () => {
        assert.match(problems({ ...base, config: { "volatile.uuid": "x" } }).join(), /volatile.uuid is refused: LXD manages it itself/);
        assert.match(problems({ ...base, config: { "Security.Nesting": "true" } }).join(), /Security.Nesting is not among the keys gpu-workers hands LXD/);
        assert.deepStrictEqual(problems({ ...base, config: { "environment.NVIDIA_VISIBLE_DEVICES": "0", "environment.http_proxy": "" } }), []);
        assert.match(problems({ ...base, config: { "environment.A-B": "x" } }).join(), /environment.A-B is not among the keys gpu-workers hands LXD/);
    });

    it("server: https needs a client certificate; socket is an absolute path", () => {
        assert.match(problems({ ...base, server: { url: "https://10.0.0.5:8443" } }).join(), /an https url needs clientCert and clientKey/);
        assert.match(problems({ ...base, server: { url: "http://10.0.0.5:8443", clientCert: "x", clientKey: "y" } }).join(), /is not https:\/\/host:port/);
        assert.match(problems({ ...base, server: { socket: "lxd.sock" } }).join(), /socket "lxd.sock" is not an absolute path/);
        assert.match(problems({ ...base, server: { socket: "/s", url: "https://h:8443" } }).join(), /either socket or url/);
    });

    it("files and waitFor", () => {
        assert.match(problems({ ...base, files: [{ path: "root/x", content: "" }] }).join(), /files\[0\]: path "root\/x" is not an absolute path/);
        assert.match(problems({ ...base, files: [{ path: "/x", content: "", mode: "600x" }] }).join(), /mode "600x"/);
        assert.match(problems({ ...base, waitFor: { command: [] } }).join(), /waitFor: command must be a non-empty list/);
        assert.match(
            problems({ ...base, type: "virtual-machine", files: [{ path: "/x", content: "" }] }).join(),
            /a virtual machine cannot take files before its first start/,
        );
        assert.deepStrictEqual(problems({ ...base, type: "virtual-machine" }), []);
    });

    it("reports every problem at once", () => {
        const all = problems({ ...base, name: "gpu-a", image: "", devices: { a: { type: "bogus" }, b: { type: "gpu", id: "gpu=0" } } });
        assert.strictEqual(all.length, 3);
        assert.ok(all.every((p) => p.startsWith("lxd instance gpu-a: ")));
    });

    it("values not known yet during preview are not judged", () => {
        assert.deepStrictEqual(
            problems({ ...base, image: PULUMI_UNKNOWN, devices: { gpu0: { type: "gpu", id: PULUMI_UNKNOWN }, x: PULUMI_UNKNOWN as unknown as LxdDevice } }),
            [],
        );
        assert.deepStrictEqual(problems({ ...base, server: PULUMI_UNKNOWN as unknown as typeof base.server }), []);
    });
});
