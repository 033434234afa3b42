/**
 * Issue 13's pure parts: the toolkit's CVE floor and each vendor's own toolkit version (issue
 * 14, item 10), the apt files and the /dev/char rule in an NVIDIA host's render, and the
 * feature-discovery tags of an H100 host.
 */
import * as assert from "assert";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planWorkerGpus } from "../../components/lib/gpu/plan";
import { renderAptPin } from "../../components/lib/render/apt-sources";
import { toolkitPin } from "../../components/lib/toolkit/pins";
import { TOOLKITS, toolkitVersionProblems } from "../../components/lib/toolkit/versions";
import { parseStackConfig } from "../../stacks/checks/stack";
import { renderHost } from "../../stacks/render/offline-render";
import { AMD_PHOENIX, A100_MIG, HGX_H100_8X, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";

describe("toolkit versions: per vendor, with a CVE floor", () => {
    it("refuses 1.16.1 and 1.17.7 in the stack config, naming each CVE and the first fixed version", () => {
        const problems = problemsOf(
            stackWith(
                { name: "old", inventory: RTX_A500_LAPTOP, extra: { toolkit: { version: "1.16.1" } } },
                { name: "almost", inventory: RTX_A500_LAPTOP, extra: { toolkit: { version: "1.17.7" } } },
            ),
        );
        assert.strictEqual(problems.length, 2, problems.join("\n"));
        assert.match(
            problems[0],
            /^hosts\[0\]\.toolkit\.version: nvidia-container-toolkit 1\.16\.1 has known container escapes: CVE-2024-0132 .*fixed in 1\.16\.2.*CVE-2025-23359 .*fixed in 1\.17\.4.*CVE-2025-23266 .*fixed in 1\.17\.8.*; use 1\.17\.8 or later$/,
        );
        assert.match(
            problems[1],
            /^hosts\[1\]\.toolkit\.version: nvidia-container-toolkit 1\.17\.7 has known container escapes: CVE-2025-23266 \(.*; fixed in 1\.17\.8\); use 1\.17\.8 or later$/,
        );
        assert.doesNotMatch(problems[1], /CVE-2024-0132/);
        assert.deepStrictEqual(toolkitVersionProblems("nvidia", "1.17.8"), []);
        assert.deepStrictEqual(toolkitVersionProblems("nvidia", "1.18.0~rc.1"), []);
        assert.match(toolkitVersionProblems("nvidia", "1.17.8~rc.1")[0], /CVE-2025-23266/, "a release candidate comes before its release");
    });

    it("an AMD host with defaults gets amd-container-toolkit at AMD's default, never NVIDIA's 1.17.8", () => {
        const [amd, nvidia] = parseStackConfig(stackWith({ name: "amd", inventory: AMD_PHOENIX }, { name: "nv", inventory: RTX_A500_LAPTOP }));
        const amdToolkit = renderHost(amd).manifest.steps.find((s) => s.name === "amd-toolkit-container-toolkit")!;
        assert.match(amdToolkit.run, /--vendor amd --version 1\.3\.0( |$)/);
        assert.doesNotMatch(amdToolkit.run, /1\.17\.8/);
        assert.strictEqual(TOOLKITS.amd.defaultVersion, "1.3.0");
        assert.match(renderHost(nvidia).manifest.steps.find((s) => s.name === "nv-toolkit-container-toolkit")!.run, /--vendor nvidia --version 1\.17\.8 /);
    });

    it("checks a version against the form its vendor publishes", () => {
        const problems = problemsOf(stackWith({ name: "amd", inventory: AMD_PHOENIX, extra: { toolkit: { version: "1.17.8~rc.1" } } }));
        assert.deepStrictEqual(problems, [
            "hosts[0].toolkit.version: 1.17.8~rc.1 is not a version AMD publishes amd-container-toolkit under: expected X.Y.Z such as 1.3.0",
        ]);
    });

    it("preinstalled skips the install; the host script checks the floor on what is there", () => {
        const [host] = parseStackConfig(stackWith({ name: "pre", inventory: RTX_A500_LAPTOP, extra: { toolkit: { version: "preinstalled" } } }));
        const { manifest } = renderHost(host);
        assert.match(
            manifest.steps.find((s) => s.name === "pre-toolkit-container-toolkit")!.run,
            /--version preinstalled --cve CVE-2024-0132=1\.16\.2 --cve CVE-2025-23359=1\.17\.4 --cve CVE-2025-23266=1\.17\.8/,
        );
        assert.ok(!manifest.files.some((f) => f.path.startsWith("/etc/apt/")), "nothing to pin");
    });
});

describe("an NVIDIA host's render: vendor repository, pin, /dev/char rule", () => {
    let manifest: ReturnType<typeof renderHost>["manifest"];
    let contents: ReturnType<typeof renderHost>["contents"];
    before(() => {
        const [host] = parseStackConfig(stackWith({ name: "gpu", inventory: RTX_A500_LAPTOP, extra: { driver: { version: "535.288.01" } } }));
        ({ manifest, contents } = renderHost(host));
    });
    const text = (p: string) => contents.get(p) as string;

    it("places the keyring under /usr/share/keyrings and a source that trusts only it (signed-by)", () => {
        const keyring = "/usr/share/keyrings/gpu-workers-nvidia-container-toolkit.asc";
        assert.match(text(keyring), /^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
        const source = text("/etc/apt/sources.list.d/gpu-workers-nvidia-container-toolkit.sources");
        assert.match(source, /^URIs: https:\/\/nvidia\.github\.io\/libnvidia-container\/stable\/deb\/\$\(ARCH\)$/m);
        assert.match(source, new RegExp(`^Signed-By: ${keyring}$`, "m"));
        assert.match(source, /C95B321B61E88C1809C4F759DDCAE044F796ECB0/);
        assert.strictEqual(manifest.files.find((f) => f.path === keyring)!.component, "ContainerToolkit");
    });

    it("pins the toolkit with its libraries, and the driver with its branch's packages and fabricmanager", () => {
        assert.strictEqual(text("/etc/apt/preferences.d/gpu-workers-nvidia-container-toolkit"), renderAptPin(toolkitPin("nvidia", "1.17.8")));
        assert.match(
            text("/etc/apt/preferences.d/gpu-workers-nvidia-container-toolkit"),
            /^Package: nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container\*\nPin: version 1\.17\.8-\*\nPin-Priority: 1001$/m,
        );
        assert.match(
            text("/etc/apt/preferences.d/gpu-workers-nvidia-driver"),
            /^Package: \/-535\(-server\|-open\|-server-open\)\?\$\/ cuda-drivers\nPin: version 535\.288\.01\[\.-\]\*\nPin-Priority: 1001$/m,
        );
        // The CUDA repository's key is not shipped: no source for it, and the driver comes from the host's sources.
        assert.ok(!manifest.files.some((f) => f.path.includes("nvidia-cuda")));
    });

    it("places the udev rule that runs nvidia-ctk system create-dev-char-symlinks --create-all", () => {
        assert.match(
            text("/etc/udev/rules.d/71-gpu-workers-nvidia-dev-char.rules"),
            /^ACTION=="add", DEVPATH=="\/bus\/pci\/drivers\/nvidia", RUN\+="\/usr\/bin\/nvidia-ctk system create-dev-char-symlinks --create-all"$/m,
        );
    });

    it("validates after the wrapper and before the worker, expecting the pinned driver", () => {
        const validate = manifest.steps.find((s) => s.name === "gpu-validate-validate")!;
        assert.match(
            validate.run,
            /--vendor nvidia .*--gpus 0:GPU-8a1f0c3e-52b4-1e7d-9c2a-3b6f1d0e4a77 --selected 0 --driver 535\.288\.01 --cuda 12\.2 --toolkit-package nvidia-container-toolkit --toolkit-version 1\.17\.8/,
        );
        assert.match(validate.run, /--env NVIDIA_VISIBLE_DEVICES=nvidia\.com\/gpu=0/);
        assert.ok(validate.dependsOn.some((d) => d.startsWith("gpu-runc-wrapper-")));
        assert.ok(manifest.steps.find((s) => s.name.startsWith("gpu-concourse-"))!.dependsOn.includes("gpu-validate-validate"));
    });
});

describe("tags at feature-discovery level", () => {
    it("the offline render of an H100 host shows family, compute capability, driver major, CUDA, MIG strategy and gpu-count-min", () => {
        const [host] = parseStackConfig(stackWith({ name: "hgx", inventory: HGX_H100_8X }));
        const tags = renderHost(host).manifest.tags;
        for (const t of [
            "gpu-family=hopper",
            "gpu-compute=9.0",
            "gpu-driver-major=550",
            "gpu-cuda=12.4",
            "gpu-mig-strategy=none",
            "gpu-count-min=1",
            "gpu-count-min=2",
            "gpu-count-min=4",
            "gpu-count-min=8",
        ]) {
            assert.ok(tags.includes(t), `${t} in ${tags.join(" ")}`);
        }
        assert.ok(tags.includes("gpu-count=8") && tags.includes("gpu-devices=0,1,2,3,4,5,6,7"), "the existing tags stay");
    });

    it("a pin to another branch gives its major and drops the stale CUDA tag", () => {
        const plan = planWorkerGpus(inventorySchema.parse(HGX_H100_8X), {
            selection: [0, 1, 2],
            cdi: true,
            fabricManager: { mode: "off", partitions: [] },
            extraTags: [],
            driverPin: "570.86.15",
        });
        assert.ok(plan.tags.includes("gpu-driver-major=570"));
        assert.ok(!plan.tags.some((t) => t.startsWith("gpu-cuda=")));
        assert.deepStrictEqual(
            plan.tags.filter((t) => t.startsWith("gpu-count-min=")),
            ["gpu-count-min=1", "gpu-count-min=2"],
        );
    });

    it("MIG strategy single and mixed; AMD family is the gfx target; mixed families get no gpu-count-min", () => {
        const base = { selection: "all" as const, cdi: true, fabricManager: { mode: "auto" as const, partitions: [] }, extraTags: [] };
        assert.ok(planWorkerGpus(inventorySchema.parse(A100_MIG), base).tags.includes("gpu-mig-strategy=mixed"));
        const single = {
            ...A100_MIG,
            gpus: [
                {
                    ...A100_MIG.gpus![0],
                    mig: [
                        { index: 0, profile: "3g.20gb", gi: 1, ci: 0 },
                        { index: 1, profile: "3g.20gb", gi: 2, ci: 0 },
                    ],
                },
            ],
        };
        assert.ok(planWorkerGpus(inventorySchema.parse(single), base).tags.includes("gpu-mig-strategy=single"));
        assert.ok(planWorkerGpus(inventorySchema.parse(AMD_PHOENIX), base).tags.includes("gpu-family=gfx1103"));
        const mixed = {
            vendor: "nvidia",
            gpus: [
                { index: 0, model: "NVIDIA H100 80GB HBM3", memoryMiB: 81559, computeCapability: "9.0" },
                { index: 1, model: "NVIDIA A100 80GB PCIe", memoryMiB: 81920, computeCapability: "8.0" },
            ],
        };
        const tags = planWorkerGpus(inventorySchema.parse(mixed), base).tags;
        assert.ok(tags.includes("gpu-family=hopper") && tags.includes("gpu-family=ampere"));
        assert.ok(!tags.some((t) => t.startsWith("gpu-count-min=")));
    });
});
