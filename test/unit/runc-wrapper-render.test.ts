import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planWorkerGpus, PlanOptions } from "../../components/lib/gpu/plan";
import { builtArtifact } from "../../components/chain/artifacts";
import { sha256Text } from "../../components/lib/file-hash";
import { Artifact, HOST_LIB_DIR } from "../../components/lib/host/steps";
import {
    renderRuncWrapperComponent,
    renderWrapperConfig,
    GPU_JOBS_DIR,
    RUNC_REAL_PATH,
    WRAPPER_BUILD_OUTPUT,
    WRAPPER_CONFIG_PATH,
    WRAPPER_LOG_PATH,
    WRAPPER_PATH,
    WRAPPER_STATE_DIR,
    wrapperConfigSchema,
} from "../../components/lib/links/runc-wrapper/render";
import { makeScratch, scratchName } from "../support/scratch";
import { AMD_PHOENIX, HGX_H100_8X, NO_GPU } from "../fixtures/stacks/inventories";

const base: PlanOptions = { selection: "all", cdi: false, fabricManager: { mode: "off", partitions: [] }, extraTags: [] };
const datasets = { root: "/srv", writableSuffixes: ["_writable", "_rw"] };

describe("runc wrapper settings (render)", () => {
    it("NVIDIA selection: the plan's env and unsetEnv, in a fixed key order", () => {
        const plan = planWorkerGpus(inventorySchema.parse(HGX_H100_8X), { ...base, selection: [1, 3] });
        const text = renderWrapperConfig({ plan, datasets, realRuntime: "/usr/bin/nvidia-container-runtime" });
        assert.ok(text.endsWith("}\n"));
        const config = JSON.parse(text);
        assert.deepStrictEqual(Object.keys(config), [
            "realRuntime",
            "datasetRoot",
            "writableSuffixes",
            "env",
            "unsetEnv",
            "deviceNodes",
            "gpuNodes",
            "allowPrivileged",
            "allowSpec",
            "log",
        ]);
        assert.strictEqual(config.allowPrivileged, false, "privileged specs are refused unless the plan allows them");
        assert.deepStrictEqual(config.gpuNodes, ["/dev/nvidia1", "/dev/nvidia3"], "the selected GPUs' nodes: another GPU's in a spec is refused");
        assert.deepStrictEqual(config.allowSpec, [], "no spec feature is let through unless the settings say so");
        assert.deepStrictEqual(config.env, { NVIDIA_DRIVER_CAPABILITIES: "compute,utility", NVIDIA_VISIBLE_DEVICES: "1,3" });
        assert.deepStrictEqual(config.unsetEnv, plan.unsetEnv);
        assert.ok(config.unsetEnv.includes("AMD_VISIBLE_DEVICES") && !config.unsetEnv.includes("NVIDIA_VISIBLE_DEVICES"));
        assert.deepStrictEqual(config.deviceNodes, []);
        assert.strictEqual(config.log, WRAPPER_LOG_PATH);
        assert.strictEqual(config.realRuntime, "/usr/bin/nvidia-container-runtime");
        wrapperConfigSchema.parse(config);
    });

    it("AMD: device nodes and the HSA override come from the plan", () => {
        const plan = planWorkerGpus(inventorySchema.parse(AMD_PHOENIX), base);
        const config = JSON.parse(renderWrapperConfig({ plan, datasets, realRuntime: RUNC_REAL_PATH, logPath: "/tmp/w.log" }));
        assert.deepStrictEqual(config.deviceNodes, ["/dev/kfd", "/dev/dri/renderD128"]);
        assert.deepStrictEqual(config.gpuNodes, ["/dev/dri/renderD128"]);
        assert.strictEqual(config.env.HSA_OVERRIDE_GFX_VERSION, "11.0.0");
        assert.strictEqual(config.env.AMD_VISIBLE_DEVICES, "0");
        assert.strictEqual(config.log, "/tmp/w.log");
    });

    it("allowPrivileged is rendered when given", () => {
        const plan = planWorkerGpus(inventorySchema.parse(NO_GPU), base);
        assert.strictEqual(JSON.parse(renderWrapperConfig({ plan, datasets, realRuntime: RUNC_REAL_PATH, allowPrivileged: true })).allowPrivileged, true);
    });

    it("is deterministic: the same input gives the same bytes", () => {
        const plan = planWorkerGpus(inventorySchema.parse(NO_GPU), base);
        const a = renderWrapperConfig({ plan, datasets, realRuntime: RUNC_REAL_PATH });
        const b = renderWrapperConfig({
            plan: { ...plan, env: Object.fromEntries(Object.entries(plan.env).reverse()) },
            datasets,
            realRuntime: RUNC_REAL_PATH,
        });
        assert.strictEqual(a, b);
        assert.deepStrictEqual(JSON.parse(a).env, {});
    });

    it("bad input: every problem named with its key", () => {
        const plan = { env: { "A=B": "1" }, unsetEnv: [], deviceNodes: ["dev/kfd"] };
        assert.throws(
            () => renderWrapperConfig({ plan, datasets: { root: "srv", writableSuffixes: ["a/b"] }, realRuntime: "runc" }),
            (e: Error) =>
                /realRuntime: expected an absolute path/.test(e.message) &&
                /datasetRoot/.test(e.message) &&
                /writableSuffixes\.0/.test(e.message) &&
                /deviceNodes\.0/.test(e.message) &&
                /env/.test(e.message),
        );
        assert.throws(
            () => renderWrapperConfig({ plan: { env: { X: "1" }, unsetEnv: ["X"], deviceNodes: [] }, datasets, realRuntime: "/r" }),
            /both set and unset: X/,
        );
    });
});

