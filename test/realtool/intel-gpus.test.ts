/**
 * Intel GPUs without the hardware (issue 42): a fake sysfs and devfs as Intel's device-faker
 * makes them (test/support/fake-intel-gpus.ts, real character devices by mknod) for a Flex 170
 * pair, an Arc A770 on xe and an integrated Alder Lake-P. host/discover-gpus.sh reads each as a
 * host's, the parser prints the inventory block, and verification catches a changed count.
 * Then real runc through the wrapper, with the settings the plan renders for an Intel worker:
 * each container sees exactly its GPU's card and render nodes, in mode all and per task.
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

function discover(root: string) {
    const r = spawnSync("bash", [DISCOVER], { encoding: "utf8", env: { ...process.env, GPU_WORKERS_ROOT: root } });
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
        // Nodes of this test's own in the host's /dev/dri (numbers no real GPU here has), /dev/null's numbers.
        const NODES = ["card70", "renderD170", "card71", "renderD171"];
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
            for (const n of NODES) sh("mknod", ["-m", "0660", `/dev/dri/${n}`, "c", "1", "3"]);
            settingsPath = path.join(dir, "runc-wrapper.json");
            wrapper = buildTestWrapper(dir, settingsPath);
            rootfs = path.join(dir, "rootfs");
            makeBusyboxRootfs(rootfs);
            fs.mkdirSync(path.join(rootfs, "tmp/build/1a2b3c4d"), { recursive: true });
            fs.mkdirSync(path.join(dir, "datasets"));
        });

        after(() => {
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

        /** Creates a task's container (through the wrapper) whose process lists /dev/dri, then waits. */
        function create(id: string, env: string[] = []) {
            const out = path.join(dir, "out", id);
            fs.mkdirSync(out, { recursive: true });
            const b = makeBundle(
                path.join(dir, "bundles", id),
                rootfs,
                ["sh", "-c", "ls /dev/dri > /tmp/build/1a2b3c4d/dri; sleep 300"],
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

        function saw(id: string): string[] {
            const file = path.join(dir, "out", id, "dri");
            for (let i = 0; i < 100 && !fs.existsSync(file); i++) spawnSync("sleep", ["0.1"]);
            return fs.readFileSync(file, "utf8").trim().split(/\s+/).sort();
        }

        const remove = (ids: string[]) => ids.forEach((id) => spawnSync(wrapper, ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" }));

        it("mode all: every container gets exactly the selected GPU's card and render nodes", () => {
            configure({ selection: [1] });
            start("all-a");
            try {
                assert.deepStrictEqual(saw("all-a"), ["card71", "renderD171"]);
            } finally {
                remove(["all-a"]);
            }
        });

        it("exclusive: two tasks at once each see exactly their own GPU's two nodes, never the other's", () => {
            configure({ allocation: { mode: "exclusive", waitSeconds: 5 } });
            start("ex-a", ["GPU_WORKERS_GPUS=1"]);
            start("ex-b", ["GPU_WORKERS_GPUS=1"]);
            try {
                const seen = [saw("ex-a"), saw("ex-b")].map((s) => s.join(" ")).sort();
                assert.deepStrictEqual(seen, ["card70 renderD170", "card71 renderD171"]);
                const none = create("ex-c", ["GPU_WORKERS_GPUS=1"]);
                assert.notStrictEqual(none.status, 0, "both GPUs are held");
                assert.match(none.stderr, /too few free GPU units after waiting 5s/);
            } finally {
                remove(["ex-a", "ex-b", "ex-c"]);
            }
        });
    });
});
