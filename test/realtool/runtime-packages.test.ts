/**
 * host/runtime-packages.sh in a Debian 12 LXD instance that lacks containerd and runc: real apt
 * installs them from a repository of the distribution's own packages (Debian's containerd and
 * runc, downloaded here, served to the instance as a local repository, since it has no network),
 * a second run changes nothing, remove purges only what its own ensure installed (the steps that
 * share the script each undo their own), and a package apt cannot find fails with apt's own words.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { ensureCommands } from "../support/tools";
import { makeScratch, scratchName } from "../support/scratch";
import { ensureLxdTools, REPO, TestDaemon } from "./lxd-support";

const INSTANCE = "gw-rt";
const SCRIPT = "/usr/local/lib/gpu-workers/runtime-packages.sh";

describe("runtime-packages.sh (real apt in an LXD instance)", function () {
    this.timeout(600_000);
    let daemon: TestDaemon;
    const work = scratchName("gw-rt-");
    const sh = (script: string) => daemon.lxcResult("exec", INSTANCE, "--", "bash", "-c", script);

    before(() => {
        makeScratch(work);
        ensureLxdTools();
        ensureCommands(["dpkg-scanpackages", "apt-get"], ["dpkg-dev", "apt"]);
        daemon = TestDaemon.start();
        daemon.importImage("debian-12");
        daemon.lxc("launch", "gpu-workers/debian-12", INSTANCE);
        // The distribution's packages, as a repository the instance reads from a folder.
        const repo = path.join(work, "repo");
        fs.mkdirSync(repo);
        execFileSync("apt-get", ["download", "containerd", "runc"], { cwd: repo, stdio: "ignore" });
        fs.writeFileSync(path.join(repo, "Packages"), execFileSync("dpkg-scanpackages", ["."], { cwd: repo, stdio: ["ignore", "pipe", "ignore"] }));
        daemon.lxc("file", "push", "-q", "-r", "--create-dirs", repo, `${INSTANCE}/srv/`);
        for (const script of ["runtime-packages.sh", "ownership.sh"]) {
            daemon.lxc(
                "file",
                "push",
                "-q",
                "--create-dirs",
                "--mode",
                "0755",
                path.join(REPO, "host", script),
                `${INSTANCE}/usr/local/lib/gpu-workers/${script}`,
            );
        }
        const r = sh(
            [
                "rm -f /etc/apt/sources.list.d/* && echo 'deb [trusted=yes] file:/srv/repo ./' > /etc/apt/sources.list",
                "apt-get update -qq",
                "systemctl disable --now containerd >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq containerd runc >/dev/null",
                "! command -v runc && ! command -v containerd",
            ].join(" && "),
        );
        assert.strictEqual(r.status, 0, r.stdout + r.stderr);
    });

    after(() => {
        daemon?.stop();
        fs.rmSync(work, { recursive: true, force: true });
    });

    it("check says what is missing; ensure installs it from the distribution's packages", () => {
        const check = sh(`${SCRIPT} check containerd=containerd runc=runc`);
        assert.strictEqual(check.status, 1);
        assert.match(check.stdout, /containerd is missing/);
        const r = sh(`${SCRIPT} ensure containerd=containerd runc=runc`);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, /installed containerd runc/);
        assert.strictEqual(sh("containerd --version && runc --version").status, 0);
        assert.strictEqual(sh(`${SCRIPT} check containerd=containerd runc=runc`).status, 0);
    });

    it("a second run changes nothing", () => {
        const r = sh(`${SCRIPT} ensure containerd=containerd runc=runc`);
        assert.strictEqual(r.stdout.trim(), "runtime-packages: present");
    });

    it("a package apt cannot find fails, with apt's words", () => {
        const r = sh(`${SCRIPT} ensure no-such-tool=no-such-package`);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /Unable to locate package no-such-package/);
        assert.match(r.stderr, /no-such-package missing, and apt-get could not install them from the distribution's packages/);
    });

    it("remove purges what its own ensure installed, and only that", () => {
        // The runc wrapper's step (runc=runc) found runc there: removing it takes nothing away,
        // not the runc that containerd's step installed and containerd needs.
        assert.strictEqual(sh(`${SCRIPT} ensure runc=runc`).stdout.trim(), "runtime-packages: present");
        assert.strictEqual(sh(`${SCRIPT} remove runc=runc`).status, 0);
        assert.strictEqual(sh("command -v containerd && test -x /usr/sbin/runc").status, 0, "containerd's step's packages stay");
        const r = sh(`${SCRIPT} remove containerd=containerd runc=runc`);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.notStrictEqual(sh("command -v containerd").status, 0, "containerd (installed by ensure) is gone");
        assert.notStrictEqual(sh("test -x /usr/sbin/runc").status, 0, "runc (installed by ensure) is gone");
        assert.strictEqual(sh("test -x /bin/bash").status, 0);
        assert.strictEqual(sh("ls /var/lib/gpu-workers | grep runtime-packages").stdout, "", "nothing left recorded");
    });

    it("the one list of an earlier version: remove purges that step's packages from it", () => {
        assert.strictEqual(
            sh(
                "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc >/dev/null && printf 'containerd\\nrunc\\n' > /var/lib/gpu-workers/runtime-packages.installed",
            ).status,
            0,
        );
        assert.strictEqual(sh(`${SCRIPT} remove containerd=containerd runc=runc`).status, 0);
        assert.notStrictEqual(sh("command -v containerd").status, 0);
        assert.strictEqual(sh("ls /var/lib/gpu-workers | grep runtime-packages").stdout, "", "the old list is gone too");
    });
});
