/**
 * metrics.dcgmJobMappingDir: root makes that folder and writes and removes files there, so it is
 * held to a folder of its own that no task and no other user can write: never in the dataset
 * root or the work dir (the host's own, defaults merged), nor where the dataset root may not go
 * (system folders, /tmp), nor a folder other software shares. On the stack, on a GpuWorker, and on
 * a RuncWrapper used alone. (The host's modes and links are the wrapper's to check: wrapper/safepath.go.)
 */
import * as assert from "assert";
import { workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { PlanError } from "../../components/lib/gpu/plan";
import { planRuncWrapper } from "../../components/lib/links/runc-wrapper/plan";
import { WRAPPER_STATE_DIR } from "../../components/lib/links/runc-wrapper/render";
import { HGX_H100_8X, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const REASON = "root writes and removes dcgm-exporter's job-mapping files there; give a folder of its own that only root can write, such as /run/dcgm-jobs";

function withMapping(dir: string, extra: Record<string, unknown> = {}): string[] {
    return problemsOf(stackWith({ name: "a", inventory: HGX_H100_8X, extra: { metrics: { dcgmJobMappingDir: dir }, ...extra } }));
}

describe("metrics.dcgmJobMappingDir: a folder of its own that only root writes", () => {
    it("the review's places are each refused at the setting's path, saying why", () => {
        assert.deepStrictEqual(withMapping("/srv/scratch_rw/dcgm/jobs"), [
            "hosts[0].metrics.dcgmJobMappingDir: /srv/scratch_rw/dcgm/jobs is inside datasets.root /srv: every task gets the dataset root, and one that can write a folder there could make root write elsewhere",
        ]);
        assert.deepStrictEqual(withMapping("/srv"), [`hosts[0].metrics.dcgmJobMappingDir: /srv is a folder other software shares: ${REASON}`]);
        assert.deepStrictEqual(withMapping("/etc"), [`hosts[0].metrics.dcgmJobMappingDir: /etc is a system folder: ${REASON}`]);
        assert.deepStrictEqual(withMapping("/usr/bin"), [`hosts[0].metrics.dcgmJobMappingDir: /usr/bin is in /usr, a system folder: ${REASON}`]);
        assert.deepStrictEqual(withMapping("/tmp/jobs"), [
            `hosts[0].metrics.dcgmJobMappingDir: /tmp/jobs is in /tmp, which every user may write to: ${REASON}`,
        ]);
    });

    it("what the dataset root refuses, and the folders other software shares", () => {
        const refused = [
            ...["/", "/bin/x", "/boot", "/dev/x", "/etc/dcgm", "/lib/x", "/proc/x", "/root/x", "/sbin/x", "/sys/x", "/usr/local/dcgm"],
            ...["/var", "/var/lib", "/var/cache", "/var/run/dcgm", "/var/lock/x", "/var/log/dcgm", "/var/lib/docker/x", "/var/lib/gpu-workers/x"],
            ...["/home/ml/dcgm", "/var/tmp/x", "/media", "/mnt", "/opt"],
        ];
        for (const dir of refused) assert.strictEqual(withMapping(dir).length, 1, dir);
    });

    it("/run: a folder of its own there is fine; /run itself, what users write there and the wrapper's own state are not", () => {
        for (const own of ["/run/dcgm-jobs", "/run/dcgm/jobs", "/var/lib/dcgm-jobs", "/data/dcgm"]) assert.deepStrictEqual(withMapping(own), [], own);
        assert.deepStrictEqual(withMapping("/run"), [`hosts[0].metrics.dcgmJobMappingDir: /run is a system folder: ${REASON}`]);
        for (const tree of ["/run/lock", "/run/shm", "/run/user", WRAPPER_STATE_DIR]) {
            assert.deepStrictEqual(
                withMapping(`${tree}/dcgm`),
                [`hosts[0].metrics.dcgmJobMappingDir: ${tree}/dcgm is in ${tree}, which users or the runc wrapper itself write to: ${REASON}`],
                tree,
            );
            assert.strictEqual(withMapping(tree).length, 1, tree);
        }
    });

    it("the host's own dataset root and work dir, defaults merged: the mapping folder is neither, nor inside either", () => {
        assert.deepStrictEqual(withMapping("/data", { datasets: { root: "/data" } }), [
            "hosts[0].metrics.dcgmJobMappingDir: /data is datasets.root /data: every task gets the dataset root, and one that can write a folder there could make root write elsewhere",
        ]);
        assert.deepStrictEqual(withMapping("/opt/concourse/worker/dcgm"), [
            "hosts[0].metrics.dcgmJobMappingDir: /opt/concourse/worker/dcgm is inside concourse.workDir /opt/concourse/worker: Concourse keeps its containers' volumes there, and destroy deletes it",
        ]);
        assert.match(withMapping("/w", { concourse: { workDir: "/w" } })[0], /^hosts\[0\]\.metrics\.dcgmJobMappingDir: \/w is concourse\.workDir \/w:/);
        // The dataset root from the stack's defaults, the mapping folder from the host.
        const raw = stackWith({ name: "a", inventory: HGX_H100_8X, extra: { metrics: { dcgmJobMappingDir: "/data/sets/dcgm" } } });
        (raw.defaults as Record<string, unknown>).datasets = { root: "/data/sets" };
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0].metrics.dcgmJobMappingDir: /data/sets/dcgm is inside datasets.root /data/sets: every task gets the dataset root, and one that can write a folder there could make root write elsewhere",
        ]);
    });

    it("a GpuWorker made without the stack refuses it too, naming the field", () => {
        const args = (dir: string) => ({
            transport: { ssh: { host: "10.0.0.1", privateKey: "k", hostKey: HOST_KEY } },
            inventory: HGX_H100_8X as never,
            datasets: { root: "/data" },
            metrics: { dcgmJobMappingDir: dir },
        });
        assert.throws(() => workerSpec("w", args("/data/dcgm")), /GpuWorker w: metrics\.dcgmJobMappingDir: \/data\/dcgm is inside datasets\.root \/data/);
        assert.throws(() => workerSpec("w", args("/tmp/jobs")), /GpuWorker w: metrics\.dcgmJobMappingDir: \/tmp\/jobs is in \/tmp/);
        assert.doesNotThrow(() => workerSpec("w", args("/run/dcgm-jobs")));
    });

    it("a RuncWrapper used alone holds it to the same rules, against its own dataset root", () => {
        const wrapperBinary = { path: "dist/wrapper/runc-wrapper", sha256: "4".repeat(64) };
        const inventory = inventorySchema.parse(HGX_H100_8X);
        const plan = (dir: string, root?: string) =>
            planRuncWrapper({ inventory, wrapperBinary, metrics: { dcgmJobMappingDir: dir }, ...(root ? { datasets: { root } } : {}) });
        const refused = (dir: string, root: string | undefined, message: RegExp) =>
            assert.throws(
                () => plan(dir, root),
                (e: unknown) => e instanceof PlanError && e.path === "metrics.dcgmJobMappingDir" && message.test(e.message),
                dir,
            );
        refused("/srv/scratch_rw/dcgm/jobs", undefined, /is inside datasets\.root \/srv/);
        refused("/data/x", "/data", /is inside datasets\.root \/data/);
        refused("/usr/bin", undefined, /is in \/usr, a system folder/);
        refused("/tmp/jobs", undefined, /is in \/tmp, which every user may write to/);
        refused("dcgm", undefined, /expected an absolute path/);
        assert.strictEqual(plan("/run/dcgm-jobs").gpuJobs?.mappingDir, "/run/dcgm-jobs");
    });
});
