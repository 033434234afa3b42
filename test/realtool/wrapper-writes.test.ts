/**
 * How the wrapper writes the file it edits, seen with strace up to its hand-over to the real
 * runc: a temp file renamed over the original, and no fsync. The files (a bundle's config.json,
 * the process file of one `runc exec`) are read by runc at once and die with the machine; an
 * fsync would only make a create or an exec wait for the worker's disk.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { ensureCommands } from "../support/tools";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, tempDir, writeSettings } from "./wrapper-support";

const SYNC_CALLS = ["fsync", "fdatasync", "sync", "syncfs", "sync_file_range"];

describe("runc wrapper writes (real runc, strace)", function () {
    this.timeout(300_000);
    let dir: string;
    let wrapper: string;
    let rootfs: string;
    const realRunc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const runcRoot = () => path.join(dir, "runc-root");

    before(() => {
        ensureWrapperTools();
        ensureCommands(["strace"], ["strace"]);
        dir = tempDir("gw-writes-");
        const settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        fs.mkdirSync(path.join(dir, "datasets", "models"), { recursive: true });
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { env: { NVIDIA_VISIBLE_DEVICES: "0" }, unsetEnv: ["AMD_VISIBLE_DEVICES"], deviceNodes: [] },
                datasets: { root: path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
                realRuntime: realRunc(),
                logPath: path.join(dir, "wrapper.log"),
            }),
        );
    });

    after(() => {
        spawnSync(realRunc(), ["--root", runcRoot(), "delete", "--force", "writes1"], { stdio: "ignore" });
        fs.rmSync(dir, { recursive: true, force: true });
    });

    /** The wrapper's calls before the real runc takes its process over. */
    function traced(args: string[]): string[] {
        const out = path.join(dir, "trace.txt");
        // -b execve: stop following at the hand-over (runc's own work is not the wrapper's).
        spawnSync(
            "strace",
            ["-f", "-b", "execve", "-o", out, "-e", `trace=execve,rename,renameat,renameat2,${SYNC_CALLS.join(",")}`, wrapper, "--root", runcRoot(), ...args],
            { stdio: "ignore", timeout: 60_000 },
        );
        const lines = fs.readFileSync(out, "utf8").split("\n");
        // The hand-over passes the caller's arguments on (a child may have run `runc features` before).
        const handover = lines.findIndex((l) => l.includes(`execve("${realRunc()}", ["${realRunc()}", "--root"`));
        assert.ok(handover > 0, `the real runc was not exec'ed:\n${lines.join("\n")}`);
        return lines.slice(0, handover);
    }

    function assertRenamedWithoutSync(calls: string[], file: string): void {
        const syncs = calls.filter((l) => SYNC_CALLS.some((c) => l.includes(` ${c}(`) || new RegExp(`^\\d+ +${c}\\(`).test(l)));
        assert.deepStrictEqual(syncs, [], `no sync call before the hand-over; got:\n${syncs.join("\n")}`);
        const renames = calls.filter((l) => /rename(at2?)?\(/.test(l) && l.includes(`"${file}"`));
        assert.strictEqual(renames.length, 1, `one rename onto ${file}; got:\n${calls.join("\n")}`);
        assert.match(renames[0], / = 0$/);
    }

    it("create: config.json is replaced by one rename, with no fsync", () => {
        const bundle = makeBundle(path.join(dir, "bundle"), rootfs, ["true"]);
        const calls = traced(["create", "--bundle", bundle, "writes1"]);
        assertRenamedWithoutSync(calls, path.join(bundle, "config.json"));
        assert.ok(fs.readFileSync(path.join(bundle, "config.json"), "utf8").includes("NVIDIA_VISIBLE_DEVICES=0"), "the edit reached the file");
    });

    it("exec: the process file is replaced by one rename, with no fsync", () => {
        const processFile = path.join(dir, "process.json");
        fs.writeFileSync(processFile, JSON.stringify({ args: ["true"], env: ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=all"], cwd: "/" }));
        // No such container: the real runc refuses after the hand-over, which is not what is traced.
        const calls = traced(["exec", "--process", processFile, "no-such-container"]);
        assertRenamedWithoutSync(calls, processFile);
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(processFile, "utf8")).env, ["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=0"]);
    });
});
