/**
 * The race of issue 18, point 2, with real runc: a task that can write a writable dataset
 * swaps a folder that a link of the root leads through for a link of its own, in a tight
 * loop (renameat2 RENAME_EXCHANGE), while other containers are created through the wrapper.
 * A wrapper that resolves the link on the host, after which runc follows the path again,
 * gets some of them a folder outside the root, or a read-only dataset, mounted read-write.
 * The wrapper must resolve nothing a task can change: every victim sees only the root,
 * read-only, and the writable datasets, and no write of theirs reaches a foreign folder or
 * the read-only dataset.
 *
 * The tree lives on a tmpfs of the test's own, so each mount's source within its file
 * system (mountinfo's fourth field) names the folder it shows, whatever the machine's /tmp.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import {
    buildStaticC,
    buildTestWrapper,
    ensureWrapperTools,
    makeBundle,
    makeBusyboxRootfs,
    sh,
    tempDir,
    unescapeMountinfo,
    writeSettings,
} from "./wrapper-support";

/** Swaps DIR/a with DIR/b, then DIR/a with DIR/c, forever (renameat2 has no busybox applet). */
const ATTACKER = String.raw`
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
int main(int argc, char **argv) {
	if (argc != 5) return 2;
	int dir = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dir < 0) { perror(argv[1]); return 1; }
	printf("swapping\n");
	fflush(stdout);
	for (unsigned long n = 0;; n++) {
		const char *other = (n / 2) % 2 ? argv[4] : argv[3];
		if (syscall(SYS_renameat2, dir, argv[2], dir, other, RENAME_EXCHANGE) != 0) { perror("renameat2"); return 1; }
	}
}
`;

const VICTIMS = 40;

