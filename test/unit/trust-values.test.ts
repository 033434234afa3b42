/**
 * Values with a grammar of their own that could widen what a task or LXD gets, or run a
 * program on a host: libvirt URIs, LXD instance config keys, and the system's state folders as a
 * dataset root. Each refused, at its path, naming what it would do; the forms the program means
 * pass. Expected values are written here literally, not read from the production lists.
 */
import * as assert from "assert";
import { serviceVmSpec } from "../../components/lib/plan/board-plan";
import { lxdInstanceProblems } from "../../components/lib/lxd/validate";
import { RawStackConfig } from "../../stacks/config/stack";
import { boardStack } from "../fixtures/stacks/boards";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";

function withServiceVmUri(uri: string): string[] {
    const raw = boardStack([{ gpus: 4 }]) as RawStackConfig & { hosts: { fabric: { serviceVm: object } }[] };
    Object.assign(raw.hosts[0].fabric.serviceVm, { libvirtUri: uri });
    return problemsOf(raw);
}

const LIBVIRT_ERROR =
    "hosts[0].fabric.serviceVm.libvirtUri: expected a libvirt URI of the board's own QEMU daemon: qemu:///system or qemu:///session, or qemu+unix:///system?socket=/path (no remote transport, no other parameter: qemu+ext and qemu+ssh run a program)";

describe("trust: a libvirt URI is the board's own QEMU daemon, and runs nothing", () => {
    for (const uri of [
        "qemu+ext:///system?command=/tmp/pwn",
        "qemu:///system?command=/tmp/pwn",
        "qemu+ssh://root@other/system",
        "qemu+ssh://root@other/system?command=/tmp/pwn",
        "qemu+tcp://other/system",
        "qemu+tls://other/system",
        "qemu+libssh2://other/system?known_hosts=/x",
        "qemu+unix:///system?socket=/run/x&mode=direct",
        "qemu+unix:///system?socket=relative",
        "test:///default",
        "xen:///system",
        "qemu:///system\n",
        "qemu:///system ",
    ]) {
        it(`refuses ${JSON.stringify(uri)}`, () => {
            assert.deepStrictEqual(withServiceVmUri(uri), [LIBVIRT_ERROR]);
            assert.throws(
                () => serviceVmSpec("b", { image: "/srv/fm.qcow2", libvirtUri: uri }),
                /serviceVm\.libvirtUri: .*expected a libvirt URI of the board's own QEMU daemon/,
            );
        });
    }

    it("takes the local forms", () => {
        for (const uri of ["qemu:///system", "qemu:///session", "qemu+unix:///system", "qemu+unix:///system?socket=/run/libvirt/libvirt-sock"]) {
            assert.deepStrictEqual(withServiceVmUri(uri), [], uri);
            assert.strictEqual(serviceVmSpec("b", { image: "/srv/fm.qcow2", libvirtUri: uri }).libvirtUri, uri);
        }
    });
});

function withLxdConfig(config: Record<string, string>): string[] {
    return problemsOf(stackWith({ name: "a", inventory: NO_GPU, extra: { transport: { lxd: { instance: "a", image: "img", sshPort: 2200, config } } } }));
}

describe("trust: LXD instance config keys, by an allow-list", () => {
    const refused: [string, string][] = [
        ["raw.lxc", "raw.lxc is refused: LXD hands it on unchecked"],
        ["raw.idmap", "raw.idmap is refused: LXD hands it on unchecked"],
        ["raw.qemu", "raw.qemu is refused: LXD hands it on unchecked"],
        ["raw.apparmor", "raw.apparmor is refused: LXD hands it on unchecked"],
        ["raw.seccomp", "raw.seccomp is refused: LXD hands it on unchecked"],
        ["security.privileged", "security.privileged is refused: the instance's root would be the LXD server's root"],
        ["security.idmap.base", "security.idmap.base is refused: it picks the server's uids"],
        ["linux.kernel_modules", "linux.kernel_modules is refused: LXD loads those kernel modules on the server"],
        ["security.syscalls.intercept.mount", "security.syscalls.intercept.mount is refused: the LXD server then mounts"],
        ["security.syscalls.intercept.bpf", "security.syscalls.intercept.bpf is refused: the LXD server then mounts"],
        ["volatile.uuid", "volatile.uuid is refused: LXD manages it itself"],
        ["image.os", "image.os is refused: LXD manages it itself"],
        ["user.user-data", "user.user-data is refused: it is cloud-init's older name"],
        ["security.devlxd", "security.devlxd is not among the keys gpu-workers hands LXD"],
        ["linux.sysctl.net.ipv4.ip_forward", "linux.sysctl.net.ipv4.ip_forward is not among the keys gpu-workers hands LXD"],
        ["Security.Privileged", "Security.Privileged is not among the keys gpu-workers hands LXD"],
    ];
    for (const [key, reason] of refused) {
        it(`refuses ${key}, saying why, in the stack and in the instance's spec`, () => {
            const problems = withLxdConfig({ [key]: "true" });
            assert.strictEqual(problems.length, 1, problems.join("\n"));
            assert.ok(problems[0].startsWith(`hosts[0].transport.lxd.config: ${reason}`), problems[0]);
            const spec = lxdInstanceProblems({ name: "a", image: "img", type: "container", config: { [key]: "true" }, devices: {} });
            assert.ok(
                spec.some((p) => p.includes(`: config: ${reason}`)),
                spec.join("\n"),
            );
        });
    }

    it("takes the keys that only size, start or describe an instance", () => {
        const allowed = {
            "limits.cpu": "2",
            "limits.memory": "4GiB",
            "boot.autostart": "true",
            "environment.HTTP_PROXY": "http://proxy:3128",
            "snapshots.schedule": "@daily",
            "user.team": "ml",
            "security.nesting": "true",
            "security.idmap.isolated": "true",
            "security.protection.delete": "true",
            "nvidia.runtime": "true",
            "nvidia.driver.capabilities": "compute,utility",
        };
        assert.deepStrictEqual(withLxdConfig(allowed), []);
        assert.deepStrictEqual(lxdInstanceProblems({ name: "a", image: "img", type: "container", config: allowed, devices: {} }), []);
    });
});

function withDatasetRoot(root: string): string[] {
    return problemsOf(stackWith({ name: "a", inventory: NO_GPU, extra: { datasets: { root } } }));
}

describe("trust: the system's and its services' state is no dataset root", () => {
    for (const tree of [
        "/var/lib/gpu-workers",
        "/var/lib/containerd",
        "/var/lib/lxd",
        "/var/lib/postgresql",
        "/var/lib/docker",
        "/var/lib/kubelet",
        "/var/lib/libvirt",
        "/var/lib/dpkg",
        "/var/lib/apt",
        "/var/lib/systemd",
        "/var/log",
        "/var/spool",
        "/var/mail",
    ]) {
        it(`refuses ${tree} and what is in it`, () => {
            for (const root of [tree, `${tree}/journal`]) {
                const problems = withDatasetRoot(root);
                assert.strictEqual(problems.length, 1, `${root}: ${problems.join("\n")}`);
                assert.ok(
                    problems[0].startsWith(
                        `hosts[0].datasets.root: ${root} ${root === tree ? "is" : `is in ${tree},`} where the system or a service keeps its own state`,
                    ),
                    problems[0],
                );
            }
        });
    }

    it("a folder of its own beside them is fine", () => {
        for (const root of ["/var/lib/datasets", "/var/lib/gpu-workers-data", "/var/lib/containerd-models", "/srv", "/data/sets"])
            assert.deepStrictEqual(withDatasetRoot(root), [], root);
    });
});
