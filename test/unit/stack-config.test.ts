import * as assert from "assert";
import { parseStackConfig } from "../../stacks/checks/stack";
import { A100_MIG, HGX_H100_8X, NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";

describe("stack config", () => {
    it("applies built-in defaults, stack defaults and host overrides in that order", () => {
        const raw = stackWith({ name: "gpu-a", inventory: HGX_H100_8X, extra: { datasets: { writableSuffixes: ["_scratch"] }, selection: [0, 1] } });
        const [host] = parseStackConfig(raw);
        assert.strictEqual(host.datasets.root, "/srv");
        assert.deepStrictEqual(host.datasets.writableSuffixes, ["_scratch"]);
        assert.deepStrictEqual(host.selection, [0, 1]);
        assert.strictEqual(host.concourse.tsaHost, "ci.example.test");
        assert.strictEqual(host.concourse.tsaPort, 2222);
        assert.strictEqual(host.inventory.nvswitches, 4);
        assert.strictEqual(host.inventory.gpus[0].integrated, false);
    });

    it("reports a bad GPU index with its full path", () => {
        const raw = stackWith(
            { name: "a", inventory: NO_GPU },
            { name: "b", inventory: NO_GPU },
            { name: "c", inventory: { vendor: "nvidia", gpus: [{ index: -1, model: "X", memoryMiB: 1 }] } },
        );
        assert.deepStrictEqual(problemsOf(raw), ["hosts[2].gpus[0].index: expected a non-negative integer"]);
    });

    it("reports every problem at once", () => {
        const raw = stackWith({
            name: "Bad_Name",
            inventory: { vendor: "nvidia", gpus: [{ index: 0, model: "", memoryMiB: 1.5 }] },
            extra: { colour: "red", datasets: { root: "srv" } },
        });
        raw.defaults = { ...raw.defaults, toolkit: { version: "latest" } } as typeof raw.defaults;
        const problems = problemsOf(raw);
        assert.deepStrictEqual(
            problems.sort(),
            [
                "defaults.toolkit.version: expected preinstalled or a version such as 1.17.8",
                "hosts[0]: unknown key colour",
                "hosts[0].datasets.root: expected an absolute path",
                "hosts[0].gpus[0].memoryMiB: expected a non-negative integer",
                "hosts[0].gpus[0].model: expected the GPU model name",
                "hosts[0].name: expected lower-case letters, digits and dashes (a DNS label), e.g. gpu-a",
            ].sort(),
        );
    });

    it("rejects unknown keys inside nested objects", () => {
        const raw = stackWith({ name: "a", inventory: A100_MIG, extra: { concourse: { tsaPort: 2222, tsaHots: "typo" } } });
        assert.deepStrictEqual(problemsOf(raw), ["hosts[0].concourse: unknown key tsaHots"]);
    });

    it("names a required setting missing everywhere (the TSA, once the worker is to run)", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU });
        raw.defaults = { concourse: { binary: raw.defaults.concourse.binary } } as typeof raw.defaults;
        const problems = problemsOf(raw);
        assert.ok(
            problems.some(
                (p) => p.startsWith("hosts[0].concourse.tsaHost: required") && p.endsWith("set it under defaults or on this host, or declare gpu-workers:web"),
            ),
            problems.join("\n"),
        );
    });

    it("rejects two hosts with one name and two LXD hosts on one loopback port", () => {
        const dup = stackWith({ name: "a", inventory: NO_GPU }, { name: "a", inventory: NO_GPU });
        assert.deepStrictEqual(problemsOf(dup), ["hosts[1].name: a is already used by hosts[0]"]);
        const lxd = (name: string) => ({ name, transport: { lxd: { instance: name, image: "debian-12", sshPort: 2201 } }, vendor: "none" });
        const ports = { defaults: dup.defaults, hosts: [lxd("x"), lxd("y")] };
        assert.deepStrictEqual(problemsOf(ports), ["hosts[1].transport.lxd.sshPort: 2201 is already used by hosts[0] on the same LXD server"]);
    });

    it("refuses two hosts on one machine: one SSH address and port, or one LXD instance (the web may share a worker's)", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU }, { name: "c", inventory: NO_GPU });
        (raw.hosts[1].transport as { ssh: { host: string } }).ssh.host = "10.0.0.10";
        const lxd = (name: string, instance: string, sshPort: number) => ({
            name,
            transport: { lxd: { instance, image: "debian-12", sshPort } },
            vendor: "none",
        });
        assert.deepStrictEqual(problemsOf({ defaults: raw.defaults, hosts: [...raw.hosts, lxd("x", "gpu-x", 2201), lxd("y", "gpu-x", 2202)] }), [
            "hosts[1].transport.ssh.host: 10.0.0.10:22 is the machine of hosts[0] too: one machine is one host of the stack",
            "hosts[4].transport.lxd.instance: gpu-x is the machine of hosts[3] too: one machine is one host of the stack",
        ]);
        const other = stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU });
        (other.hosts[1].transport as { ssh: { host: string; port?: number } }).ssh = {
            ...(other.hosts[1].transport as { ssh: { host: string } }).ssh,
            host: "10.0.0.10",
            port: 2222,
        };
        assert.strictEqual(parseStackConfig(other).length, 2, "another port of one address is another machine (a forwarded port)");
    });

    it("renamedFrom: the host's old name, which no host of the stack has now; not for a board or its workers", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU, extra: { renamedFrom: "old-a" } }, { name: "b", inventory: NO_GPU });
        assert.strictEqual(parseStackConfig(raw)[0].renamedFrom, "old-a");
        const bad = stackWith(
            { name: "a", inventory: NO_GPU, extra: { renamedFrom: "a" } },
            { name: "b", inventory: NO_GPU, extra: { renamedFrom: "c" } },
            { name: "c", inventory: NO_GPU },
            { name: "d", inventory: NO_GPU, extra: { renamedFrom: "c" } },
            { name: "e", inventory: NO_GPU, extra: { renamedFrom: "Old" } },
        );
        assert.deepStrictEqual(problemsOf(bad), [
            "hosts[4].renamedFrom: expected lower-case letters, digits and dashes (a DNS label), e.g. gpu-a",
            "hosts[0].renamedFrom: a is this host's name already (drop renamedFrom once the renamed stack is up)",
            "hosts[1].renamedFrom: c is the name of hosts[2]; a host renamed from it must be gone from the stack",
            "hosts[3].renamedFrom: c is the name of hosts[2]; a host renamed from it must be gone from the stack",
            "hosts[3].renamedFrom: hosts[1] was renamed from c too",
        ]);
    });

    it("an LXD worker host of its own is a container reached as root: a VM (a shared board's worker only) or another user is refused, saying why", () => {
        const vm = {
            name: "v",
            transport: { lxd: { instance: "v", image: "debian-12", sshPort: 2202, type: "virtual-machine", user: "ubuntu" } },
            vendor: "none",
        };
        assert.deepStrictEqual(problemsOf({ defaults: stackWith().defaults, hosts: [vm] }).sort(), [
            "hosts[0].transport.lxd.address: required for a virtual-machine: LXD forwards sshd to a VM only through NAT to a static address on a managed network",
            "hosts[0].transport.lxd.network: required for a virtual-machine: LXD forwards sshd to a VM only through NAT to a static address on a managed network",
            "hosts[0].transport.lxd.user: expected root (the SSH key placed in the instance is root's)",
        ]);
        const alone = {
            name: "v",
            transport: {
                lxd: {
                    instance: "v",
                    image: "debian-12",
                    sshPort: 2202,
                    type: "virtual-machine",
                    network: "lxdbr0",
                    address: "10.10.0.2",
                    sshAddress: "10.0.0.2",
                },
            },
            vendor: "none",
        };
        assert.deepStrictEqual(problemsOf({ defaults: stackWith().defaults, hosts: [alone] }), [
            "hosts[0].transport.lxd.type: virtual-machine is for the workers of a shared board (board: {name, gpus}); other LXD workers are containers",
        ]);
    });

    it("rejects a transport that is neither ssh nor lxd, and inventory contradictions", () => {
        const raw = stackWith({
            name: "a",
            inventory: {
                vendor: "amd",
                gpus: [{ index: 0, model: "MI210", memoryMiB: 65536, mig: [{ index: 0, profile: "1g.10gb", gi: 0, ci: 0 }] }],
                nvswitches: 2,
            },
        });
        (raw.hosts[0] as Record<string, unknown>).transport = { winrm: {} };
        const problems = problemsOf(raw);
        assert.ok(problems.includes("hosts[0].transport: expected exactly one of ssh: {...} or lxd: {...}"), problems.join("\n"));
        assert.ok(problems.includes("hosts[0].gpus[0].mig: MIG is for NVIDIA GPUs only"), problems.join("\n"));
        assert.ok(problems.includes("hosts[0].nvswitches: NVSwitches exist on NVIDIA boards only"), problems.join("\n"));
    });

    it("reports a bad default and still applies the valid defaults, without follow-on errors", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU, extra: { concourse: { tsaHost: "ci-b.example.test" } } });
        // tsaPublicKey (valid) must still reach both hosts; the bad tsaHost and the typo'd mode (whose
        // built-in stand-in, auto, would reject the partitions) must not make hosts look misconfigured.
        raw.defaults = {
            ...raw.defaults,
            concourse: { ...raw.defaults.concourse, tsaHost: "" },
            toolkit: { version: "latest" },
            fabricManager: { mode: "of", partitions: [1] },
        } as typeof raw.defaults;
        assert.deepStrictEqual(problemsOf(raw).sort(), [
            "defaults.concourse.tsaHost: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
            "defaults.fabricManager.mode: expected auto, host, service-vm or off (on is the older name of host)",
            "defaults.toolkit.version: expected preinstalled or a version such as 1.17.8",
        ]);
    });

    it("reports a host's bad settings together with the settings it is missing", () => {
        const raw = stackWith({
            name: "a",
            inventory: NO_GPU,
            extra: { datasets: { root: "srv" }, concourse: { tsaHost: "ci.example.test", binary: { path: "concourse.tgz" } } },
        });
        raw.defaults = {} as typeof raw.defaults;
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0].datasets.root: expected an absolute path",
            "hosts[0].concourse.tsaPublicKey: required to run the worker (the TSA's host key) — set it under defaults or on this host, or declare gpu-workers:web",
        ]);
    });

    it("runs the cross-host and GPU plan checks alongside every other problem", () => {
        const lxd = (name: string) => ({ name, transport: { lxd: { instance: name, image: "debian-12", sshPort: 2201 } }, vendor: "none" });
        const raw = stackWith(
            { name: "a", inventory: NO_GPU },
            { name: "a", inventory: HGX_H100_8X, extra: { selection: [9] } },
            { name: "c", inventory: NO_GPU, extra: { datasets: { root: "srv" }, fabricManager: { mode: "on" } } },
        );
        raw.defaults = { ...raw.defaults, toolkit: { version: "latest" } } as typeof raw.defaults;
        const problems = problemsOf({ defaults: raw.defaults, hosts: [...raw.hosts, lxd("x"), lxd("y")] });
        assert.deepStrictEqual(
            problems.sort(),
            [
                "defaults.toolkit.version: expected preinstalled or a version such as 1.17.8",
                "hosts[1].name: a is already used by hosts[0]",
                "hosts[1].selection: GPU index 9 is not in the inventory (declared: 0, 1, 2, 3, 4, 5, 6, 7)",
                "hosts[2].datasets.root: expected an absolute path",
                "hosts[2].fabricManager.mode: on needs NVSwitches, but the inventory declares nvswitches: 0 (fabricmanager must not start without them)",
                "hosts[4].transport.lxd.sshPort: 2201 is already used by hosts[3] on the same LXD server",
            ].sort(),
        );
    });

    it("wants a list of hosts", () => {
        assert.deepStrictEqual(problemsOf({ defaults: {} }), ["hosts: expected a list of hosts (gpu-workers:hosts in the stack config)"]);
    });

    it("refuses an empty hosts list (up would delete every worker), pointing at pulumi destroy, unless allowNoHosts says so", () => {
        const { defaults } = stackWith({ name: "a", inventory: NO_GPU });
        assert.deepStrictEqual(problemsOf({ defaults, hosts: [] }), [
            "hosts: the list is empty, so pulumi up would delete every worker this stack made. To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true",
        ]);
        assert.deepStrictEqual(problemsOf({ defaults, hosts: [], allowNoHosts: false }).length, 1);
        assert.deepStrictEqual(parseStackConfig({ defaults, hosts: [], allowNoHosts: true }), []);
        assert.deepStrictEqual(problemsOf({ defaults, hosts: [], allowNoHosts: "yes" }), [
            "allowNoHosts: expected true or false (gpu-workers:allowNoHosts in the stack config)",
            "hosts: the list is empty, so pulumi up would delete every worker this stack made. To remove them all, run pulumi destroy; to keep a stack with no hosts on purpose, set gpu-workers:allowNoHosts to true",
        ]);
        // With hosts, the setting changes nothing.
        assert.strictEqual(parseStackConfig({ ...stackWith({ name: "a", inventory: NO_GPU }), allowNoHosts: true }).length, 1);
    });

    it("a bad driver version names both valid forms", () => {
        for (const bad of ["latest", "", "550", "v550.54.15", 550]) {
            const raw = stackWith({ name: "a", inventory: NO_GPU, extra: { driver: { version: bad } } });
            assert.deepStrictEqual(problemsOf(raw), ["hosts[0].driver.version: expected preinstalled or a pinned version such as 550.54.15"], String(bad));
        }
        for (const good of ["preinstalled", "550.54.15", "535.183.01-1"]) {
            const [host] = parseStackConfig(stackWith({ name: "a", inventory: NO_GPU, extra: { driver: { version: good } } }));
            assert.strictEqual(host.driver.version, good);
        }
    });
});