describe("runc wrapper: a task swapping a link's path under other containers' creates (real runc)", function () {
    this.timeout(600_000);
    let dir: string;
    let fsRoot: string;
    let settingsPath: string;
    let wrapper: string;
    let rootfs: string;
    let datasets: string;
    let foreign: string;
    let attacker = "";
    const runcRoot = () => path.join(dir, "runc-root");
    const runc = () => sh("sh", ["-c", "command -v runc"]).trim();

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-race-");
        fs.chmodSync(dir, 0o755);
        fsRoot = path.join(dir, "fs");
        fs.mkdirSync(fsRoot);
        sh("mount", ["-t", "tmpfs", "-o", "size=16m,mode=0755", "gw-race", fsRoot]);
        settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        buildStaticC(ATTACKER, path.join(rootfs, "bin", "swap"));
        datasets = path.join(fsRoot, "srv");
        foreign = path.join(fsRoot, "foreign");
        fs.mkdirSync(foreign);
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.writeFileSync(path.join(datasets, "models", "weights.bin"), "w");
        fs.mkdirSync(path.join(datasets, "scratch_rw", "team"), { recursive: true });
        fs.chmodSync(path.join(datasets, "scratch_rw"), 0o1777);
        // The operator's link: a team's writable folder inside the shared scratch space.
        fs.symlinkSync("scratch_rw/team", path.join(datasets, "team_rw"));
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                datasets: { root: datasets, writableSuffixes: ["_rw"] },
                realRuntime: runc(),
                logPath: path.join(dir, "wrapper.log"),
            }),
        );
    });

    after(() => {
        if (attacker) spawnSync(runc(), ["--root", runcRoot(), "delete", "--force", attacker], { stdio: "ignore" });
        if (fsRoot) spawnSync("umount", ["-l", fsRoot], { stdio: "ignore" });
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it(`${VICTIMS} containers created while a task swaps scratch_rw/team for links to models and to a foreign folder: none gets a foreign or read-only folder writable`, () => {
        const fsDev = fs
            .readFileSync("/proc/self/mountinfo", "utf8")
            .split("\n")
            .map((l) => l.split(" "))
            .find((f) => f[4] === fsRoot)?.[2];
        assert.ok(fsDev, `the test's tmpfs at ${fsRoot} is mounted`);
        // The attacker: a container through the wrapper, with scratch_rw writable like any task's.
        attacker = `atk${process.pid}`;
        const scratch = `${datasets}/scratch_rw`;
        const atkBundle = makeBundle(path.join(dir, "bundles", attacker), rootfs, [
            "sh",
            "-c",
            `cd ${scratch} && ln -s ../models evil-models && ln -s ${foreign} evil-foreign && exec swap ${scratch} team evil-models evil-foreign`,
        ]);
        const atkOut = path.join(dir, "attacker.out");
        const out = fs.openSync(atkOut, "w");
        const created = spawnSync(wrapper, ["--root", runcRoot(), "create", "--bundle", atkBundle, attacker], { stdio: ["ignore", out, out], timeout: 60_000 });
        fs.closeSync(out);
        assert.strictEqual(created.status, 0, fs.readFileSync(atkOut, "utf8"));
        sh(runc(), ["--root", runcRoot(), "start", attacker]);
        for (let i = 0; i < 100 && !fs.readFileSync(atkOut, "utf8").includes("swapping"); i++) spawnSync("sleep", ["0.05"]);
        assert.match(fs.readFileSync(atkOut, "utf8"), /^swapping\n$/, "the attacker runs");

        const violations: string[] = [];
        for (let n = 0; n < VICTIMS; n++) {
            const id = `victim${process.pid}-${n}`;
            const bundle = makeBundle(path.join(dir, "bundles", id), rootfs, [
                "sh",
                "-c",
                `cat /proc/self/mountinfo; echo "-- writes"; echo ${id} >> ${datasets}/team_rw/${id} 2>/dev/null && echo "wrote team_rw"; echo ${id} >> ${datasets}/models/${id} 2>/dev/null && echo "wrote models"; true`,
            ]);
            const outFile = path.join(dir, `${id}.out`);
            const fd = fs.openSync(outFile, "w");
            const r = spawnSync(wrapper, ["--root", runcRoot(), "run", "--bundle", bundle, id], { stdio: ["ignore", fd, fd], timeout: 60_000 });
            fs.closeSync(fd);
            const text = fs.readFileSync(outFile, "utf8");
            if (r.status !== 0) {
                // A create that fails (runc found a link where it wanted a folder) mounts nothing: no escape, but say what happened.
                assert.doesNotMatch(text, /-- writes/, text);
                continue;
            }
            for (const line of text.split("-- writes")[0].split("\n")) {
                const [left, right] = line.split(" - ");
                const fields = left.split(" ");
                if (right === undefined || fields.length < 6) continue;
                const point = unescapeMountinfo(fields[4]);
                if (point !== datasets && !point.startsWith(`${datasets}/`)) continue;
                const shows = unescapeMountinfo(fields[3]); // what the mount shows, within its file system
                const writable = !fields[5].split(",").includes("ro");
                const inRoot = fields[2] === fsDev && (shows === "/srv" || shows.startsWith("/srv/"));
                const inWritable = shows === "/srv/scratch_rw" || shows.startsWith("/srv/scratch_rw/");
                if (!inRoot) violations.push(`${id}: ${point} shows ${fields[2]} ${shows}, outside the dataset root`);
                else if (writable && !inWritable) violations.push(`${id}: ${point} shows ${shows} read-write, a read-only dataset`);
            }
            if (/wrote models/.test(text)) violations.push(`${id}: wrote into the read-only dataset models`);
        }
        const foreignFiles = fs.readdirSync(foreign);
        const modelFiles = fs.readdirSync(path.join(datasets, "models")).filter((f) => f !== "weights.bin");
        assert.match(fs.readFileSync(atkOut, "utf8"), /^swapping\n$/, "the attacker kept swapping throughout");
        assert.deepStrictEqual({ violations, foreignFiles, modelFiles }, { violations: [], foreignFiles: [], modelFiles: [] });
    });
});
