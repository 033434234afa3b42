/**
 * Intel GPUs without the hardware (issue 42): a fake sysfs and devfs as Intel's device-faker
 * makes them (test/support/fake-intel-gpus.ts, real character devices by mknod) for a Flex 170
 * pair, an Arc A770 on xe and an integrated Alder Lake-P. host/discover-gpus.sh reads each as a
 * host's, the parser prints the inventory block, and verification catches a changed count.
 * Then real runc through the wrapper, with the settings the plan renders for an Intel worker:
 * each container sees exactly its GPU's card and render nodes and their by-path names, in mode
 * all and per task, and its processes (the init and each exec) are in the nodes' groups.
 * mknod needs root, as CI has; the test's nodes in /dev/dri are its own and removed after.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { compareInventory } from "../../components/lib/discovery/verify";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { renderInventoryYaml } from "../../components/lib/discovery/yaml-block";
import { GpuInventoryInput, inventorySchema } from "../../components/lib/gpu/inventory";
import { planRuncWrapper } from "../../components/lib/links/runc-wrapper/plan";
import { renderWrapperConfig, WRAPPER_BUILD_OUTPUT } from "../../components/lib/links/runc-wrapper/render";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { ALDER_LAKE_IGPU, ARC_A770_XE, FakeIntelGpu, FLEX_170_PAIR, makeFakeIntelGpus } from "../support/fake-intel-gpus";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, tempDir, withSettings, writeSettings } from "./wrapper-support";

const DISCOVER = path.join(PACKAGE_ROOT, "host", "discover-gpus.sh");

/** discover-gpus.sh on a fake root; with `bin`, its tools (a stand-in xpu-smi) come first on PATH. */
function discover(root: string, bin?: string) {
    const PATH = bin ? `${bin}:${process.env.PATH}` : process.env.PATH;
    const r = spawnSync("bash", [DISCOVER], { encoding: "utf8", env: { ...process.env, GPU_WORKERS_ROOT: root, PATH } });
    assert.strictEqual(r.status, 0, r.stderr);
    return parseDiscoveryDocument(r.stdout, root);
}

