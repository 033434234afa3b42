/**
 * The GPU health watcher against a real Concourse worker (the supplied release; pending without
 * it): web and worker in a Debian 12 LXD container with systemd, the worker's unit, env and
 * containerd config as the chain renders them. Xid 79 from the host's kernel log: `fly workers`
 * shows the worker landing or landed within 10 s; after the settle time it is running again.
 */
import * as assert from "assert";
import { renderConcourseContainerdConfig } from "../../components/lib/links/containerd/render";
import {
    CONCOURSE_PATHS,
    CONCOURSE_UNIT,
    ConcourseWorkerSettings,
    renderWorkerEnv,
    renderWorkerUnit,
} from "../../components/lib/links/concourse-worker/render";
import { Fly } from "../support/concourse";
import { pendingWithout, release } from "../support/supplied";
import { startWebIn, TSA_PORT } from "./concourse-instance";
import { capture, kernelLine, uniqueDomain, withDomain } from "./gpu-health-support";
import { HealthInstance } from "./gpu-health-instance";

const WORKER = "gpu-health-w";
const PASSWORD = "gpu-health-test";

describe("GPU health watcher with a real Concourse worker", function () {
    this.timeout(900_000);
    let inst: HealthInstance | undefined;
    let fly: Fly | undefined;
    const domain = uniqueDomain();
    const bus = withDomain("00000000:00:06.0", domain);
    const state = () => fly!.workers().find((w) => w.name === WORKER)?.state ?? "absent";

    before(async function () {
        pendingWithout(this, "concourse");
        this.timeout(1_500_000);
        const r = release();
        inst = await HealthInstance.start("t-health-cc", ["security.nesting=true"]);
        fly = await startWebIn(inst, r, "gpu-health", PASSWORD);
        // The worker as the chain renders it.
        const settings = {
            name: WORKER,
            version: r.version,
            tsaHost: "127.0.0.1",
            tsaPort: TSA_PORT,
            tags: ["gpu", "gpu-count=1"],
            workDir: "/opt/concourse/worker",
            containerdConfig: renderConcourseContainerdConfig(),
            networkMtu: 1500,
            privilegedMode: "ignore",
            inUserNamespace: false,
        } as ConcourseWorkerSettings;
        inst.put(CONCOURSE_PATHS.env, renderWorkerEnv(settings), "0644");
        inst.put(CONCOURSE_PATHS.containerdConfig, settings.containerdConfig, "0644");
        inst.put(CONCOURSE_PATHS.unit, renderWorkerUnit(settings), "0644");
        inst.exec(`systemctl daemon-reload && systemctl enable --now ${CONCOURSE_UNIT}`);
        await inst.until(() => state() === "running", 180_000, "fly workers to show the worker running");
        await inst.installWatcher(bus, capture("h100-vm-1x", "nvidia-smi-q.txt", domain));
    });

    after(function () {
        this.timeout(300_000);
        fly?.cleanup();
        inst?.stop();
    });

    it("Xid 79 lands the real worker within 10 s (fly workers: landing, landed)", async () => {
        inst!.kernel(kernelLine("xid-79", bus));
        const took = await inst!.until(() => ["landing", "landed"].includes(state()), 10_000, "fly workers to show the worker landing");
        console.log(`      (${state()} ${took} ms after the Xid)`);
        assert.match(inst!.journal(), /unhealthy: Xid 79: GPU has fallen off the bus/);
        await inst!.until(() => state() === "landed", 60_000, "the worker to be landed");
        await inst!.until(() => inst!.status(`systemctl is-active --quiet ${CONCOURSE_UNIT}`) !== 0, 30_000, "the landed worker's process to exit");
    });

    it("after the settle time the watcher starts it, and fly workers shows it running again", async () => {
        await inst!.until(() => state() === "running", 120_000, "fly workers to show the worker running again");
        assert.match(inst!.journal(), /started concourse-worker\.service again/);
    });
});
