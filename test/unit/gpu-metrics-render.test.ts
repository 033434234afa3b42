/**
 * The GPU metrics link (plan and render) and the runc wrapper's GPU job records in its
 * settings: placed only where the stack asks, never without GPUs, and a worker without
 * metrics keeps the wrapper settings it had.
 */
import * as assert from "assert";
import { workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planHost } from "../../components/lib/plan/host-plan";
import { gpuMetricsLink, planGpuMetrics } from "../../components/lib/links/gpu-metrics/plan";
import {
    collectArgs,
    DEBIAN_TEXTFILE_DIR,
    GPU_JOBS_DIR,
    GPU_METRICS_UNIT,
    renderGpuMetrics,
    renderMetricsService,
    renderMetricsTimer,
} from "../../components/lib/links/gpu-metrics/render";
import { planRuncWrapper, wrapperTerms } from "../../components/lib/links/runc-wrapper/plan";
import { renderWrapperConfig, wrapperConfigSchema } from "../../components/lib/links/runc-wrapper/render";
import { AMD_PHOENIX, HGX_H100_8X, INTEL_FLEX_170_X2, NO_GPU } from "../fixtures/stacks/inventories";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const ssh = { ssh: { host: "10.0.0.5", privateKey: "key", hostKey: HOST_KEY } };

function spec(inventory: object, extra: Record<string, unknown> = {}) {
    return workerSpec("w", { transport: ssh, ...extra, inventory: inventorySchema.parse(inventory) });
}

function wrapperJson(s: ReturnType<typeof spec>) {
    return JSON.parse(renderWrapperConfig(planRuncWrapper(wrapperTerms(s))));
}

