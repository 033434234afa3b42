/**
 * Leaf components plan for themselves from a user's terms, with the functions the chain uses:
 * a RuncWrapper or ContainerToolkit given a worker's terms renders exactly what planHost
 * places for that worker.
 */
import * as assert from "assert";
import { workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { PlanError } from "../../components/lib/gpu/plan";
import { planHost } from "../../components/lib/plan/host-plan";
import { planConcourseWorker } from "../../components/lib/links/concourse-worker/plan";
import { containerdTerms, planContainerdRuntime } from "../../components/lib/links/containerd/plan";
import { planContainerToolkit, toolkitTerms } from "../../components/lib/links/container-toolkit/plan";
import { planGpuDriver } from "../../components/lib/links/gpu-driver/plan";
import { planRuncWrapper, wrapperTerms } from "../../components/lib/links/runc-wrapper/plan";
import { planWorkerValidator, validatorTerms } from "../../components/lib/links/worker-validator/plan";
import { renderConcourseContainerdConfig } from "../../components/lib/links/containerd/render";
import { NVIDIA_RUNTIME_BINARY, renderContainerToolkit } from "../../components/lib/links/container-toolkit/render";
import { renderContainerdRuntimeComponent } from "../../components/lib/links/containerd/render";
import { renderGpuDriver } from "../../components/lib/links/gpu-driver/render";
import { RUNC_REAL_PATH, renderRuncWrapperComponent } from "../../components/lib/links/runc-wrapper/render";
import { renderWorkerValidator } from "../../components/lib/links/worker-validator/render";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

/** The wrapper as the component hands it in (it hashes this package's build). */
const wrapperBinary = { path: "dist/wrapper/runc-wrapper", sha256: "4".repeat(64) };
const checkerBinary = { path: "dist/cdi-check/cdi-check", sha256: "5".repeat(64) };

const ssh = { ssh: { host: "10.0.0.5", privateKey: "key", hostKey: HOST_KEY } };

describe("leaf components in a user's terms", () => {
    const workers = {
        "no GPU": { inventory: NO_GPU },
        "RTX A500, GPUs by index (no CDI)": { inventory: RTX_A500_LAPTOP, toolkit: { cdi: false } },
        "HGX H100, GPUs 2 and 5, privileged full, toolkit preinstalled": {
            inventory: HGX_H100_8X,
            selection: [2, 5],
            toolkit: { version: "preinstalled" },
            concourse: { privilegedMode: "full" as const },
        },
        "AMD Phoenix, pinned driver, own datasets": {
            inventory: AMD_PHOENIX,
            driver: { version: "6.2.4" },
            datasets: { root: "/data", writableSuffixes: ["_scratch"] },
        },
        "A100 with MIG": { inventory: A100_MIG },
        "HGX H100, GPUs 0 to 3 time-sliced 3 ways": {
            inventory: HGX_H100_8X,
            selection: [0, 1, 2, 3],
            allocation: { mode: "timeSlice" as const, replicas: 3 },
        },
        "AMD Phoenix, exclusive": { inventory: AMD_PHOENIX, allocation: { mode: "exclusive" as const } },
    };
    for (const [label, w] of Object.entries(workers)) {
        it(`${label}: each leaf from the worker's terms renders what planHost places`, () => {
            const spec = workerSpec("w", { transport: ssh, ...w, inventory: inventorySchema.parse(w.inventory) });
            const plan = planHost(spec);
            const rendered = (component: string) => plan.links.find((l) => l.component === component)?.rendered;
            assert.deepStrictEqual(renderRuncWrapperComponent(planRuncWrapper(wrapperTerms(spec))), rendered("RuncWrapper"));
            assert.deepStrictEqual(renderContainerdRuntimeComponent(planContainerdRuntime(containerdTerms(spec))), rendered("ContainerdRuntime"));
            assert.deepStrictEqual(renderWorkerValidator(planWorkerValidator(validatorTerms(spec))), rendered("WorkerValidator"));
            if (spec.inventory.vendor === "none") {
                assert.strictEqual(rendered("ContainerToolkit"), undefined);
                return;
            }
            assert.deepStrictEqual(renderContainerToolkit(planContainerToolkit(toolkitTerms(spec))), rendered("ContainerToolkit"));
            assert.deepStrictEqual(renderGpuDriver(planGpuDriver({ vendor: spec.inventory.vendor, version: spec.driver.version })), rendered("GpuDriver"));
        });
    }

    it("the wrapper hands containers to nvidia-container-runtime on NVIDIA, to runc elsewhere or when told", () => {
        const nvidia = inventorySchema.parse(RTX_A500_LAPTOP);
        assert.strictEqual(planRuncWrapper({ inventory: nvidia, wrapperBinary }).realRuntime, NVIDIA_RUNTIME_BINARY);
        assert.strictEqual(planRuncWrapper({ inventory: nvidia, runtime: "runc", wrapperBinary }).realRuntime, RUNC_REAL_PATH);
        assert.strictEqual(planRuncWrapper({ inventory: inventorySchema.parse(AMD_PHOENIX), wrapperBinary }).realRuntime, RUNC_REAL_PATH);
        assert.strictEqual(planRuncWrapper({ inventory: inventorySchema.parse(NO_GPU), wrapperBinary }).realRuntime, RUNC_REAL_PATH);
    });

    it("defaults are the worker's: all GPUs, CDI ids, /srv with _writable and _rw, privileged steps refused", () => {
        const s = planRuncWrapper({ inventory: inventorySchema.parse(HGX_H100_8X), wrapperBinary });
        assert.strictEqual(s.plan.env.NVIDIA_VISIBLE_DEVICES.split(",").length, 8);
        assert.match(s.plan.env.NVIDIA_VISIBLE_DEVICES, /^nvidia\.com\/gpu=/);
        assert.deepStrictEqual(s.datasets, { root: "/srv", writableSuffixes: ["_writable", "_rw"] });
        assert.strictEqual(s.allowPrivileged, false);
        const toolkit = planContainerToolkit({ inventory: inventorySchema.parse(HGX_H100_8X), selection: [1], checkerBinary });
        assert.deepStrictEqual(toolkit.cdiDevices, ["nvidia.com/gpu=1"]);
        assert.strictEqual(toolkit.driverVersion, "preinstalled");
    });

    it("a toolkit for a host without GPUs, or at a version with a known escape, is refused by name", () => {
        assert.throws(
            () => planContainerToolkit({ inventory: inventorySchema.parse(NO_GPU), checkerBinary }),
            (e: unknown) => e instanceof PlanError && /inventory\.vendor/.test(e.message),
        );
        assert.throws(
            () => planContainerToolkit({ inventory: inventorySchema.parse(RTX_A500_LAPTOP), version: "1.16.1", checkerBinary }),
            (e: unknown) => e instanceof PlanError && /toolkit\.version/.test(e.message),
        );
    });

    it("a Concourse worker from its name, release and TSA: the worker's defaults, its own containerd config, the runc swap only when asked", () => {
        const release = { url: "https://example.test/concourse.tgz", sha256: "a".repeat(64) };
        const plain = planConcourseWorker({ name: "w", version: "8.2.5", tsaHost: "ci.example.test", binary: release, wrapperBinary });
        assert.deepStrictEqual(
            { tsaPort: plain.tsaPort, tags: plain.tags, workDir: plain.workDir, privilegedMode: plain.privilegedMode, inUserNamespace: plain.inUserNamespace },
            { tsaPort: 2222, tags: [], workDir: "/opt/concourse/worker", privilegedMode: "ignore", inUserNamespace: false },
        );
        assert.strictEqual(plain.containerdConfig, renderConcourseContainerdConfig());
        assert.strictEqual(plain.wrapRunc, undefined);
        const wrapped = planConcourseWorker({ name: "w", version: "8.2.5", tsaHost: "ci.example.test", binary: release, wrapperBinary, wrapRunc: true });
        assert.deepStrictEqual(wrapped.wrapRunc, { wrapper: "/usr/local/lib/gpu-workers/runc-wrapper", sha256: wrapperBinary.sha256, runcCves: "warn" });
    });
});
