/**
 * The GPU health link: a worker without GPUs gets no watcher; the settings flow into the
 * watcher's rendered config (policy, times, the ignore list with the stack's changes, the
 * selected GPUs by normalised bus id) and its unit; bad settings are refused naming the key;
 * the docs page's Xid table is the one the watcher's config is rendered from.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { DEFAULT_IGNORED_XIDS, renderXidTableMarkdown, XID_TABLE } from "../../components/lib/gpu/xids";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { planGpuHealth } from "../../components/lib/links/gpu-health/plan";
import { HEALTH_PATHS, normalBusId, renderGpuHealth, renderHealthConfig } from "../../components/lib/links/gpu-health/render";
import { planHost } from "../../components/lib/plan/host-plan";
import { mergeSettings, settingsSchema, WORKER_DEFAULTS } from "../../components/lib/settings/settings";
import { AMD_PHOENIX, HGX_H100_8X, INTEL_FLEX_170_X2, NO_GPU, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";
import { HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";

const ssh = { ssh: { host: "10.0.0.5", privateKey: "key", hostKey: HOST_KEY } };
const release = {
    concourse: { binary: { url: "https://example.org/concourse.tgz", sha256: "a".repeat(64) }, tsaHost: "10.0.0.1", tsaPublicKey: TSA_KEY },
};

function healthLink(args: Parameters<typeof workerSpec>[1]) {
    return planHost(workerSpec("w", args)).links.find((l) => l.component === "GpuHealth");
}

/** The config's lines that start with `key `. */
function lines(config: string, key: string): string[] {
    return config.split("\n").filter((l) => l.startsWith(`${key} `));
}

