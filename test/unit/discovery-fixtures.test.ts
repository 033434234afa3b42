/**
 * The real discovery script runs against each fixture case (captured tool output, a fake
 * /proc, /sys, /dev, /etc), and the parser turns its JSON into the inventory asserted here.
 * Where the outputs come from: test/fixtures/discovery/<case>/source.md.
 */
import * as assert from "assert";
import { GpuInventory, inventorySchema } from "../../components/lib/gpu/inventory";
import { DiscoveryResult } from "../../components/lib/discovery/result";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { compareInventory } from "../../components/lib/discovery/verify";
import * as fs from "fs";
import * as path from "path";
import { HGX_H100_8GPU } from "../../components/lib/fabric/partition-table";
import { planPartitions } from "../../components/lib/fabric/partitions";
import { FIXTURES, fixtureNames, runFixture } from "../fixtures/discovery/run-fixture";
import { AMD_PHOENIX, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";

function discover(name: string): DiscoveryResult {
    const run = runFixture(name);
    assert.strictEqual(run.status, 0, `discover-gpus.sh failed on ${name}: ${run.stderr}`);
    assert.deepStrictEqual(run.leftovers, [], `${name}: temporary files left behind`);
    const doc = JSON.parse(run.stdout);
    // A fake tool answering 97/98 means the script ran a command the fixture has no capture for.
    for (const [tool, failure] of Object.entries(doc.errors as Record<string, { exit: number; output: string }>)) {
        assert.ok(![97, 98].includes(failure.exit), `${name}: ${tool}: ${failure.output}`);
    }
    return parseDiscoveryDocument(doc, name);
}

const H100_UUIDS = [
    "GPU-c7a0294c-c2c2-5476-438c-fb468eaa223b",
    "GPU-27196ced-a067-4406-2159-46448710fc9c",
    "GPU-0d9ce0d5-22a0-fdf7-c891-f26e86f907b6",
    "GPU-7353c83a-0617-7238-ca5a-9b9c80212c46",
    "GPU-b71a1811-5b24-ae65-9a8f-4118c7c1db31",
    "GPU-4a360bd8-44cd-43cb-9dc8-1b47ce52e162",
    "GPU-590d9f08-faf1-6a7d-70a1-b15156fd95aa",
    "GPU-5534d557-2a95-300a-81e6-7b626d87378a",
];

const HGX_DECLARED: GpuInventory = inventorySchema.parse({
    vendor: "nvidia",
    nvswitches: 4,
    driverVersion: "550.127.05",
    cudaVersion: "12.4",
    gpus: H100_UUIDS.map((uuid, index) => ({
        index,
        model: "NVIDIA H100 80GB HBM3",
        memoryMiB: 81559,
        uuid,
        pciBusId: `00000000:${(0x0d + index).toString(16).toUpperCase().padStart(2, "0")}:00.0`,
        computeCapability: "9.0",
        // From `nvidia-smi -q` (run because the host has NVSwitches): not in PCI order.
        moduleId: [2, 4, 1, 3, 6, 8, 5, 7][index],
    })),
});

describe("discovery on captured outputs (real script + parser)", () => {
    it("has a source.md for every fixture case", () => {
        const missing = fixtureNames().filter((n) => !fs.existsSync(`${FIXTURES}/${n}/source.md`));
        assert.deepStrictEqual(missing, []);
    });

    it("HGX H100: 8 GPUs from the nvidia-smi query, 4 NVSwitches from the driver, driver and CUDA versions", () => {
        const r = discover("hgx-h100-8x");
        assert.deepStrictEqual(r.inventory, HGX_DECLARED);
        assert.strictEqual(r.driverVersion, "550.127.05");
        assert.strictEqual(r.cudaVersion, "12.4");
        assert.deepStrictEqual([r.problems, r.warnings], [[], []]);
        assert.deepStrictEqual(compareInventory(HGX_DECLARED, r, { driverPin: "550.127.05" }), { errors: [], warnings: [] });
    });

    it("HGX H100 before any driver (sysfs only, no lspci): 8 GPUs and 4 NVSwitches from PCI ids, memory unknown", () => {
        const r = discover("h100-no-driver-sysfs");
        assert.strictEqual(r.inventory.gpus.length, 8);
        assert.strictEqual(r.inventory.nvswitches, 4);
        assert.deepStrictEqual(
            r.inventory.gpus.map((g) => [g.index, g.pciBusId, g.memoryMiB]),
            [0, 1, 2, 3, 4, 5, 6, 7].map((i) => [i, `0000:${(0x0d + i).toString(16).padStart(2, "0")}:00.0`, 0]),
        );
        assert.ok(r.found.nvidia!.gpus.every((g) => !g.memoryKnown && g.modelSource === "pci-id"));
        assert.deepStrictEqual(r.warnings, ["no NVIDIA driver loaded: inventory from PCI only, memory unknown"]);
        // The declaration is verified as far as PCI allows: no error, and a warning per unverifiable field.
        const v = compareInventory(HGX_DECLARED, r, { driverPin: "550.127.05" });
        assert.deepStrictEqual(v.errors, []);
        assert.ok(v.warnings.includes("gpus[0]: memory 81559 MiB not verified (unknown without a working driver)"), v.warnings.join("\n"));
        assert.ok(v.warnings.includes("driver: no NVIDIA driver loaded yet; the driver step installs 550.127.05"));
    });

    it("A100 80GB in MIG mode: MIG devices with GI/CI ids from the summary table and UUIDs from -L", () => {
        const r = discover("a100-80gb-mig");
        assert.deepStrictEqual(
            r.inventory,
            inventorySchema.parse({
                vendor: "nvidia",
                driverVersion: "535.104.05",
                cudaVersion: "12.2",
                gpus: [
                    {
                        index: 0,
                        model: "NVIDIA A100 80GB PCIe",
                        memoryMiB: 81920,
                        uuid: "GPU-4101de38-535a-4255-ac14-a63e072d7a10",
                        pciBusId: "00000000:17:00.0",
                        computeCapability: "8.0",
                        mig: [
                            { index: 0, profile: "3g.40gb", gi: 2, ci: 0, uuid: "MIG-d771d938-b556-4f9d-b742-2dd26b864023" },
                            { index: 1, profile: "2g.20gb", gi: 3, ci: 0, uuid: "MIG-08bce7f3-bac7-4715-b56f-91541f15fe37" },
                            { index: 2, profile: "1g.10gb", gi: 9, ci: 0, uuid: "MIG-761ea9d1-82ac-41cb-9e19-d3593973f144" },
                            { index: 3, profile: "1g.10gb", gi: 10, ci: 0, uuid: "MIG-a5b1e9ac-1c96-4ca0-b57c-53878e7531dc" },
                        ],
                    },
                ],
            }),
        );
        assert.deepStrictEqual([r.problems, r.warnings], [[], []]);
    });

    it("A100 MIG without the summary table: GI/CI ids paired by order from `nvidia-smi mig -lci`, and it says so", () => {
        const run = runFixture("a100-80gb-mig");
        const doc = JSON.parse(run.stdout);
        delete doc.sources["nvidia-smi"];
        const r = parseDiscoveryDocument(doc);
        assert.deepStrictEqual(
            r.inventory.gpus[0].mig.map((m) => [m.index, m.profile, m.gi, m.ci]),
            [
                [0, "3g.40gb", 2, 0],
                [1, "2g.20gb", 3, 0],
                [2, "1g.10gb", 9, 0],
                [3, "1g.10gb", 10, 0],
            ],
        );
        assert.deepStrictEqual(r.warnings, [
            "GPU 0: MIG GPU/compute instance ids paired with MIG devices by order (the nvidia-smi summary had no MIG devices table)",
        ]);
    });

    it("RTX A500 Laptop GPU (4 GiB): matches the project's declared inventory exactly", () => {
        const r = discover("rtx-a500-laptop");
        const declared = inventorySchema.parse(RTX_A500_LAPTOP);
        assert.deepStrictEqual(r.inventory, declared);
        assert.strictEqual(r.driverVersion, "535.288.01");
        assert.deepStrictEqual(compareInventory(declared, r, { driverPin: "preinstalled" }), { errors: [], warnings: [] });
    });

    it("Jetson AGX Orin (JetPack 5, no nvidia-smi): one integrated GPU, tegra, L4T release; NVIDIA PCI bridges are not GPUs", () => {
        const r = discover("jetson-agx-orin");
        assert.deepStrictEqual(
            r.inventory,
            inventorySchema.parse({
                vendor: "nvidia",
                tegra: true,
                gpus: [{ index: 0, model: "NVIDIA Jetson AGX Orin Developer Kit", memoryMiB: 29820, integrated: true }],
            }),
        );
        assert.strictEqual(r.l4t, "35.4.1");
        assert.deepStrictEqual(r.problems, []);
    });

    it("AMD Instinct MI210: gfx90a from gfx_target_version 90010, 64 GiB from the memory bank, render node, name from lspci", () => {
        const r = discover("amd-mi210");
        assert.deepStrictEqual(
            r.inventory,
            inventorySchema.parse({
                vendor: "amd",
                gpus: [{ index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, pciBusId: "0000:03:00.0", gfxTarget: "gfx90a", renderNode: "renderD128" }],
            }),
        );
        assert.deepStrictEqual([r.problems, r.warnings], [[], []]);
    });

    it("AMD Phoenix iGPU: gfx1103 from 110003, integrated, 512 MiB carve-out; the declared 780M verifies (model noted as unverifiable)", () => {
        const r = discover("amd-phoenix-780m");
        assert.deepStrictEqual(r.inventory.gpus, [
            {
                index: 0,
                model: "AMD Phoenix1",
                memoryMiB: 512,
                pciBusId: "0000:c2:00.0",
                integrated: true,
                gfxTarget: "gfx1103",
                renderNode: "renderD128",
                mig: [],
            },
        ]);
        const v = compareInventory(inventorySchema.parse(AMD_PHOENIX), r);
        assert.deepStrictEqual(v, { errors: [], warnings: ['gpus[0]: model "AMD Radeon 780M" not verified: lspci names it "AMD Phoenix1"'] });
    });

    it("no GPU at all: vendor none, nothing wrong", () => {
        const r = discover("no-gpu");
        assert.deepStrictEqual(r.inventory, { vendor: "none", gpus: [], nvswitches: 0, tegra: false });
        assert.deepStrictEqual([r.vendors, r.problems, r.warnings], [[], [], []]);
        assert.deepStrictEqual(compareInventory({ vendor: "none", gpus: [], nvswitches: 0, tegra: false }, r), { errors: [], warnings: [] });
    });

    it("driver loaded but no device (nvidia-smi exit 6 while lspci lists an RTX 5090): a problem naming the GPU", () => {
        const r = discover("driver-no-device");
        assert.deepStrictEqual(r.failedTools, ["nvidia-smi-query (exit 6)", "nvidia-smi-L (exit 6)", "nvidia-smi (exit 6)"]);
        assert.deepStrictEqual(r.problems, [
            'the NVIDIA driver is loaded but finds no GPU (nvidia-smi: "No devices were found", exit 6), while PCI lists 1: 0000:01:00.0 (GB202 [GeForce RTX 5090]); the kernel log (dmesg | grep NVRM) says why the driver did not take it',
        ]);
        const declared = inventorySchema.parse({ vendor: "nvidia", gpus: [{ index: 0, model: "NVIDIA GeForce RTX 5090", memoryMiB: 32607 }] });
        const v = compareInventory(declared, r, { warnOnly: { memory: true, model: true } });
        assert.deepStrictEqual(v.errors, r.problems);
    });

    it("a GPU that fell off the bus: the lost one is named by its PCI address, the others come from lspci", () => {
        const r = discover("gpu-fallen-off-bus");
        assert.deepStrictEqual(
            r.inventory.gpus.map((g) => [g.index, g.pciBusId, g.model]),
            [
                [0, "0000:04:00.0", "NVIDIA GeForce RTX 2080 Ti Rev. A"],
                [1, "0000:0b:00.0", "NVIDIA GeForce RTX 2080 Ti Rev. A"],
                [2, "0000:83:00.0", "NVIDIA GeForce RTX 2080 Ti Rev. A"],
                [3, "0000:8a:00.0", "NVIDIA GeForce RTX 2080 Ti Rev. A"],
            ],
        );
        assert.deepStrictEqual(r.problems, [
            'GPU 1 at 0000:0b:00.0 is lost to the driver (fell off the bus?): nvidia-smi says "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error"; reseat or power-cycle it, or remove it from the inventory',
        ]);
    });

    it("mixed vendors: NVIDIA first in the inventory, the AMD iGPU reported beside it", () => {
        const r = discover("mixed-vendors");
        assert.deepStrictEqual(r.vendors, ["nvidia", "amd"]);
        assert.strictEqual(r.inventory.vendor, "nvidia");
        assert.deepStrictEqual(
            r.inventory.gpus.map((g) => g.model),
            ["NVIDIA GeForce RTX 4060 Laptop GPU"],
        );
        assert.deepStrictEqual(
            r.found.amd!.gpus.map((g) => [g.model, g.gfxTarget]),
            [["AMD Phoenix1", "gfx1103"]],
        );
        const nvidiaWorker = compareInventory(r.inventory, r);
        assert.deepStrictEqual(nvidiaWorker.errors, []);
        assert.ok(
            nvidiaWorker.warnings.includes("vendor: this host also has 1 AMD GPU (0: AMD Phoenix1), which this worker does not use"),
            nvidiaWorker.warnings.join("\n"),
        );
        const amdWorker = compareInventory(inventorySchema.parse(AMD_PHOENIX), r);
        assert.deepStrictEqual(amdWorker.errors, []);
    });

    it("one H100 in a VM, captured on a real machine: the fixture gives what the script gave there, and the board planner says plainly there is no NVSwitch", () => {
        const r = discover("h100-vm-1x");
        assert.deepStrictEqual(
            r.inventory,
            inventorySchema.parse({
                vendor: "nvidia",
                nvswitches: 0,
                driverVersion: "580.159.04",
                cudaVersion: "13.0",
                gpus: [
                    {
                        index: 0,
                        model: "NVIDIA H100 80GB HBM3",
                        memoryMiB: 81559,
                        uuid: "GPU-deb69b9f-716f-67d5-8533-708877fae1c4",
                        pciBusId: "00000000:00:06.0",
                        computeCapability: "9.0",
                    },
                ],
            }),
        );
        assert.deepStrictEqual([r.problems, r.warnings], [[], []]);
        const captured = JSON.parse(fs.readFileSync(path.join(FIXTURES, "h100-vm-1x", "captured-discovery.json"), "utf8"));
        assert.deepStrictEqual(parseDiscoveryDocument(captured, "h100-vm-1x (captured)").inventory, r.inventory);
        assert.throws(
            () => planPartitions(HGX_H100_8GPU, r.inventory, [{ worker: "w1", gpus: 1 }]),
            /the board declares no NVSwitch \(nvswitches: 0\): it has no NVLink fabric to partition/,
        );
    });

    it("every fixture's inventory is valid for the stack schema", () => {
        for (const name of fixtureNames()) {
            const r = discover(name);
            const check = inventorySchema.safeParse(r.inventory);
            assert.ok(check.success, `${name}: ${JSON.stringify(check.error?.issues)}`);
        }
    });
});
