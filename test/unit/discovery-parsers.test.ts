/** Each source parser on published output snippets (quoted verbatim unless said otherwise). */
import * as assert from "assert";
import { parseAmdSmiStatic, parseRocmSmi } from "../../components/lib/discovery/amd-smi";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { gfxTargetFromVersion, parseKfdNodes } from "../../components/lib/discovery/kfd";
import { isGpuFunction, isNvSwitch, parseLspci, pciModelName } from "../../components/lib/discovery/lspci";
import { parseComputeInstances, parseGpuInstances } from "../../components/lib/discovery/nvidia-mig";
import { parseNvidiaSmiList } from "../../components/lib/discovery/nvidia-smi-list";
import { parseNvidiaSmiModuleIds } from "../../components/lib/discovery/nvidia-smi-q";
import { parseNvidiaSmiQuery } from "../../components/lib/discovery/nvidia-smi-query";
import { parseNvidiaProcVersion, parseNvidiaSmiSummary } from "../../components/lib/discovery/nvidia-smi-summary";
import { busIdFromKfdLocation, normalizeBusId } from "../../components/lib/discovery/pci";
import { parseTegraRelease } from "../../components/lib/discovery/tegra";
import { migInstanceSchema } from "../../components/lib/gpu/inventory";

describe("discovery parsers", () => {
    describe("nvidia-smi -q module ids", () => {
        it("reads each GPU's Module ID by its bus id; N/A and 0 give none; a nested attribute of that name is not the GPU's", () => {
            // Attribute lines in the published R550/R570 layout (colon at column 42); the values are made up.
            const text = [
                "Attached GPUs                             : 3",
                "GPU 00000000:18:00.0",
                "    Product Name                          : NVIDIA H100 80GB HBM3",
                "    Module ID                             : 1",
                "GPU 00000000:2A:00.0",
                "    Module ID                             : N/A",
                "    Platform Info",
                "        Module ID                         : 7",
                "GPU 00000000:3A:00.0",
                "    Module ID                             : 0",
                "",
            ].join("\n");
            assert.deepStrictEqual([...parseNvidiaSmiModuleIds(text)], [["0000:18:00.0", 1]]);
        });
    });

    describe("nvidia-smi summary header", () => {
        it("reads driver and CUDA versions from the R535/R550 header", () => {
            const s = parseNvidiaSmiSummary("| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n");
            assert.deepStrictEqual(s, { driverVersion: "550.54.15", cudaVersion: "12.4", migDevices: [] });
        });
        it("reads the newer KMD / CUDA UMD header", () => {
            const s = parseNvidiaSmiSummary("| NVIDIA-SMI 610.57.04              KMD Version: 610.57.04     CUDA UMD Version: 13.3     |\n");
            assert.deepStrictEqual([s.driverVersion, s.cudaVersion], ["610.57.04", "13.3"]);
        });
        it("Jetson JetPack 6 (anduril/jetpack-nixos#371) and CUDA N/A (R510 in MIG mode) and Driver N/A (OE4T linux-tegra)", () => {
            assert.deepStrictEqual(parseNvidiaSmiSummary("| NVIDIA-SMI 540.4.0                Driver Version: 540.4.0      CUDA Version: N/A      |"), {
                driverVersion: "540.4.0",
                cudaVersion: undefined,
                migDevices: [],
            });
            assert.deepStrictEqual(parseNvidiaSmiSummary("| NVIDIA-SMI 510.47.03    Driver Version: 510.47.03    CUDA Version: N/A      |"), {
                driverVersion: "510.47.03",
                cudaVersion: undefined,
                migDevices: [],
            });
            assert.deepStrictEqual(parseNvidiaSmiSummary("| NVIDIA-SMI 540.3.0                Driver Version: N/A          CUDA Version: 12.2     |"), {
                driverVersion: undefined,
                cudaVersion: "12.2",
                migDevices: [],
            });
        });
        it("reads the MIG devices table (R510 layout, published)", () => {
            const text = [
                "+-----------------------------------------------------------------------------+",
                "| MIG devices:                                                                |",
                "+------------------+----------------------+-----------+-----------------------+",
                "| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |",
                "|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|",
                "|                  |                      |        ECC|                       |",
                "|==================+======================+===========+=======================|",
                "|  0   11   0   0  |      0MiB /  4864MiB | 14      0 |  1   0    0    0    0 |",
                "|                  |      0MiB /  8191MiB |           |                       |",
                "+------------------+----------------------+-----------+-----------------------+",
                "",
                "+-----------------------------------------------------------------------------+",
                "| Processes:                                                                  |",
                "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |",
                "|=============================================================================|",
                "|    0   11    0      12345      C   python                          500MiB |",
            ].join("\n");
            assert.deepStrictEqual(parseNvidiaSmiSummary(text).migDevices, [{ gpu: 0, gi: 11, ci: 0, device: 0 }]);
        });
        it("reads /proc/driver/nvidia/version of the proprietary and the open module", () => {
            assert.strictEqual(
                parseNvidiaProcVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"),
                "535.104.05",
            );
            assert.strictEqual(
                parseNvidiaProcVersion(
                    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025",
                ),
                "570.158.01",
            );
        });
    });

    describe("nvidia-smi -L", () => {
        it("reads GPUs and MIG devices, names with parentheses included", () => {
            const r = parseNvidiaSmiList(
                "GPU 0: Orin (nvgpu) (UUID: [removed])\nGPU 1: NVIDIA A100-PCIE-40GB (UUID: GPU-14ac2834-0d81-0508-69eb-e25264c08d21)\n  MIG 1g.5gb      Device  0: (UUID: MIG-b6cd45f2-9655-5269-9b96-65446729d5dc)\n",
            );
            assert.deepStrictEqual(r.gpus, [
                { index: 0, name: "Orin (nvgpu)", uuid: "[removed]", mig: [] },
                {
                    index: 1,
                    name: "NVIDIA A100-PCIE-40GB",
                    uuid: "GPU-14ac2834-0d81-0508-69eb-e25264c08d21",
                    mig: [{ index: 0, profile: "1g.5gb", uuid: "MIG-b6cd45f2-9655-5269-9b96-65446729d5dc" }],
                },
            ]);
        });
    });

    describe("nvidia-smi mig -lgi / -lci (published)", () => {
        it("reads GPU and compute instances, compute-instance splits included", () => {
            const lgi =
                "|   0  MIG 1g.5gb          19       11          0:1     |\n+-------------------------------------------------------+\n|   0  MIG 3g.20gb          9        1          4:4     |\n";
            assert.deepStrictEqual(parseGpuInstances(lgi), [
                { gpu: 0, profile: "1g.5gb", profileId: 19, gi: 11 },
                { gpu: 0, profile: "3g.20gb", profileId: 9, gi: 1 },
            ]);
            const lci =
                "|   0     11       MIG 1g.5gb           0         0          0:1     |\n|   0      6       MIG 1c.2g.10gb       0         0          0:1     |\n";
            assert.deepStrictEqual(parseComputeInstances(lci), [
                { gpu: 0, gi: 11, profile: "1g.5gb", profileId: 0, ci: 0 },
                { gpu: 0, gi: 6, profile: "1c.2g.10gb", profileId: 0, ci: 0 },
            ]);
        });
    });

    describe("nvidia-smi query CSV", () => {
        it("takes a comma in a name, [N/A] memory, and keeps non-row lines as messages", () => {
            const r = parseNvidiaSmiQuery(
                "0, GPU-1, Some, Name, [N/A], 00000000:01:00.0, 540.4.0, [N/A]\nUnable to determine the device handle for GPU0000:07:00.0: Unknown Error\n1, GPU-2, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0, 535.129.03, Disabled\n",
            );
            assert.deepStrictEqual(r.rows, [
                {
                    index: 0,
                    uuid: "GPU-1",
                    name: "Some, Name",
                    memoryMiB: undefined,
                    pciBusId: "00000000:01:00.0",
                    driverVersion: "540.4.0",
                    migEnabled: undefined,
                },
                {
                    index: 1,
                    uuid: "GPU-2",
                    name: "NVIDIA H100 80GB HBM3",
                    memoryMiB: 81559,
                    pciBusId: "00000000:1B:00.0",
                    driverVersion: "535.129.03",
                    migEnabled: false,
                },
            ]);
            assert.deepStrictEqual(r.messages, ["Unable to determine the device handle for GPU0000:07:00.0: Unknown Error"]);
        });
    });

    describe("lspci -nn", () => {
        const text = [
            "00:07.0 Bridge [0680]: nVidia Corporation MCP61 Ethernet [10de:03ef] (rev a2)",
            "0005:00:00.0 Bridge [0680]: NVIDIA Corporation Device [10de:1af1] (rev a1)",
            "0000:09:00.0 Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3] (rev a1)",
            "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XTX] [1002:744c] (rev cc)",
            "0000:1b:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)",
            "00:02.0 VGA compatible controller [0300]: Intel Corporation DG1 [Iris Xe Graphics] [8086:4908] (rev 01)",
        ].join("\n");
        const fns = parseLspci(text);
        it("tells NVSwitches from other NVIDIA bridges (an nForce Ethernet is class 0680 too)", () => {
            assert.deepStrictEqual(
                fns.filter(isNvSwitch).map((f) => f.busId),
                ["0005:00:00.0", "0000:09:00.0"],
            );
        });
        it("finds GPUs by vendor and display class, with or without the domain, and names them", () => {
            assert.deepStrictEqual(
                fns.filter((f) => isGpuFunction(f, "nvidia")).map((f) => [f.busId, pciModelName(f, "nvidia")]),
                [["0000:1b:00.0", "NVIDIA H100 SXM5 80GB"]],
            );
            assert.deepStrictEqual(
                fns.filter((f) => isGpuFunction(f, "amd")).map((f) => [f.busId, pciModelName(f, "amd")]),
                [["0000:03:00.0", "AMD Radeon RX 7900 XTX"]],
            );
        });
    });

    describe("KFD topology", () => {
        it("turns gfx_target_version into the gfx target (minor and stepping are hex digits)", () => {
            assert.deepStrictEqual([90010, 110003, 90402, 110501, 120001, 100300, 90012, 0].map(gfxTargetFromVersion), [
                "gfx90a",
                "gfx1103",
                "gfx942",
                "gfx1151",
                "gfx1201",
                "gfx1030",
                "gfx90c",
                undefined,
            ]);
        });
        it("decodes location_id to a PCI address, and 0 to unknown", () => {
            assert.deepStrictEqual(
                [busIdFromKfdLocation(0, 0x050b), busIdFromKfdLocation(1, 0x7500), busIdFromKfdLocation(0, 0)],
                ["0000:05:01.3", "0001:75:00.0", undefined],
            );
        });
        it("reads a published RX 7900 XTX node, skips the CPU node and non-AMD agents", () => {
            const rx7900 =
                "cpu_cores_count 0\nsimd_count 192\nmem_banks_count 1\ncaches_count 206\nio_links_count 1\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 2147487744\nmax_waves_per_simd 16\nlds_size_in_kb 64\ngds_size_in_kb 0\nnum_gws 64\nwave_front_size 32\narray_count 12\nsimd_arrays_per_engine 2\ncu_per_simd_array 8\nsimd_per_cu 2\nmax_slots_scratch_cu 32\ngfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\nlocation_id 768\ndomain 0\ndrm_render_minor 128\nhive_id 0\nnum_sdma_engines 2\nnum_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 6\nnum_cp_queues 8\nmax_engine_clk_fcompute 2482\nlocal_mem_size 0\nfw_version 2150\ncapability 671588992\ndebug_prop 1495\nsdma_fw_version 21\nunique_id 11420932837461522459\nnum_xcc 1\nmax_engine_clk_ccompute 5083\n";
            const nodes = parseKfdNodes([
                { node: "0", properties: "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n", "mem-banks": [] },
                { node: "1", properties: rx7900, "mem-banks": ["heap_type 1\nsize_in_bytes 25753026560\nflags 0\nwidth 384\nmem_clk_max 1249\n"] },
                { node: "2", properties: "simd_count 132\nvendor_id 4318\ngfx_target_version 0\n", "mem-banks": [] },
            ]);
            assert.deepStrictEqual(nodes, [
                {
                    node: 1,
                    gfxTarget: "gfx1100",
                    renderNode: "renderD128",
                    busId: "0000:03:00.0",
                    deviceId: "744c",
                    memoryMiB: 24560,
                    simdCount: 192,
                    name: undefined,
                },
            ]);
        });
    });

    describe("PCI addresses", () => {
        it("normalizes nvidia-smi's and lspci's forms", () => {
            assert.deepStrictEqual(["00000000:0D:00.0", "0d:00.0", "0001:65:00.0", "bogus"].map(normalizeBusId), [
                "0000:0d:00.0",
                "0000:0d:00.0",
                "0001:65:00.0",
                undefined,
            ]);
        });
    });

    describe("Tegra release", () => {
        it("reads the L4T release of R35 and R36 banners", () => {
            assert.deepStrictEqual(
                parseTegraRelease("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"),
                { l4t: "36.4.3", board: "generic" },
            );
            assert.strictEqual(parseTegraRelease("not a release"), undefined);
        });
    });

    describe("AMD tools (reconstructed layouts)", () => {
        it("takes market names and PCI addresses from amd-smi static and rocm-smi", () => {
            assert.deepStrictEqual(parseAmdSmiStatic("GPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI210\n    BUS:\n        BDF: 0000:03:00.0\n"), [
                { busId: "0000:03:00.0", name: "AMD Instinct MI210" },
            ]);
            assert.deepStrictEqual(parseAmdSmiStatic("GPU: 0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI210\n"), [
                { busId: undefined, name: "AMD Instinct MI210" },
            ]);
            assert.deepStrictEqual(parseAmdSmiStatic("GPU: 0\n    BUS:\n        BDF: 0000:03:00.0\n    ASIC:\n        MARKET_NAME: AMD Instinct MI210\n"), [
                { busId: "0000:03:00.0", name: "AMD Instinct MI210" },
            ]);
            assert.deepStrictEqual(parseRocmSmi("GPU[0]\t\t: Card Series: \t\tAMD Instinct MI210\nGPU[0]\t\t: PCI Bus: 0000:03:00.0\n"), [
                { name: "AMD Instinct MI210", busId: "0000:03:00.0" },
            ]);
        });
    });

    describe("AMD: amd-smi static in its real layout (ASIC with MARKET_NAME before BUS with BDF)", () => {
        const gpuBlock = (n: number, name: string, device: string, bdf: string) =>
            [
                `GPU: ${n}`,
                "    ASIC:",
                `        MARKET_NAME: ${name}`,
                "        VENDOR_ID: 0x1002",
                "        VENDOR_NAME: Advanced Micro Devices Inc. [AMD/ATI]",
                `        DEVICE_ID: 0x${device}`,
                "        OAM_ID: N/A",
                "    BUS:",
                `        BDF: ${bdf}`,
                "        MAX_PCIE_WIDTH: 16",
                "        SLOT_TYPE: PCIE",
                "    VRAM:",
                "        TYPE: HBM",
                "        SIZE: 65520 MB",
                "",
            ].join("\n");
        const kfdNode = (node: string, gfxVersion: number, location: number, minor: number) => ({
            node,
            properties: `simd_count 416\nvendor_id 4098\ngfx_target_version ${gfxVersion}\nlocation_id ${location}\ndomain 0\ndrm_render_minor ${minor}\n`,
            "mem-banks": ["size_in_bytes 68702699520\n"],
        });

        it("gives each GPU's name its own bus id", () => {
            const text = gpuBlock(0, "AMD Instinct MI210", "740f", "0000:03:00.0") + "\n" + gpuBlock(1, "AMD Instinct MI100", "738c", "0000:83:00.0");
            assert.deepStrictEqual(parseAmdSmiStatic(text), [
                { busId: "0000:03:00.0", name: "AMD Instinct MI210" },
                { busId: "0000:83:00.0", name: "AMD Instinct MI100" },
            ]);
        });

        it("assemble-amd names KFD GPUs by PCI address when lspci and amd-smi list more GPUs than the KFD", () => {
            // Three AMD GPUs on the bus and in amd-smi; the KFD has two (not the WX 3200, which ROCm does not support).
            const r = parseDiscoveryDocument({
                schema: "gpu-workers/discovery/v1",
                errors: {},
                sources: {
                    lspci: [
                        "0000:03:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Aldebaran/MI200 [Instinct MI210] [1002:740f] (rev 02)",
                        "0000:43:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Lexa XT [Radeon PRO WX 3200] [1002:6981]",
                        "0000:83:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Arcturus GL-XL [Instinct MI100] [1002:738c] (rev 01)",
                        "",
                    ].join("\n"),
                    "kfd-nodes": [
                        { node: "0", properties: "simd_count 0\n", "mem-banks": [] },
                        kfdNode("1", 90010, 0x300, 128),
                        kfdNode("2", 90008, 0x8300, 136),
                    ],
                    "dev-kfd": true,
                    "render-nodes": ["renderD128", "renderD136"],
                    "amd-smi":
                        gpuBlock(0, "AMD Instinct MI210", "740f", "0000:03:00.0") +
                        gpuBlock(1, "AMD Radeon Pro WX 3200", "6981", "0000:43:00.0") +
                        gpuBlock(2, "AMD Instinct MI100", "738c", "0000:83:00.0"),
                },
            });
            assert.deepStrictEqual(
                r.found.amd!.gpus.map((g) => [g.index, g.pciBusId, g.model, g.modelSource]),
                [
                    [0, "0000:03:00.0", "AMD Instinct MI210", "amd-smi"],
                    [1, "0000:83:00.0", "AMD Instinct MI100", "amd-smi"],
                ],
            );
            assert.ok(
                r.warnings.some((w) => w.startsWith("PCI lists AMD GPU 0000:43:00.0")),
                r.warnings.join("\n"),
            );
        });
    });

    describe("nvidia-smi failures", () => {
        const doc = (errors: Record<string, { exit: number; output: string }>, sources: Record<string, unknown> = {}) => ({
            schema: "gpu-workers/discovery/v1",
            sources,
            errors,
        });
        it("a driver/library mismatch (exit 18) is a state the driver step fixes: a warning, GPUs from PCI", () => {
            const r = parseDiscoveryDocument(
                doc(
                    { "nvidia-smi-query": { exit: 18, output: "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.161\n" } },
                    { lspci: "0000:01:00.0 3D controller [0302]: NVIDIA Corporation GA107GLM [RTX A500 Laptop GPU] [10de:25bb] (rev a1)\n" },
                ),
            );
            assert.deepStrictEqual(r.problems, []);
            assert.match(
                r.warnings[0],
                /^the NVIDIA driver is not usable yet \(nvidia-smi: "Failed to initialize NVML: Driver\/library version mismatch", exit 18\)/,
            );
            assert.deepStrictEqual(
                r.inventory.gpus.map((g) => [g.model, g.memoryMiB]),
                [["NVIDIA RTX A500 Laptop GPU", 0]],
            );
        });
        it("the lost-GPU message in the newer form with an index names the GPU's address", () => {
            const r = parseDiscoveryDocument(
                doc(
                    { "nvidia-smi-query": { exit: 15, output: "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n" } },
                    { lspci: "0000:34:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 PCIe 80GB] [10de:20b5] (rev a1)\n" },
                ),
            );
            assert.deepStrictEqual(r.problems, [
                'GPU 0 at 0000:34:00.0 is lost to the driver (fell off the bus?): nvidia-smi says "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error"; reseat or power-cycle it, or remove it from the inventory',
            ]);
        });
        it("Jetson JetPack 6: a failing query with a working -L is a warning, GPUs come from -L (-L and header as published; the query failure text is assumed)", () => {
            const r = parseDiscoveryDocument(
                doc(
                    { "nvidia-smi-query": { exit: 3, output: 'Field "mig.mode.current" is not supported on this device\n' } },
                    {
                        "nvidia-smi-L": "GPU 0: Orin (nvgpu) (UUID: [removed])\n",
                        "nvidia-smi": "| NVIDIA-SMI 540.4.0                Driver Version: 540.4.0      CUDA Version: 12.6     |\n",
                        tegra: "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n",
                        meminfo: "MemTotal:       64335840 kB",
                    },
                ),
            );
            assert.deepStrictEqual(r.problems, []);
            assert.deepStrictEqual(r.inventory, {
                vendor: "nvidia",
                nvswitches: 0,
                tegra: true,
                driverVersion: "540.4.0",
                cudaVersion: "12.6",
                gpus: [{ index: 0, model: "Orin (nvgpu)", memoryMiB: 62827, integrated: true, mig: [] }],
            });
            assert.deepStrictEqual([r.driverVersion, r.cudaVersion, r.l4t], ["540.4.0", "12.6", "36.4.3"]);
            assert.match(
                r.warnings[0],
                /^nvidia-smi --query-gpu failed \(exit 3: Field "mig\.mode\.current" is not supported on this device\); GPUs taken from nvidia-smi -L$/,
            );
        });
        it("pre-R470 MIG UUIDs are left out, with a warning", () => {
            const r = parseDiscoveryDocument(
                doc(
                    {},
                    {
                        "nvidia-smi-query": "0, GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77, A100-SXM4-40GB, 40537, 00000000:36:00.0, 450.80.02, Enabled\n",
                        "nvidia-smi-L":
                            "GPU 0: A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\n  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0)\n",
                        "nvidia-smi-mig-lci": "|   0      1       MIG 3g.20gb          2         0          0:3     |\n",
                    },
                ),
            );
            assert.deepStrictEqual(r.inventory.gpus[0].mig, [{ index: 0, profile: "3g.20gb", gi: 1, ci: 0 }]);
            assert.ok(
                r.warnings.some((w) => w.includes("pre-R470 form")),
                r.warnings.join("\n"),
            );
        });
        it("MIG profiles the inventory accepts (compute-instance splits, +me) pass without a warning; others are warned about", () => {
            const r = parseDiscoveryDocument(
                doc(
                    {},
                    {
                        "nvidia-smi-query": "0, GPU-4101de38-535a-4255-ac14-a63e072d7a10, NVIDIA A100 80GB PCIe, 81920, 00000000:17:00.0, 550.54.15, Enabled\n",
                        "nvidia-smi-L": [
                            "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-4101de38-535a-4255-ac14-a63e072d7a10)",
                            "  MIG 1c.3g.40gb    Device  0: (UUID: MIG-d771d938-b556-4f9d-b742-2dd26b864023)",
                            "  MIG 1c.3g.40gb    Device  1: (UUID: MIG-08bce7f3-bac7-4715-b56f-91541f15fe37)",
                            "  MIG 1g.10gb+me    Device  2: (UUID: MIG-761ea9d1-82ac-41cb-9e19-d3593973f144)",
                            "  MIG 1x.10gb       Device  3: (UUID: MIG-a5b1e9ac-1c96-4ca0-b57c-53878e7531dc)",
                            "",
                        ].join("\n"),
                        "nvidia-smi-mig-lci": [
                            "|   0      2       MIG 1c.3g.40gb       0         0          0:1     |",
                            "|   0      2       MIG 1c.3g.40gb       0         1          1:1     |",
                            "|   0      9       MIG 1g.10gb+me       7         0          0:1     |",
                            "|   0     10       MIG 1x.10gb          0         0          0:1     |",
                            "",
                        ].join("\n"),
                    },
                ),
            );
            assert.deepStrictEqual(
                r.inventory.gpus[0].mig.map((m) => [m.index, m.profile, m.gi, m.ci]),
                [
                    [0, "1c.3g.40gb", 2, 0],
                    [1, "1c.3g.40gb", 2, 1],
                    [2, "1g.10gb+me", 9, 0],
                    [3, "1x.10gb", 10, 0],
                ],
            );
            const profileWarnings = r.warnings.filter((w) => w.includes("profile"));
            assert.deepStrictEqual(profileWarnings, [
                'GPU 0 MIG device 3: profile "1x.10gb" is not a MIG profile the stack accepts (such as 3g.40gb, 1c.3g.20gb or 1g.10gb+me)',
            ]);
            // What discovery passes, the inventory schema accepts.
            for (const m of r.inventory.gpus[0].mig.slice(0, 3)) assert.ok(migInstanceSchema.safeParse(m).success, m.profile);
            assert.ok(!migInstanceSchema.safeParse(r.inventory.gpus[0].mig[3]).success);
        });
        it("rejects what is not a discovery document, saying where", () => {
            assert.throws(() => parseDiscoveryDocument("", "host gpu-a"), /host gpu-a: empty/);
            assert.throws(
                () => parseDiscoveryDocument("bash: line 1: syntax error", "host gpu-a"),
                /host gpu-a: not JSON .* it starts with "bash: line 1: syntax error"/,
            );
            assert.throws(
                () => parseDiscoveryDocument({ schema: "other", sources: { lspci: 3 } }),
                /schema: expected schema "gpu-workers\/discovery\/v1"[\s\S]*sources.lspci:/,
            );
        });
    });
});