describe("GPU health link", () => {
    it("a worker without GPUs (vendor none) gets no watcher", () => {
        assert.strictEqual(healthLink({ transport: ssh, inventory: inventorySchema.parse(NO_GPU) }), undefined);
        assert.strictEqual(planGpuHealth({ inventory: inventorySchema.parse(NO_GPU) }), undefined);
    });

    it("a GPU worker's watcher comes after its Concourse worker, whose unit it lands", () => {
        const plan = planHost(workerSpec("w", { transport: ssh, inventory: inventorySchema.parse(RTX_A500_LAPTOP), ...release }));
        const names = plan.links.map((l) => l.component);
        assert.deepStrictEqual(names.slice(-2), ["ConcourseWorker", "GpuHealth"]);
        const link = plan.links[plan.links.length - 1];
        assert.deepStrictEqual(link.dependsOn, ["w-concourse"]);
        const config = link.rendered.files.find((f) => f.path === HEALTH_PATHS.config)!.content;
        assert.deepStrictEqual(lines(config, "worker-unit"), ["worker-unit concourse-worker.service"]);
        // Every file is in the plan, so the preview shows it.
        for (const f of link.rendered.files)
            assert.ok(
                plan.files.some((p) => p.path === f.path),
                f.path,
            );
    });

    it("GPUs handed out per task: the watcher takes a sick GPU out of the pool (pool yes); with every container on every GPU, not", () => {
        const config = (allocation?: { mode: "exclusive" | "timeSlice" | "all" }) =>
            healthLink({ transport: ssh, inventory: inventorySchema.parse(HGX_H100_8X), ...(allocation ? { allocation } : {}) })!.rendered.files.find(
                (f) => f.path === HEALTH_PATHS.config,
            )!.content;
        assert.deepStrictEqual(lines(config({ mode: "exclusive" }), "pool"), ["pool yes"]);
        assert.deepStrictEqual(lines(config({ mode: "timeSlice" }), "pool"), ["pool yes"]);
        assert.deepStrictEqual(lines(config({ mode: "all" }), "pool"), []);
        assert.deepStrictEqual(lines(config(), "pool"), []);
    });

    it("without a Concourse worker it only reports: no worker unit in its config", () => {
        const link = healthLink({ transport: ssh, inventory: inventorySchema.parse(RTX_A500_LAPTOP) })!;
        assert.deepStrictEqual(lines(link.rendered.files.find((f) => f.path === HEALTH_PATHS.config)!.content, "worker-unit"), []);
    });

    it("the settings flow into the rendered config: policy, times, ignore list, the selected GPUs by normalised bus id", () => {
        const link = healthLink({
            transport: ssh,
            inventory: inventorySchema.parse(HGX_H100_8X),
            selection: [2, 5],
            health: { onFatal: "retire", ignoreXids: [79, 94], fatalXids: [13, 109], pollSeconds: 7, settleSeconds: 120, dirtyGraceSeconds: 45 },
        })!;
        const config = link.rendered.files.find((f) => f.path === HEALTH_PATHS.config)!.content;
        assert.deepStrictEqual(lines(config, "on-fatal"), ["on-fatal retire"]);
        assert.deepStrictEqual(lines(config, "poll-seconds"), ["poll-seconds 7"]);
        assert.deepStrictEqual(lines(config, "settle-seconds"), ["settle-seconds 120"]);
        assert.deepStrictEqual(lines(config, "dirty-grace-seconds"), ["dirty-grace-seconds 45"]);
        assert.deepStrictEqual(lines(config, "nvswitch"), ["nvswitch yes"]);
        assert.deepStrictEqual(lines(config, "gpu"), ["gpu 2 0000:3a:00.0", "gpu 5 0000:ab:00.0"]);
        assert.deepStrictEqual(lines(config, "ignore-xids"), ["ignore-xids 31 43 45 68 79 94"]);
        assert.strictEqual(lines(config, "xid").length, XID_TABLE.length);
        const unit = link.rendered.files.find((f) => f.path === HEALTH_PATHS.unit)!.content;
        assert.match(
            unit,
            /^ExecStart=\/usr\/local\/lib\/gpu-workers\/gpu-health-watch\.sh --config \/etc\/gpu-workers\/gpu-health\.conf --state-dir \/run\/gpu-workers\/health$/m,
        );
        assert.match(unit, /^Restart=always$/m);
        const [step] = link.rendered.steps;
        assert.match(step.create, /gpu-health\.sh ensure --unit gpu-workers-health\.service/);
        assert.match(step.remove!, /gpu-health\.sh remove --unit gpu-workers-health\.service --state-dir \/run\/gpu-workers\/health$/);
        assert.match(step.check!, /gpu-health\.sh check /);
    });

    it("defaults: land, the device plugin's ignore list, 30 s polls, 300 s settle, 600 s grace", () => {
        const s = planGpuHealth({ inventory: inventorySchema.parse(RTX_A500_LAPTOP) })!;
        assert.deepStrictEqual(
            { onFatal: s.onFatal, ignored: s.ignoredXids, poll: s.pollSeconds, settle: s.settleSeconds, grace: s.dirtyGraceSeconds },
            { onFatal: "land", ignored: [13, 31, 43, 45, 68, 109], poll: 30, settle: 300, grace: 600 },
        );
        assert.deepStrictEqual([...DEFAULT_IGNORED_XIDS], [13, 31, 43, 45, 68, 109]);
    });

    it("an AMD GPU without a declared bus id is found by its render node", () => {
        const config = renderHealthConfig(planGpuHealth({ inventory: inventorySchema.parse(AMD_PHOENIX) })!);
        assert.deepStrictEqual(lines(config, "gpu"), ["gpu 0 - renderD128"]);
    });

    it("an Intel host's config: vendor intel, each GPU by bus id with its driver, no NVSwitch", () => {
        const link = healthLink({ transport: ssh, inventory: inventorySchema.parse(INTEL_FLEX_170_X2), ...release })!;
        const config = link.rendered.files.find((f) => f.path === HEALTH_PATHS.config)!.content;
        assert.deepStrictEqual(lines(config, "vendor"), ["vendor intel"]);
        assert.deepStrictEqual(lines(config, "gpu"), ["gpu 0 0000:4d:00.0 i915", "gpu 1 0000:5e:00.0 i915"]);
        assert.deepStrictEqual(lines(config, "nvswitch"), ["nvswitch no"]);
        assert.deepStrictEqual(lines(config, "worker-unit"), ["worker-unit concourse-worker.service"]);
        assert.match(config, /^# Intel: gpu INDEX BUS-ID DRIVER \(i915 or xe\)/m);
        // An xe GPU says so; NVIDIA and AMD configs name no driver.
        const xe = inventorySchema.parse({ ...INTEL_FLEX_170_X2, gpus: INTEL_FLEX_170_X2.gpus!.map((g) => ({ ...g, driver: "xe" })) });
        assert.deepStrictEqual(lines(renderHealthConfig(planGpuHealth({ inventory: xe, selection: [1] })!), "gpu"), ["gpu 1 0000:5e:00.0 xe"]);
        assert.doesNotMatch(renderHealthConfig(planGpuHealth({ inventory: inventorySchema.parse(HGX_H100_8X) })!), /i915|xe$|# Intel/m);
    });

    it("bus ids are normalised to a 4-digit domain, lower case; anything else is refused", () => {
        assert.strictEqual(normalBusId("00000000:3B:00.0"), "0000:3b:00.0");
        assert.throws(() => normalBusId("3b:00.0"), /not a PCI bus id/);
    });

    it("renders the same for the same settings (pure)", () => {
        const s = planGpuHealth({ inventory: inventorySchema.parse(HGX_H100_8X) })!;
        assert.deepStrictEqual(renderGpuHealth(s), renderGpuHealth(s));
    });

    describe("settings are checked, naming the key", () => {
        const problems = (health: unknown) => {
            const r = settingsSchema.safeParse(mergeSettings(WORKER_DEFAULTS, { health }));
            return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
        };
        const cases: [string, unknown, RegExp][] = [
            ["an Xid out of range", { ignoreXids: [0] }, /^health\.ignoreXids\.0: expected an Xid: an integer from 1 to 999$/],
            ["an Xid that is no integer", { fatalXids: [79.5] }, /^health\.fatalXids\.0: expected an Xid/],
            ["an Xid in both lists", { ignoreXids: [79], fatalXids: [79] }, /^health\.fatalXids: Xid 79 is in both ignoreXids and fatalXids$/],
            ["a poll of 0 s", { pollSeconds: 0 }, /^health\.pollSeconds: expected whole seconds from 1 to 86400$/],
            ["a negative settle time", { settleSeconds: -5 }, /^health\.settleSeconds: expected whole seconds/],
            ["a grace of a week", { dirtyGraceSeconds: 604800 }, /^health\.dirtyGraceSeconds: expected whole seconds/],
            ["an unknown policy", { onFatal: "drain" }, /^health\.onFatal: expected land, retire or none$/],
            ["an unknown key", { pollInterval: 5 }, /^health: /],
        ];
        for (const [label, health, want] of cases) {
            it(label, () => {
                const found = problems(health);
                assert.strictEqual(found.length, 1, found.join("; "));
                assert.match(found[0], want);
            });
        }
        it("good settings pass", () => assert.deepStrictEqual(problems({ onFatal: "none", ignoreXids: [79], fatalXids: [13], pollSeconds: 5 }), []));
    });

    it("docs/gpu-health.md holds the Xid table the watcher's config is rendered from", () => {
        const doc = fs.readFileSync(path.join(PACKAGE_ROOT, "docs", "gpu-health.md"), "utf8");
        const m = /<!-- xid table: [^>]*-->\n([\s\S]*?)\n<!-- end of xid table -->/.exec(doc);
        assert.ok(m, "the page has the table's markers");
        assert.strictEqual(m[1], renderXidTableMarkdown());
    });
});
