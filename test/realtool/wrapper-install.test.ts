/**
 * install-runc-wrapper.sh: install then remove leaves the runtime binary identical, both
 * are idempotent, and an install after a package upgrade wrote a new runc over the
 * wrapper keeps that new runc. Once against a copy, once against the system's own runc.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/render/runc-wrapper";
import { buildTestWrapper, ensureWrapperTools, DEV_DIR, HOST_DIR, sh, sha256, tempDir, writeSettings } from "./wrapper-support";

const SCRIPT = path.join(HOST_DIR, "install-runc-wrapper.sh");

function script(args: string[]): { status: number | null; out: string } {
    const r = spawnSync("bash", [SCRIPT, ...args], { encoding: "utf8", timeout: 60_000 });
    return { status: r.status, out: r.stdout + r.stderr };
}

function mustRun(args: string[]): string {
    const r = script(args);
    assert.strictEqual(r.status, 0, r.out);
    return r.out;
}

describe("install-runc-wrapper.sh (real runc binary)", function () {
    this.timeout(300_000);
    let dir: string;
    let wrapper: string;

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-inst-");
        wrapper = buildTestWrapper(dir, path.join(dir, "runc-wrapper.json"));
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("on a copy: install twice, remove twice, the original comes back byte for byte with its mode", () => {
        const runc = path.join(dir, "copy", "runc");
        fs.mkdirSync(path.dirname(runc));
        fs.copyFileSync(sh("sh", ["-c", "command -v runc"]).trim(), runc);
        fs.chmodSync(runc, 0o751);
        const original = sha256(runc);
        const aside = path.join(dir, "copy-lib", "runc.real");
        const args = ["--runc", runc, "--wrapper", wrapper, "--aside", aside];
        assert.match(mustRun(["install", ...args]), /installed the wrapper/);
        assert.strictEqual(sha256(runc), sha256(wrapper));
        assert.strictEqual(sha256(aside), original);
        assert.match(mustRun(["install", ...args]), /already holds the wrapper/);
        assert.strictEqual(sha256(aside), original, "a second install does not capture the wrapper as the real runc");
        assert.match(mustRun(["remove", ...args]), /restored the real runc/);
        assert.strictEqual(sha256(runc), original);
        assert.strictEqual(fs.statSync(runc).mode & 0o777, 0o751);
        assert.ok(!fs.existsSync(aside) && !fs.existsSync(`${aside}.state`));
        assert.match(mustRun(["remove", ...args]), /not installed/);
        assert.strictEqual(sha256(runc), original);
    });

    it("a package upgrade over the wrapper: install keeps the new runc as the real one; remove leaves it", () => {
        const runc = path.join(dir, "upgrade", "runc");
        fs.mkdirSync(path.dirname(runc));
        fs.copyFileSync("/bin/true", runc);
        const aside = path.join(dir, "upgrade-lib", "runc.real");
        const args = ["--runc", runc, "--wrapper", wrapper, "--aside", aside];
        mustRun(["install", ...args]);
        fs.copyFileSync("/bin/false", `${runc}.new`);
        fs.renameSync(`${runc}.new`, runc); // what dpkg does on upgrade
        assert.match(mustRun(["install", ...args]), /keeping the new runc/);
        assert.strictEqual(sha256(aside), sha256("/bin/false"));
        assert.strictEqual(sha256(runc), sha256(wrapper));
        mustRun(["remove", ...args]);
        assert.strictEqual(sha256(runc), sha256("/bin/false"));
    });

    it("refuses a half-uploaded wrapper and a symlinked runc, changing nothing", () => {
        const runc = path.join(dir, "refuse", "runc");
        fs.mkdirSync(path.dirname(runc));
        fs.copyFileSync("/bin/true", runc);
        const aside = path.join(dir, "refuse-lib", "runc.real");
        const bad = script(["install", "--runc", runc, "--wrapper", wrapper, "--sha256", "0".repeat(64), "--aside", aside]);
        assert.notStrictEqual(bad.status, 0);
        assert.match(bad.out, /expected 0{64} \(incomplete upload\?\); nothing was changed/);
        assert.strictEqual(sha256(runc), sha256("/bin/true"));
        const link = path.join(dir, "refuse", "runc-link");
        fs.symlinkSync(runc, link);
        const linked = script(["install", "--runc", link, "--wrapper", wrapper, "--aside", aside]);
        assert.match(linked.out, /is a symlink/);
        assert.ok(!fs.existsSync(aside));
    });

    describe("against the system's own runc", () => {
        let systemRunc: string;
        let original: string;
        let aside: string;
        let backup: string;

        before(() => {
            systemRunc = sh("sh", ["-c", "command -v runc"]).trim();
            original = sha256(systemRunc);
            backup = path.join(dir, "system-runc.backup");
            fs.copyFileSync(systemRunc, backup);
            aside = path.join(dir, "system-lib", "runc.real");
            // While the wrapper is in place, runc calls on this machine go through it to the real runc.
            writeSettings(path.join(dir, "runc-wrapper.json"), renderWrapperConfig({
                plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                datasets: { root: path.join(dir, "no-datasets"), writableSuffixes: [] },
                realRuntime: aside,
                logPath: path.join(dir, "system.log"),
            }));
        });

        after(() => {
            // Whatever happened, the system's runc is the original again.
            if (systemRunc && sha256(systemRunc) !== original) {
                fs.copyFileSync(backup, `${systemRunc}.gw-restore`);
                fs.chmodSync(`${systemRunc}.gw-restore`, 0o755);
                fs.renameSync(`${systemRunc}.gw-restore`, systemRunc);
            }
        });

        it("install and remove (each twice) leave the system runc identical", () => {
            const args = ["--wrapper", wrapper, "--aside", aside];
            const mode = fs.statSync(systemRunc).mode;
            mustRun(["install", ...args]);
            mustRun(["install", ...args]);
            assert.strictEqual(sha256(systemRunc), sha256(wrapper));
            assert.strictEqual(sh(systemRunc, ["--version"]), sh(aside, ["--version"]), "runc keeps answering through the wrapper");
            mustRun(["remove", ...args]);
            mustRun(["remove", ...args]);
            assert.strictEqual(sha256(systemRunc), original);
            assert.strictEqual(fs.statSync(systemRunc).mode, mode);
        });
    });
});
