/**
 * install-runc-wrapper.sh: install then remove leaves the runtime binary identical, both
 * are idempotent, and an install after a package upgrade wrote a new runc over the
 * wrapper keeps that new runc. Once against a copy, once against the system's own runc.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { buildTestWrapper, ensureWrapperTools, HOST_DIR, sh, sha256, tempDir, writeSettings } from "./wrapper-support";

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
        // Installed over the system's runc below, it passes calls through to the runc set aside there.
        wrapper = buildTestWrapper(dir, path.join(dir, "runc-wrapper.json"), { realRunc: path.join(dir, "system-lib", "runc.real") });
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

    describe("runc's known container breakouts (--runc-cves)", () => {
        /** A runc that says it is `version` (it is what the check asks it), installed over by the wrapper in its own folder. */
        function fakeRunc(version: string): { runc: string; aside: string } {
            const d = fs.mkdtempSync(path.join(dir, "cve-"));
            const runc = path.join(d, "runc");
            fs.writeFileSync(runc, `#!/bin/sh\necho "runc version ${version}"\necho "commit: test"\n`, { mode: 0o755 });
            return { runc, aside: path.join(d, "runc.real") };
        }
        const warned = (out: string) => [...out.matchAll(/^gpu-workers-warning: runc \S+ at \S+ is open to (CVE-\d+-\d+): /gm)].map((m) => m[1]);
        const cases: [string, string[]][] = [
            ["1.0.0-rc6", ["CVE-2019-5736", "CVE-2021-30465", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.0.0-rc94", ["CVE-2021-30465", "CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.1.11", ["CVE-2024-21626", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.1.12", ["CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.2.7", ["CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.2.8", []],
            ["1.3.2", ["CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
            ["1.3.3", []],
            ["1.4.0", []],
            ["1.1.15+ds1", ["CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"]],
        ];
        for (const [version, cves] of cases) {
            it(`runc ${version}: ${cves.length ? cves.join(", ") : "none"}, named with the versions that fix each; installed anyway by default`, () => {
                const { runc, aside } = fakeRunc(version);
                const out = mustRun(["install", "--runc", runc, "--wrapper", wrapper, "--aside", aside]);
                assert.deepStrictEqual(warned(out), cves, out);
                if (cves.includes("CVE-2025-31133")) assert.match(out, /is open to CVE-2025-31133: .*; fixed in runc 1\.2\.8, 1\.3\.3, 1\.4\.0$/m);
                assert.strictEqual(sha256(runc), sha256(wrapper), "the wrapper is in place");
            });
        }

        it("--runc-cves refuse fails and changes nothing; a fixed runc is wrapped", () => {
            const open = fakeRunc("1.1.12");
            const before = sha256(open.runc);
            const r = script(["install", "--runc", open.runc, "--wrapper", wrapper, "--aside", open.aside, "--runc-cves", "refuse"]);
            assert.notStrictEqual(r.status, 0, r.out);
            assert.match(r.out, /refusing to wrap .*: it is open to 3 known container breakout\(s\) above \(--runc-cves refuse\)/);
            assert.strictEqual(sha256(open.runc), before, "runc is as it was");
            assert.ok(!fs.existsSync(open.aside), "nothing set aside");
            const fixed = fakeRunc("1.3.3");
            mustRun(["install", "--runc", fixed.runc, "--wrapper", wrapper, "--aside", fixed.aside, "--runc-cves", "refuse"]);
            assert.strictEqual(sha256(fixed.runc), sha256(wrapper));
        });
    });

    describe("killed before each of its commands (SIGKILL), the next install or remove finishes and the real runc is never lost", () => {
        // A DEBUG trap that bash reads from BASH_ENV before the script: it counts the script's
        // commands (functions and command substitutions included) and kills the script at one.
        let killer: string;
        let runcOriginal: Buffer;
        let wrapperNew: string;
        let work: string;

        before(() => {
            killer = path.join(dir, "kill-at-step.bash");
            fs.writeFileSync(
                killer,
                [
                    "set -o functrace",
                    "__gw_step=0",
                    `trap '__gw_step=$((__gw_step + 1)); if [ "$__gw_step" -eq "$GW_KILL_AT" ]; then kill -KILL $$; fi' DEBUG`,
                    "",
                ].join("\n"),
            );
            runcOriginal = fs.readFileSync(sh("sh", ["-c", "command -v runc"]).trim());
            // A newer build of the wrapper: another file for the installer (it never runs it).
            wrapperNew = path.join(dir, "runc-wrapper.new");
            fs.writeFileSync(wrapperNew, Buffer.concat([fs.readFileSync(wrapper), Buffer.from("newer build")]), { mode: 0o755 });
            // On a tmpfs, as the copies are many.
            work = fs.mkdtempSync(path.join(fs.existsSync("/dev/shm") ? "/dev/shm" : dir, "gw-kill-"));
        });

        after(() => {
            if (work) fs.rmSync(work, { recursive: true, force: true });
        });

        interface Host {
            dir: string;
            runc: string;
            aside: string;
            state: string;
            args: string[];
            real: string;
        }

        /** The runtime path of one scenario, brought to `start` with complete runs. */
        function host(name: string, start: "clean" | "installed" | "upgraded"): Host {
            const d = path.join(work, name);
            const runc = path.join(d, "bin", "runc");
            fs.mkdirSync(path.dirname(runc), { recursive: true });
            fs.writeFileSync(runc, runcOriginal, { mode: 0o755 });
            const aside = path.join(d, "lib", "runc.real");
            const args = ["--runc", runc, "--aside", aside];
            let real = sha256(runc);
            if (start !== "clean") mustRun(["install", ...args, "--wrapper", wrapper]);
            if (start === "upgraded") {
                // What dpkg does on an upgrade: a new runc written over the wrapper, in one rename.
                fs.writeFileSync(`${runc}.dpkg-new`, Buffer.concat([runcOriginal, Buffer.from("upgraded")]), { mode: 0o755 });
                fs.renameSync(`${runc}.dpkg-new`, runc);
                real = sha256(runc);
            }
            return { dir: d, runc, aside, state: `${aside}.state`, args, real };
        }

        /** Puts a saved copy of a host's folder back, modes and all. */
        const restore = (from: string, to: string) => {
            fs.rmSync(to, { recursive: true, force: true });
            sh("cp", ["-a", from, to]);
        };

        function killedAt(step: number, args: string[]): boolean {
            const r = spawnSync("bash", [SCRIPT, ...args], {
                encoding: "utf8",
                timeout: 60_000,
                env: { ...process.env, BASH_ENV: killer, GW_KILL_AT: String(step) },
            });
            if (r.signal === "SIGKILL") return true;
            assert.strictEqual(r.status, 0, `the uninterrupted run failed: ${r.stdout}${r.stderr}`);
            return false;
        }

        const exists = (p: string) => fs.existsSync(p);
        const sumOr = (p: string) => (exists(p) ? sha256(p) : "(none)");
        /** Every file of the folder with its checksum: equal fingerprints finish the same way. */
        const fingerprint = (d: string) => sh("sh", ["-c", 'cd "$1" && find . -type f -exec sha256sum {} + | sort', "sh", d]);

        /**
         * Kills `action` at step 1, 2, ... until it runs to its end. After each kill: the real
         * runc is at the runtime path or aside, and both ways of finishing (remove; install
         * then remove) end with it back at the runtime path. Returns the number of steps.
         */
        function everyStep(name: string, start: "clean" | "installed" | "upgraded", action: (h: Host) => string[]): number {
            const h = host(name, start);
            const initial = path.join(work, `${name}.initial`);
            const killed = path.join(work, `${name}.killed`);
            sh("cp", ["-a", h.dir, initial]);
            const finished = new Set<string>();
            let step = 1;
            for (; step < 500; step++) {
                restore(initial, h.dir);
                if (!killedAt(step, action(h))) break;
                const where = `${name}, killed before command ${step}`;
                assert.ok(sumOr(h.runc) === h.real || sumOr(h.aside) === h.real, `${where}: the real runc is neither at ${h.runc} nor at ${h.aside}`);
                const print = fingerprint(h.dir);
                if (finished.has(print)) continue; // the same files as at an earlier step
                finished.add(print);
                restore(h.dir, killed);
                // Finishing with remove: the real runc back in its place, nothing of ours left.
                mustRun(["remove", ...h.args]);
                assert.strictEqual(sumOr(h.runc), h.real, `${where}, then remove: ${h.runc} is not the real runc`);
                assert.ok(!exists(h.aside) && !exists(h.state), `${where}, then remove: ${h.aside} or its state is left`);
                assert.deepStrictEqual(fs.readdirSync(path.dirname(h.runc)), ["runc"], `${where}, then remove: partial copies are left`);
                // Finishing with install (a newer wrapper), then remove.
                restore(killed, h.dir);
                mustRun(["install", ...h.args, "--wrapper", wrapperNew]);
                assert.strictEqual(sumOr(h.runc), sha256(wrapperNew), `${where}, then install: the wrapper is not in place`);
                assert.strictEqual(sumOr(h.aside), h.real, `${where}, then install: ${h.aside} is not the real runc`);
                mustRun(["remove", ...h.args]);
                assert.strictEqual(sumOr(h.runc), h.real, `${where}, then install and remove: ${h.runc} is not the real runc`);
            }
            assert.ok(step > 10 && step < 500, `${name}: ran to its end at step ${step}`);
            assert.ok(finished.size >= 3, `${name}: only ${finished.size} different states on disk`);
            return step;
        }

        it("a first install", () => {
            everyStep("first", "clean", (h) => ["install", ...h.args, "--wrapper", wrapper]);
        });

        it("an update to a newer wrapper", () => {
            everyStep("update", "installed", (h) => ["install", ...h.args, "--wrapper", wrapperNew]);
        });

        it("an install after a package upgrade wrote a new runc over the wrapper", () => {
            everyStep("upgrade", "upgraded", (h) => ["install", ...h.args, "--wrapper", wrapper]);
        });

        it("a remove", () => {
            everyStep("remove", "installed", (h) => ["remove", ...h.args]);
        });
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
            writeSettings(
                path.join(dir, "runc-wrapper.json"),
                renderWrapperConfig({
                    plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                    datasets: { root: path.join(dir, "no-datasets"), writableSuffixes: [] },
                    realRuntime: aside,
                    logPath: path.join(dir, "system.log"),
                }),
            );
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
            const first = mustRun(["install", ...args]);
            // Debian 12's runc 1.1.5 is open to the 2025 breakouts; CVE-2024-21626 (fixed upstream in
            // 1.1.12) its package backported, which its changelog names, so it is not named.
            const changelog = sh("sh", ["-c", `zcat /usr/share/doc/$(dpkg -S "$(readlink -f ${systemRunc})" | cut -d: -f1)/changelog.Debian.gz`]);
            const warned = [...first.matchAll(/^gpu-workers-warning: runc \S+ at \S+ \(package runc\) is open to (CVE-\d+-\d+): /gm)].map((m) => m[1]);
            if (sh(systemRunc, ["--version"]).startsWith("runc version 1.1.5+ds1") && changelog.includes("CVE-2024-21626"))
                assert.deepStrictEqual(warned, ["CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"], first);
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