describe("GPU metrics (plan and render)", () => {
    it("off by default: no link, and the wrapper's settings have no gpuJobs", () => {
        const s = spec(HGX_H100_8X);
        assert.strictEqual(
            planHost(s).links.find((l) => l.component === "GpuMetrics"),
            undefined,
        );
        assert.ok(!("gpuJobs" in wrapperJson(s)));
    });

    it("metrics.nodeExporter: the link after the worker, the selected GPUs, Debian's folder", () => {
        const s = spec(HGX_H100_8X, { selection: [2, 5], metrics: { nodeExporter: true } });
        const links = planHost(s).links;
        const link = links.find((l) => l.component === "GpuMetrics");
        assert.ok(link);
        assert.deepStrictEqual(link.settings, { vendor: "nvidia", gpus: [2, 5], textfileDir: DEBIAN_TEXTFILE_DIR, intervalSeconds: 15 });
        assert.strictEqual(links[links.length - 1].component, "GpuMetrics");
        const paths = link.rendered.files.map((f) => f.path);
        assert.ok(paths.includes(`/etc/systemd/system/${GPU_METRICS_UNIT}.timer`) && paths.includes(`/etc/systemd/system/${GPU_METRICS_UNIT}.service`));
        // The node exporter comes from the packages step, which removes only what it installed.
        assert.deepStrictEqual(
            link.rendered.steps.map((st) => st.name),
            ["runtime-packages", "gpu-metrics"],
        );
        assert.ok(link.rendered.steps[0].create.includes("prometheus-node-exporter=prometheus-node-exporter"));
        assert.deepStrictEqual(wrapperJson(s).gpuJobs, { gpus: ["2", "5"], mappingDir: "" });
    });

    it("dcgmJobMappingDir alone: the wrapper writes the mapping, no node exporter", () => {
        const s = spec(HGX_H100_8X, { metrics: { dcgmJobMappingDir: "/run/dcgm-jobs" } });
        assert.strictEqual(
            planHost(s).links.find((l) => l.component === "GpuMetrics"),
            undefined,
        );
        const config = wrapperJson(s);
        assert.deepStrictEqual(config.gpuJobs, { gpus: ["0", "1", "2", "3", "4", "5", "6", "7"], mappingDir: "/run/dcgm-jobs" });
        assert.ok(wrapperConfigSchema.safeParse(config).success);
    });

    it("vendor none: never a metrics link, nor records, even when asked", () => {
        const s = spec(NO_GPU, { metrics: { nodeExporter: true, dcgmJobMappingDir: "/run/dcgm-jobs" } });
        assert.strictEqual(
            planHost(s).links.find((l) => l.component === "GpuMetrics"),
            undefined,
        );
        assert.strictEqual(gpuMetricsLink.plan(s, planHost(s).gpu), undefined);
        assert.ok(!("gpuJobs" in wrapperJson(s)));
        assert.throws(() => planGpuMetrics({ inventory: s.inventory }), /vendor is none/);
    });

    it("AMD: the link, with the vendor for the script", () => {
        const s = spec(AMD_PHOENIX, { metrics: { nodeExporter: true } });
        const link = planHost(s).links.find((l) => l.component === "GpuMetrics");
        assert.strictEqual(link?.settings.vendor, "amd");
    });

    it("Intel: the link, each selected GPU's PCI address for xpu-smi beside its index; the service passes them", () => {
        const s = spec(INTEL_FLEX_170_X2, { selection: [1], metrics: { nodeExporter: true } });
        const link = planHost(s).links.find((l) => l.component === "GpuMetrics");
        assert.deepStrictEqual(link?.settings, { vendor: "intel", gpus: [1], busIds: ["0000:5e:00.0"], textfileDir: DEBIAN_TEXTFILE_DIR, intervalSeconds: 15 });
        const service = link.rendered.files.find((f) => f.path.endsWith(`${GPU_METRICS_UNIT}.service`));
        assert.match(service?.content ?? "", / collect --vendor intel --gpus 1 --bus-ids 0000:5e:00\.0 --textfile-dir /);
        // The NVIDIA and AMD command lines stay as they were: no --bus-ids.
        assert.ok(!collectArgs({ vendor: "nvidia", gpus: [0], textfileDir: "/x", intervalSeconds: 15 }).includes("--bus-ids"));
        const intel = { vendor: "intel" as const, gpus: [0, 1], textfileDir: "/x", intervalSeconds: 15 };
        assert.throws(() => renderGpuMetrics({ ...intel, busIds: ["0000:4d:00.0"] }), /each Intel GPU needs its PCI address.*gpus 0,1, busIds 0000:4d:00\.0/);
        assert.throws(() => renderGpuMetrics(intel), /busIds none/);
        assert.throws(() => renderGpuMetrics({ ...intel, busIds: ["0000:4d:00.0", "4d:00.0"] }), /each Intel GPU needs its PCI address/);
    });

    it("units: a oneshot service running collect with every value, a timer at the interval", () => {
        const settings = { vendor: "nvidia" as const, gpus: [0, 3], textfileDir: "/var/lib/node-exporter", intervalSeconds: 30 };
        const service = renderMetricsService(settings, "/usr/local/lib/gpu-workers/gpu-metrics.sh");
        assert.match(service, /^Type=oneshot$/m);
        assert.ok(
            service.includes("ExecStart=/usr/local/lib/gpu-workers/gpu-metrics.sh collect --vendor nvidia --gpus 0,3 --textfile-dir /var/lib/node-exporter"),
        );
        assert.ok(collectArgs(settings).includes(GPU_JOBS_DIR));
        const timer = renderMetricsTimer(settings);
        assert.match(timer, /^OnUnitActiveSec=30$/m);
        assert.match(timer, /^WantedBy=timers.target$/m);
        assert.throws(() => renderGpuMetrics({ ...settings, gpus: [] }), /no GPUs/);
    });

    it("the setting is checked: a relative mapping folder is refused with its path", () => {
        assert.throws(() => spec(HGX_H100_8X, { metrics: { dcgmJobMappingDir: "dcgm" } }), /metrics\.dcgmJobMappingDir/);
    });
});