describe("Intel GPUs from a fake sysfs, and through the wrapper with real runc", function () {
    this.timeout(300_000);
    let dir: string;

    before(() => {
        if (process.getuid?.() !== 0) throw new Error("the Intel GPU test needs root: it makes character devices with mknod");
        dir = tempDir("gw-intel-");
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    function fake(name: string, gpus: FakeIntelGpu[]): string {
        const root = path.join(dir, name);
        makeFakeIntelGpus(root, gpus);
        return root;
    }

    it("a Flex 170 pair: both cards, in card order, with driver, device id, nodes and address; the block to paste says them", () => {
        const found = discover(fake("flex", FLEX_170_PAIR));
        assert.deepStrictEqual(found.vendors, ["intel"]);
        assert.deepStrictEqual(found.problems, []);
        assert.deepStrictEqual(
            found.inventory.gpus.map((g) => [g.index, g.model, g.pciBusId, g.driver, g.pciDeviceId, g.cardNode, g.renderNode, g.integrated]),
            [
                [0, "Intel Data Center GPU Flex 170", "0000:4d:00.0", "i915", "0x56c0", "card0", "renderD128", false],
                [1, "Intel Data Center GPU Flex 170", "0000:5e:00.0", "i915", "0x56c0", "card1", "renderD129", false],
            ],
        );
        assert.ok(
            found.warnings.some((w) => /memory is not in sysfs and xpu-smi is not installed/.test(w)),
            found.warnings.join("\n"),
        );
        const block = renderInventoryYaml(found, "flex");
        for (const line of ["vendor: intel", 'pciBusId: "0000:4d:00.0"', "cardNode: card1", "renderNode: renderD129", "driver: i915", 'pciDeviceId: "0x56c0"'])
            assert.ok(block.includes(line), `${line} in\n${block}`);
        assert.match(block, /memoryMiB: 0 # not in sysfs: fill in \(xpu-smi discovery shows it\)/);
        // The block, with the memory filled in, is an inventory the schema takes.
        const pasted = { ...found.inventory, gpus: found.inventory.gpus.map((g) => ({ ...g, memoryMiB: 16384 })) };
        assert.ok(inventorySchema.safeParse(pasted).success);
    });

    it("with xpu-smi installed, each GPU's memory comes from its discovery dump, matched by PCI address", () => {
        // The stand-in answers the one command line discovery asks with the recorded answer, and fails otherwise.
        const bin = path.join(dir, "xpu-bin");
        fs.mkdirSync(bin, { recursive: true });
        const capture = path.join(PACKAGE_ROOT, "test/fixtures/xpu-smi-metrics/flex-170-x2/xpu-smi-discovery-dump.txt");
        fs.writeFileSync(
            path.join(bin, "xpu-smi"),
            `#!/bin/sh\n[ "$*" = "discovery --dump 1,11,4,16" ] || { echo "unexpected: $*" >&2; exit 98; }\ncat '${capture}'\n`,
            { mode: 0o755 },
        );
        const found = discover(fake("flex-xpu", FLEX_170_PAIR), bin);
        assert.deepStrictEqual(found.problems, []);
        assert.deepStrictEqual(
            found.inventory.gpus.map((g) => [g.pciBusId, g.memoryMiB]),
            [
                ["0000:4d:00.0", 16288],
                ["0000:5e:00.0", 16288],
            ],
        );
        assert.ok(!found.warnings.some((w) => /memory/.test(w)), found.warnings.join("\n"));
    });

    it("verify: the declared Flex pair matches; a third GPU declared, a changed render node or driver is caught", () => {
        const found = discover(fake("flex-verify", FLEX_170_PAIR));
        const declared: GpuInventoryInput = { ...found.inventory, gpus: found.inventory.gpus.map((g) => ({ ...g, memoryMiB: 16384 })) };
        const ok = compareInventory(inventorySchema.parse(declared), found);
        assert.deepStrictEqual(ok.errors, []);
        const three = {
            ...declared,
            gpus: [...declared.gpus!, { ...declared.gpus![1], index: 2, pciBusId: "0000:6f:00.0", cardNode: "card2", renderNode: "renderD130" }],
        };
        assert.match(
            compareInventory(inventorySchema.parse(three), found).errors.join("\n"),
            /gpus\[2\]: GPU 2 \(Intel Data Center GPU Flex 170.*declared, not found \(found 2: 0, 1\)/,
        );
        const moved = { ...declared, gpus: [declared.gpus![0], { ...declared.gpus![1], renderNode: "renderD200", driver: "xe" as const }] };
        const errors = compareInventory(inventorySchema.parse(moved), found).errors.join("\n");
        assert.match(errors, /gpus\[1\]: declared render node renderD200, found renderD129/);
        assert.match(errors, /gpus\[1\]: declared driver xe, found i915/);
    });

    it("an Arc A770 on xe and an integrated Alder Lake-P (its connector is no card)", () => {
        const arc = discover(fake("arc", ARC_A770_XE));
        assert.deepStrictEqual(
            arc.inventory.gpus.map((g) => [g.model, g.driver, g.cardNode, g.renderNode]),
            [["Intel Arc A770", "xe", "card0", "renderD128"]],
        );
        const igpu = discover(fake("igpu", ALDER_LAKE_IGPU));
        assert.deepStrictEqual(
            igpu.inventory.gpus.map((g) => [g.model, g.integrated, g.pciBusId, g.cardNode]),
            [["Intel Iris Xe Graphics (Alder Lake-P)", true, "0000:00:02.0", "card0"]],
        );
    });

    describe("through the wrapper with real runc", () => {
        // Nodes of this test's own in the host's /dev/dri (numbers no real GPU here has): GPU 1's have
        // /dev/null's numbers, GPU 0's /dev/zero's (no test opens them), so that a node is known by
        // its numbers; 0660 and of two groups of their own, as video and render own a host's.
        const NODES = ["card70", "renderD170", "card71", "renderD171"];
        /** udev's links to them, as a host has them. */
        const LINKS = [0, 1].flatMap((i) => [
            [`/dev/dri/by-path/pci-0000:7${i}:00.0-card`, `card7${i}`],
            [`/dev/dri/by-path/pci-0000:7${i}:00.0-render`, `renderD17${i}`],
        ]);
        let madeByPath = false;
        const VIDEO_GID = 3044;
        const RENDER_GID = 3109;
        /** What a container of GPU i sees: its nodes, and the nodes at udev's by-path names (this test's links). */
        const nodesOf = (i: number) => [
            `/dev/dri/by-path/pci-0000:7${i}:00.0-card`,
            `/dev/dri/by-path/pci-0000:7${i}:00.0-render`,
            `/dev/dri/card7${i}`,
            `/dev/dri/renderD17${i}`,
        ];
        let madeDri = false;
        let wrapper: string;
        let settingsPath: string;
        let rootfs: string;
        const runcRoot = () => path.join(dir, "runc-root");
        const inventory = inventorySchema.parse({
            vendor: "intel",
            gpus: [0, 1].map((index) => ({
                index,
                model: "Intel Data Center GPU Flex 170",
                memoryMiB: 16384,
                pciBusId: `0000:7${index}:00.0`,
                cardNode: `card${70 + index}`,
                renderNode: `renderD${170 + index}`,
                driver: "i915",
                pciDeviceId: "0x56c0",
            })),
        });

        before(() => {
            ensureWrapperTools();
            madeDri = !fs.existsSync("/dev/dri");
            fs.mkdirSync("/dev/dri", { recursive: true });
            for (const n of NODES) {
                sh("mknod", ["-m", "0660", `/dev/dri/${n}`, "c", "1", n.endsWith("70") ? "5" : "3"]);
                fs.chownSync(`/dev/dri/${n}`, 0, n.startsWith("card") ? VIDEO_GID : RENDER_GID);
            }
            madeByPath = !fs.existsSync("/dev/dri/by-path");
            fs.mkdirSync("/dev/dri/by-path", { recursive: true });
            for (const [link, node] of LINKS) fs.symlinkSync(`../${node}`, link);
            settingsPath = path.join(dir, "runc-wrapper.json");
            wrapper = buildTestWrapper(dir, settingsPath);
            rootfs = path.join(dir, "rootfs");
            makeBusyboxRootfs(rootfs);
            fs.mkdirSync(path.join(rootfs, "tmp/build/1a2b3c4d"), { recursive: true });
            fs.mkdirSync(path.join(dir, "datasets"));
        });

        after(() => {
            for (const [link] of LINKS) fs.rmSync(link, { force: true });
            if (madeByPath) fs.rmSync("/dev/dri/by-path", { recursive: true, force: true });
            for (const n of NODES) fs.rmSync(`/dev/dri/${n}`, { force: true });
            if (madeDri && fs.existsSync("/dev/dri") && fs.readdirSync("/dev/dri").length === 0) fs.rmdirSync("/dev/dri");
        });

        function configure(terms: Partial<Parameters<typeof planRuncWrapper>[0]>): void {
            const settings = planRuncWrapper({
                inventory,
                datasets: { root: path.join(dir, "datasets") },
                wrapperBinary: { path: WRAPPER_BUILD_OUTPUT, sha256: "0".repeat(64) },
                ...terms,
            });
            const config = renderWrapperConfig({
                ...settings,
                realRuntime: sh("sh", ["-c", "command -v runc"]).trim(),
                logPath: path.join(dir, "wrapper.log"),
            });
            writeSettings(settingsPath, withSettings(config, {}));
        }

        /** Creates a task's container (through the wrapper) whose init lists its /dev/dri nodes and its groups, then waits. */
        function create(id: string, env: string[] = []) {
            const out = path.join(dir, "out", id);
            fs.mkdirSync(out, { recursive: true });
            const b = makeBundle(
                path.join(dir, "bundles", id),
                rootfs,
                // Written whole, then renamed: the test reads it as soon as it is there.
                ["sh", "-c", `${LIST_NODES_AND_GROUPS}; sleep 300`],
                ["PATH=/bin", ...env],
            );
            const specPath = path.join(b, "config.json");
            const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
            spec.mounts.push({ destination: "/tmp/build/1a2b3c4d", type: "bind", source: out, options: ["rbind", "rw"] });
            fs.writeFileSync(specPath, JSON.stringify(spec));
            // Output into a file: a created container's init would hold a pipe open.
            const log = path.join(dir, `${id}.create.out`);
            const fd = fs.openSync(log, "w");
            const r = spawnSync(wrapper, ["--root", runcRoot(), "create", "--bundle", b, id], { stdio: ["ignore", fd, fd], timeout: 120_000 });
            fs.closeSync(fd);
            return { status: r.status, stderr: fs.readFileSync(log, "utf8") };
        }

        function start(id: string, env: string[] = []): void {
            const r = create(id, env);
            assert.strictEqual(r.status, 0, `${id}: ${r.stderr}`);
            sh("runc", ["--root", runcRoot(), "start", id]);
        }

        const LIST_NODES_AND_GROUPS =
            "cd /tmp/build/1a2b3c4d; find /dev/dri -type c > dri.part 2>/dev/null; id -G > groups.part; mv groups.part groups; mv dri.part dri";

        /** The character devices under /dev/dri a container's init saw, and its groups. */
        function saw(id: string): string[] {
            const file = path.join(dir, "out", id, "dri");
            for (let i = 0; i < 100 && !fs.existsSync(file); i++) spawnSync("sleep", ["0.1"]);
            return fs.readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).sort();
        }
        const groups = (id: string, file = "groups") =>
            fs
                .readFileSync(path.join(dir, "out", id, file), "utf8")
                .trim()
                .split(/\s+/)
                .map(Number);

        /** `runc exec` through the wrapper, with a process file as containerd's shim writes one (no supplementary groups). */
        function execGroups(id: string): number[] {
            const proc = path.join(dir, `${id}.exec.json`);
            const args = ["sh", "-c", "id -G > /tmp/build/1a2b3c4d/exec-groups"];
            fs.writeFileSync(proc, JSON.stringify({ terminal: false, user: { uid: 0, gid: 0 }, cwd: "/", args, env: ["PATH=/bin"] }));
            const r = spawnSync(wrapper, ["--root", runcRoot(), "exec", "--process", proc, id], { encoding: "utf8", timeout: 60_000 });
            assert.strictEqual(r.status, 0, r.stderr);
            return groups(id, "exec-groups");
        }

        const remove = (ids: string[]) => ids.forEach((id) => spawnSync(wrapper, ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" }));

        it("mode all: every container gets exactly the selected GPU's card and render nodes, at their by-path names too, and its processes their groups", () => {
            configure({ selection: [1] });
            start("all-a");
            try {
                assert.deepStrictEqual(saw("all-a"), nodesOf(1));
                assert.ok(groups("all-a").includes(VIDEO_GID) && groups("all-a").includes(RENDER_GID), `the init's groups: ${groups("all-a").join(" ")}`);
                const exec = execGroups("all-a");
                assert.ok(exec.includes(VIDEO_GID) && exec.includes(RENDER_GID), `an exec's groups: ${exec.join(" ")}`);
            } finally {
                remove(["all-a"]);
            }
        });

        it("a spec that names another GPU's node under a path of its own is refused by the node's numbers", () => {
            configure({ selection: [1] });
            const b = makeBundle(path.join(dir, "bundles", "disguise"), rootfs, ["true"]);
            const specPath = path.join(b, "config.json");
            const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
            spec.linux.devices = [{ path: "/dev/accel0", type: "c", major: 1, minor: 5, fileMode: 0o666, uid: 0, gid: 0 }];
            fs.writeFileSync(specPath, JSON.stringify(spec));
            const r = spawnSync(wrapper, ["--root", runcRoot(), "create", "--bundle", b, "disguise"], { encoding: "utf8", timeout: 60_000 });
            assert.notStrictEqual(r.status, 0, "GPU 0's numbers under another name");
            assert.match(r.stderr, /device node \/dev\/accel0 in linux\.devices with the numbers of \/dev\/dri\/(card|renderD)170 \(other-gpu-devices/);
            spec.linux.devices[0].minor = 3; // the selected GPU's numbers
            fs.writeFileSync(specPath, JSON.stringify(spec));
            const log = path.join(dir, "disguise.create.out");
            const fd = fs.openSync(log, "w"); // not a pipe: the created container's init would hold it open
            const mine = spawnSync(wrapper, ["--root", runcRoot(), "create", "--bundle", b, "disguise"], { stdio: ["ignore", fd, fd], timeout: 60_000 });
            fs.closeSync(fd);
            remove(["disguise"]);
            assert.strictEqual(mine.status, 0, fs.readFileSync(log, "utf8"));
        });

        it("a by-path link the host lacks gives no name; one that leads to another GPU's node is refused", () => {
            configure({ selection: [1] });
            const [renderLink] = LINKS[3];
            fs.rmSync(renderLink);
            try {
                start("link-none");
                assert.deepStrictEqual(
                    saw("link-none"),
                    nodesOf(1).filter((n) => n !== renderLink),
                );
                fs.symlinkSync("../renderD170", renderLink);
                const other = create("link-other");
                assert.notStrictEqual(other.status, 0, "a link to GPU 0's node is refused");
                assert.match(
                    other.stderr,
                    /device link \/dev\/dri\/by-path\/pci-0000:71:00\.0-render on the host leads to \/dev\/dri\/renderD170, not to \/dev\/dri\/renderD171/,
                );
            } finally {
                remove(["link-none", "link-other"]);
                fs.rmSync(renderLink, { force: true });
                fs.symlinkSync("../renderD171", renderLink);
            }
        });

        it("a container in a user namespace as Concourse makes one (its root an unprivileged host uid): its init and an exec open the render node through its group", () => {
            configure({ selection: [1] });
            // The container's root (host uid 200000) reaches the rootfs, and makes no mount point in it.
            fs.chmodSync(dir, 0o755);
            fs.mkdirSync(path.join(rootfs, path.join(dir, "datasets")), { recursive: true });
            const out = path.join(dir, "out", "userns");
            fs.mkdirSync(out, { recursive: true, mode: 0o777 });
            fs.chmodSync(out, 0o777);
            const open = "cat /dev/dri/renderD171 && echo opened";
            const b = makeBundle(path.join(dir, "bundles", "userns"), rootfs, ["sh", "-c", `${open} > /tmp/build/1a2b3c4d/open 2>&1; sleep 300`]);
            const specPath = path.join(b, "config.json");
            const spec = JSON.parse(fs.readFileSync(specPath, "utf8"));
            // Concourse's unprivileged map (worker/runtime/spec: root is an unprivileged host id, 1.. are themselves).
            const map = [
                { containerID: 0, hostID: 200000, size: 1 },
                { containerID: 1, hostID: 1, size: 65535 },
            ];
            spec.linux.namespaces.push({ type: "user" });
            Object.assign(spec.linux, { uidMappings: map, gidMappings: map });
            spec.mounts = spec.mounts.filter((m: { destination: string }) => m.destination !== "/sys/fs/cgroup");
            spec.mounts.push({ destination: "/tmp/build/1a2b3c4d", type: "bind", source: out, options: ["rbind", "rw"] });
            fs.writeFileSync(specPath, JSON.stringify(spec));
            const log = path.join(dir, "userns.create.out");
            const fd = fs.openSync(log, "w"); // not a pipe: the created container's init would hold it open
            const r = spawnSync(wrapper, ["--root", runcRoot(), "create", "--bundle", b, "userns"], { stdio: ["ignore", fd, fd], timeout: 120_000 });
            fs.closeSync(fd);
            assert.strictEqual(r.status, 0, fs.readFileSync(log, "utf8"));
            try {
                sh("runc", ["--root", runcRoot(), "start", "userns"]);
                const file = path.join(out, "open");
                for (let i = 0; i < 100 && !/opened|denied/.test(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""); i++) spawnSync("sleep", ["0.1"]);
                assert.match(fs.readFileSync(file, "utf8"), /^opened$/m, "the init opened the node");
                const proc = path.join(dir, "userns.exec.json");
                fs.writeFileSync(proc, JSON.stringify({ terminal: false, user: { uid: 0, gid: 0 }, cwd: "/", args: ["sh", "-c", open], env: ["PATH=/bin"] }));
                const exec = spawnSync(wrapper, ["--root", runcRoot(), "exec", "--process", proc, "userns"], { encoding: "utf8", timeout: 60_000 });
                assert.strictEqual(exec.status, 0, exec.stderr);
                assert.match(exec.stdout, /^opened$/m, "the exec opened the node");
            } finally {
                remove(["userns"]);
            }
        });

        it("exclusive: two tasks at once each see exactly their own GPU's nodes, never the other's; a container holding none sees none and gets no group", () => {
            configure({ allocation: { mode: "exclusive", waitSeconds: 5 } });
            start("ex-a", ["GPU_WORKERS_GPUS=1"]);
            start("ex-b", ["GPU_WORKERS_GPUS=1"]);
            try {
                const seen = [saw("ex-a"), saw("ex-b")].map((s) => s.join(" ")).sort();
                assert.deepStrictEqual(seen, [nodesOf(0).join(" "), nodesOf(1).join(" ")]);
                assert.ok(groups("ex-a").includes(RENDER_GID), `a holder's groups: ${groups("ex-a").join(" ")}`);
                start("ex-none", ["GPU_WORKERS_GPUS=0"]);
                assert.deepStrictEqual(saw("ex-none"), [], "a container holding no GPU has no /dev/dri node");
                assert.ok(!groups("ex-none").includes(RENDER_GID) && !groups("ex-none").includes(VIDEO_GID), `its groups: ${groups("ex-none").join(" ")}`);
                const none = create("ex-c", ["GPU_WORKERS_GPUS=1"]);
                assert.notStrictEqual(none.status, 0, "both GPUs are held");
                assert.match(none.stderr, /too few free GPU units after waiting 5s/);
            } finally {
                remove(["ex-a", "ex-b", "ex-c", "ex-none"]);
            }
        });
    });
});
