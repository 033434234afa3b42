/**
 * host/gpu-health.sh, the watcher's installer, in real bash with the fake systemctl of the host
 * script tests (test/fixtures/host-scripts/bin): it enables and starts the unit, restarts it
 * only when a watched file changed or it stopped, checks that, and its remove takes back what
 * it made (the unit's enablement, its stamp, the status folder) and nothing else.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { HEALTH_UNIT } from "../../components/lib/links/gpu-health/render";

const SCRIPT = path.join(PACKAGE_ROOT, "host", "gpu-health.sh");
const FAKES = path.join(PACKAGE_ROOT, "test", "fixtures", "host-scripts", "bin");

describe("gpu-health.sh (real bash, fake systemctl)", () => {
    let dir: string;
    let watched: string[];
    let statusDir: string;
    const run = (action: string, extra: string[] = []) => {
        const r = spawnSync("bash", [SCRIPT, action, "--unit", HEALTH_UNIT, "--state-dir", statusDir, ...extra], {
            encoding: "utf8",
            env: {
                PATH: `${path.join(dir, "bin")}:${process.env.PATH}`,
                FAKE_DIR: path.join(dir, "fake"),
                FAKE_LOG: path.join(dir, "calls.log"),
                GPU_WORKERS_STATE_DIR: path.join(dir, "state"),
            },
        });
        assert.doesNotMatch(`${r.stdout}${r.stderr}`, /^fake systemctl:/m);
        return r;
    };
    const watchArgs = () => watched.flatMap((w) => ["--watch", w]);
    const calls = () => fs.readFileSync(path.join(dir, "calls.log"), "utf8").split("\n").filter(Boolean);
    const restarts = () => calls().filter((c) => c.startsWith("systemctl restart"));
    const active = path.join("fake", "systemd", "active", HEALTH_UNIT.replace(/\.service$/, ""));

    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-health-installer-"));
        fs.mkdirSync(path.join(dir, "bin"));
        fs.copyFileSync(path.join(FAKES, "systemctl"), path.join(dir, "bin", "systemctl"));
        fs.chmodSync(path.join(dir, "bin", "systemctl"), 0o755);
        fs.writeFileSync(path.join(dir, "calls.log"), "");
        watched = ["gpu-health-watch.sh", "gpu-health.conf", HEALTH_UNIT].map((f) => path.join(dir, f));
        for (const f of watched) fs.writeFileSync(f, `${path.basename(f)}\n`);
        statusDir = path.join(dir, "run", "gpu-workers", "health");
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("ensure enables and starts the unit once; a second ensure changes nothing", () => {
        const first = run("ensure", watchArgs());
        assert.strictEqual(first.status, 0, first.stderr);
        assert.strictEqual(first.stdout, "restarted\n");
        assert.ok(calls().includes("systemctl daemon-reload"));
        assert.ok(calls().includes(`systemctl enable ${HEALTH_UNIT}`));
        const second = run("ensure", watchArgs());
        assert.strictEqual(second.status, 0, second.stderr);
        assert.strictEqual(second.stdout, "");
        assert.deepStrictEqual(restarts(), [`systemctl restart ${HEALTH_UNIT}`]);
        assert.strictEqual(run("check", watchArgs()).status, 0);
    });

    it("a changed config, or a stopped watcher, restarts it; check notices both first", () => {
        run("ensure", watchArgs());
        fs.appendFileSync(watched[1], "poll-seconds 5\n");
        assert.match(run("check", watchArgs()).stderr, /started from other files/);
        assert.strictEqual(run("ensure", watchArgs()).stdout, "restarted\n");
        fs.rmSync(path.join(dir, active));
        assert.match(run("check", watchArgs()).stderr, /is not running/);
        assert.strictEqual(run("ensure", watchArgs()).stdout, "restarted\n");
        assert.strictEqual(restarts().length, 3);
    });

    it("refuses a watched file that is not there, naming it", () => {
        const r = run("ensure", [...watchArgs(), "--watch", path.join(dir, "absent.conf")]);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /absent\.conf is missing/);
    });

    it("remove stops and disables it and deletes the status folder and stamp, twice without harm; a shared parent stays", () => {
        run("ensure", watchArgs());
        fs.mkdirSync(statusDir, { recursive: true });
        fs.writeFileSync(path.join(statusDir, "status"), "healthy\n");
        fs.writeFileSync(path.join(statusDir, "..", "metrics.prom"), "");
        for (let i = 0; i < 2; i++) assert.strictEqual(run("remove").status, 0);
        assert.ok(calls().includes(`systemctl disable --now ${HEALTH_UNIT}`));
        assert.ok(!fs.existsSync(path.join(dir, active)));
        assert.ok(!fs.existsSync(statusDir));
        assert.ok(fs.existsSync(path.join(statusDir, "..", "metrics.prom")), "another's file in the parent stays");
        assert.deepStrictEqual(fs.readdirSync(path.join(dir, "state")), []);
        fs.rmSync(path.join(statusDir, "..", "metrics.prom"));
        assert.strictEqual(run("remove").status, 0);
        assert.ok(!fs.existsSync(path.dirname(statusDir)), "an empty parent goes");
    });
});