describe("RuncWrapper component (render)", () => {
    const dir = scratchName("wrapper-render-");
    const binary: Artifact = { path: path.join(dir, "runc-wrapper"), sha256: sha256Text("not really a binary") };
    before(() => makeScratch(dir));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const plan = planWorkerGpus(inventorySchema.parse(HGX_H100_8X), { ...base, selection: [0] });

    it("places settings, binary and script, and one step that installs and removes", () => {
        const r = renderRuncWrapperComponent({ plan, datasets, realRuntime: RUNC_REAL_PATH, wrapperBinary: binary, runcCves: "warn" });
        assert.deepStrictEqual(
            r.files.map((f) => [f.path, f.mode]),
            [
                [`${HOST_LIB_DIR}/runtime-packages.sh`, "0755"],
                [`${HOST_LIB_DIR}/ownership.sh`, "0755"],
                [WRAPPER_CONFIG_PATH, "0644"],
                [WRAPPER_PATH, "0755"],
                [`${HOST_LIB_DIR}/install-runc-wrapper.sh`, "0755"],
            ],
        );
        assert.strictEqual(r.files[3].artifact, binary);
        assert.strictEqual(r.files[3].content, "");
        assert.ok(r.files[4].content.startsWith("#!/usr/bin/env bash"));
        assert.deepStrictEqual(
            r.steps.map((s) => s.name),
            ["runtime-packages", "runc-wrapper"],
            "the host's runc from the distribution where it has none, then the wrapper in its place",
        );
        const step = r.steps[1];
        assert.match(
            step.create,
            new RegExp(
                `^${HOST_LIB_DIR}/install-runc-wrapper.sh install --wrapper ${WRAPPER_PATH} --sha256 ${binary.sha256} --aside ${RUNC_REAL_PATH} --runc-cves warn$`,
            ),
        );
        // remove also takes back the GPU job records and what the wrapper made for dcgm-exporter.
        assert.strictEqual(step.remove, `${HOST_LIB_DIR}/install-runc-wrapper.sh remove --aside ${RUNC_REAL_PATH} --jobs ${GPU_JOBS_DIR}`);
        assert.deepStrictEqual(step.dependsOn, [`${HOST_LIB_DIR}/install-runc-wrapper.sh`, WRAPPER_PATH, WRAPPER_CONFIG_PATH, "runtime-packages"]);
    });

    it("a new wrapper build changes the install command (so the step runs again)", () => {
        const before = renderRuncWrapperComponent({ plan, datasets, realRuntime: RUNC_REAL_PATH, wrapperBinary: binary, runcCves: "warn" }).steps[1].create;
        const other: Artifact = { path: binary.path, sha256: sha256Text("another build") };
        const afterBuild = renderRuncWrapperComponent({ plan, datasets, realRuntime: RUNC_REAL_PATH, wrapperBinary: other, runcCves: "warn" }).steps[1].create;
        assert.notStrictEqual(before, afterBuild);
    });

    it("a custom runc path is passed to install and remove, quoted", () => {
        const r = renderRuncWrapperComponent({
            plan,
            datasets,
            realRuntime: RUNC_REAL_PATH,
            wrapperBinary: binary,
            runcCves: "warn",
            runcPath: "/opt/my runc/runc",
        });
        assert.ok(r.steps[0].create.includes("--runc '/opt/my runc/runc'"));
        assert.ok(r.steps[0].remove!.includes("--runc '/opt/my runc/runc'"));
    });

    it("a missing build says how to make it (where the program hashes it, before planning)", () => {
        assert.throws(
            () => builtArtifact(path.join(dir, "none"), "runc wrapper", "dev/build-wrapper.sh"),
            /runc wrapper: .*none is missing; build it first \(npm run build/,
        );
    });

    it("the built wrapper holds the very paths the program places and names (they are fixed at build time)", () => {
        const binary = fs.readFileSync(WRAPPER_BUILD_OUTPUT).toString("latin1");
        for (const p of [WRAPPER_CONFIG_PATH, RUNC_REAL_PATH, WRAPPER_LOG_PATH, WRAPPER_STATE_DIR])
            assert.ok(binary.includes(`${p}\0`), `${WRAPPER_BUILD_OUTPUT} lacks ${p}`);
    });
});
