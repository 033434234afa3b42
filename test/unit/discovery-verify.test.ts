/** compareInventory / formatVerification on discovery results from the fixtures. */
import * as assert from "assert";
import { GpuInventory, inventorySchema } from "../../components/lib/gpu/inventory";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { DiscoveryResult } from "../../components/lib/discovery/result";
import {
    compareInventory,
    compareVersions,
    formatVerification,
    VERIFY_FIELDS,
    verifyOptionsSchema,
    warnOnlyFieldsSchema,
} from "../../components/lib/discovery/verify";
import { runFixture } from "../fixtures/discovery/run-fixture";

function fixture(name: string): DiscoveryResult {
    const run = runFixture(name);
    assert.strictEqual(run.status, 0, run.stderr);
    return parseDiscoveryDocument(run.stdout, name);
}

describe("inventory verification", () => {
    let hgx: DiscoveryResult;
    let declared: GpuInventory;
    before(() => {
        hgx = fixture("hgx-h100-8x");
        declared = inventorySchema.parse(JSON.parse(JSON.stringify(hgx.inventory)));
    });
    const clone = (inv: GpuInventory): GpuInventory => JSON.parse(JSON.stringify(inv));

    it("reports every difference, one readable line each, in one message per host", () => {
        const wrong = clone(declared);
        wrong.gpus[1].model = "NVIDIA A100-SXM4-80GB";
        wrong.gpus[1].memoryMiB = 40960;
        wrong.gpus[2].uuid = "GPU-00000000-0000-0000-0000-000000000000";
        wrong.gpus[3].mig = [{ index: 0, profile: "3g.40gb", gi: 2, ci: 0 }];
        wrong.gpus.push({ index: 8, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, integrated: false, mig: [] });
        wrong.nvswitches = 2;
        const result = compareInventory(wrong, hgx, { driverPin: "560.35.03" });
        assert.strictEqual(
            formatVerification("gpu-a", result),
            [
                "host gpu-a: declared inventory does not match the hardware:",
                '  - gpus[1]: declared model "NVIDIA A100-SXM4-80GB", found "NVIDIA H100 80GB HBM3"',
                "  - gpus[1]: declared memory 40960 MiB, found 81559 MiB",
                "  - gpus[2]: declared UUID GPU-00000000-0000-0000-0000-000000000000, found GPU-0d9ce0d5-22a0-fdf7-c891-f26e86f907b6",
                "  - gpus[3].mig: MIG device 0 3g.40gb (GI 2, CI 0) declared, not found (no MIG devices)",
                "  - gpus[8]: GPU 8 (NVIDIA H100 80GB HBM3, 81559 MiB) declared, not found (found 8: 0, 1, 2, 3, 4, 5, 6, 7)",
                "  - nvswitches: declared 2, found 4 (fabricmanager must run on this host)",
                "  - driver: the loaded NVIDIA driver 550.127.05 is below the pinned 560.35.03; install 560.35.03 (and reboot), or list driver under warnOnly to let the driver step upgrade it",
            ].join("\n"),
        );
    });

    it("accepts memory within 1% (80 GB declared as 81920 MiB, the driver says 81559) with a note", () => {
        const inv = clone(declared);
        inv.gpus[0].memoryMiB = 81920;
        assert.deepStrictEqual(compareInventory(inv, hgx), {
            errors: [],
            warnings: ["gpus[0]: declared 81920 MiB, the driver reports 81559 MiB (within 1%: accepted; declare 81559 to silence this)"],
        });
    });

    it("turns the differences of chosen fields into warnings, and says so", () => {
        const inv = clone(declared);
        inv.gpus[0].model = "NVIDIA H100 PCIe";
        inv.gpus[0].pciBusId = "0000:99:00.0";
        const result = compareInventory(inv, hgx, { warnOnly: { model: true } });
        assert.deepStrictEqual(result.errors, ["gpus[0]: declared PCI address 0000:99:00.0, found 00000000:0D:00.0"]);
        assert.deepStrictEqual(result.warnings, ['gpus[0]: declared model "NVIDIA H100 PCIe", found "NVIDIA H100 80GB HBM3" (model: warning only)']);
        assert.match(
            formatVerification("gpu-a", { errors: [], warnings: result.warnings }),
            /^host gpu-a: declared inventory matches the hardware, with warnings:\n {2}- gpus\[0\]: declared model/,
        );
        assert.strictEqual(formatVerification("gpu-a", { errors: [], warnings: [] }), "host gpu-a: declared inventory matches the hardware");
    });

    it("rejects an unknown warnOnly field, naming the valid ones; exports its zod schemas", () => {
        assert.throws(
            () => compareInventory(declared, hgx, { warnOnly: { colour: true } as never }),
            /invalid verification options: warnOnly: Unrecognized key: "colour" \(fields: vendor, count, model, memory, uuid, pci, module, integrated, gfx, render, card, kernel-driver, pci-device, mig, nvswitches, tegra, driver, compute, cuda\)/,
        );
        assert.deepStrictEqual(verifyOptionsSchema.parse({ driverPin: "preinstalled" }), { driverPin: "preinstalled", warnOnly: {} });
        assert.deepStrictEqual(warnOnlyFieldsSchema.parse(["memory", "uuid"]), ["memory", "uuid"]);
        assert.ok(!warnOnlyFieldsSchema.safeParse(["size"]).success);
        assert.strictEqual(VERIFY_FIELDS.length, 19);
    });

    it("checks module ids (fabric partitions pick GPUs by them); one not reported is only a warning", () => {
        const swapped = clone(declared);
        swapped.gpus[0].moduleId = 4;
        swapped.gpus[1].moduleId = 2;
        assert.deepStrictEqual(compareInventory(swapped, hgx).errors, ["gpus[0]: declared module id 4, found 2", "gpus[1]: declared module id 2, found 4"]);
        assert.deepStrictEqual(compareInventory(swapped, hgx, { warnOnly: { module: true } }).errors, []);
        const noDriver = fixture("h100-no-driver-sysfs");
        assert.ok(compareInventory(declared, noDriver).warnings.includes("gpus[0]: module id 2 not verified (nvidia-smi -q reported none)"));
    });

    it("checks the driver against the pin: preinstalled needs a driver, a pin is a floor, 550 matches 550.x", () => {
        assert.deepStrictEqual(compareInventory(declared, hgx, { driverPin: "550" }), { errors: [], warnings: [] });
        assert.deepStrictEqual(compareInventory(declared, hgx, { driverPin: "550.54.15" }), {
            errors: [],
            warnings: ["driver: the loaded NVIDIA driver 550.127.05 is newer than the pinned 550.54.15"],
        });
        const noDriver = fixture("h100-no-driver-sysfs");
        assert.ok(
            compareInventory(declared, noDriver, { driverPin: "preinstalled" }).errors.includes(
                "driver: pinned as preinstalled, but no NVIDIA driver is loaded; install one or pin a version for the driver step to install",
            ),
        );
        assert.deepStrictEqual(
            [compareVersions("550.127.05", "550.54.15"), compareVersions("535.104.05", "550"), compareVersions("550.54.15", "550.54.15")],
            [1, -1, 0],
        );
    });

    it("says when the declared vendor is not there, and what is", () => {
        const amd = inventorySchema.parse({ vendor: "amd", gpus: [{ index: 0, model: "AMD Instinct MI210", memoryMiB: 65520, gfxTarget: "gfx90a" }] });
        const { errors } = compareInventory(amd, hgx);
        assert.deepStrictEqual(errors, [
            `vendor: declared amd with 1 GPU, but discovery found no AMD GPU; it found 8 NVIDIA GPUs (${[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `${i}: NVIDIA H100 80GB HBM3`).join(", ")})`,
        ]);
        const none = compareInventory({ vendor: "none", gpus: [], nvswitches: 0, tegra: false }, fixture("amd-mi210"));
        assert.deepStrictEqual(none.errors, ["vendor: declared none (no GPU), found 1 AMD GPU (0: AMD Instinct MI210)"]);
    });

    it("AMD: wrong gfx target and a render node that differs from the default renderD<128+index>", () => {
        const doc = {
            schema: "gpu-workers/discovery/v1",
            sources: {
                "kfd-nodes": [
                    { node: "0", properties: "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n" },
                    {
                        node: "1",
                        properties: "simd_count 416\nvendor_id 4098\ngfx_target_version 90010\nlocation_id 768\ndrm_render_minor 136\n",
                        "mem-banks": ["size_in_bytes 68702699520\n"],
                    },
                ],
                "dev-kfd": true,
                "render-nodes": ["renderD136"],
            },
            errors: {},
        };
        const found = parseDiscoveryDocument(doc);
        const inv = inventorySchema.parse({ vendor: "amd", gpus: [{ index: 0, model: "AMD GPU gfx90a", memoryMiB: 65520, gfxTarget: "gfx942" }] });
        assert.deepStrictEqual(compareInventory(inv, found).errors, [
            "gpus[0]: declared gfx target gfx942, found gfx90a",
            "gpus[0]: no render node declared (default renderD128), but the GPU's is renderD136: the worker would get the wrong /dev/dri node",
        ]);
        inv.gpus[0].gfxTarget = "gfx90a";
        inv.gpus[0].renderNode = "renderD136";
        assert.deepStrictEqual(compareInventory(inv, found), { errors: [], warnings: [] });
    });

    it("Jetson: tegra declared false is a difference; MIG layouts are compared device by device", () => {
        const jetson = fixture("jetson-agx-orin");
        const inv = clone(jetson.inventory);
        inv.tegra = false;
        assert.deepStrictEqual(compareInventory(inv, jetson).errors, [
            "tegra: declared false, found true (/etc/nv_tegra_release: a Jetson needs CDI in csv mode)",
        ]);
        const mig = fixture("a100-80gb-mig");
        const a100 = clone(mig.inventory);
        a100.gpus[0].mig[1] = { index: 1, profile: "3g.40gb", gi: 1, ci: 0 };
        a100.gpus[0].mig.pop();
        assert.deepStrictEqual(compareInventory(a100, mig).errors, [
            "gpus[0].mig: MIG device 1 declared 3g.40gb (GI 1, CI 0), found 2g.20gb (GI 3, CI 0)",
            "gpus[0].mig: MIG device 3 1g.10gb (GI 10, CI 0) found but not declared",
        ]);
    });
});
