/**
 * install-runc-wrapper.sh remove (what `down` runs) takes back the wrapper's GPU job records and
 * what the wrapper made for dcgm-exporter: the mapping files it wrote and the folders it made,
 * and nothing else. The records come from a real create through a wrapper variant over the real
 * runc; the container is then deleted by runc alone, as a worker killed mid-build leaves it.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { buildTestWrapper, ensureWrapperTools, HOST_DIR, makeBundle, makeBusyboxRootfs, sh, tempDir, writeSettings } from "./wrapper-support";

const SCRIPT = path.join(HOST_DIR, "install-runc-wrapper.sh");

describe("install-runc-wrapper.sh remove: the wrapper's GPU job records and dcgm-exporter mapping (real runc)", function () {
    this.timeout(300_000);
    let dir: string;
    let wrapper: string;
    let rootfs: string;
    const realRunc = () => sh("sh", ["-c", "command -v runc"]).trim();
    const settingsPath = () => path.join(dir, "runc-wrapper.json");
    const records = () => path.join(dir, "run", "gpu-jobs");
    let count = 0;

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-remove-jobs-");
        wrapper = buildTestWrapper(dir, settingsPath());
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        fs.mkdirSync(path.join(dir, "datasets"));
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    /** A container created through the wrapper with this mapping folder, then deleted by runc alone: its records stay. */
    function leftover(mapping: string): void {
        writeSettings(
            settingsPath(),
            renderWrapperConfig({
                plan: { env: {}, unsetEnv: [], deviceNodes: [] },
                datasets: { root: path.join(dir, "datasets"), writableSuffixes: ["_rw"] },
                realRuntime: realRunc(),
                logPath: path.join(dir, "wrapper.log"),
                gpuJobs: { gpus: [0, 1], mappingDir: mapping },
            }),
        );
        const id = `left-${count++}`;
        const bundle = makeBundle(path.join(dir, `bundle-${id}`), rootfs, ["sleep", "30"]);
        const root = path.join(dir, "runc-root");
        const out = fs.openSync(path.join(dir, "create.out"), "w");
        const r = spawnSync(wrapper, ["--root", root, "create", "--bundle", bundle, id], { stdio: ["ignore", out, out], timeout: 60_000 });
        fs.closeSync(out);
        assert.strictEqual(r.status, 0, fs.readFileSync(path.join(dir, "create.out"), "utf8"));
        sh(realRunc(), ["--root", root, "delete", "--force", id]);
        for (const gpu of ["0", "1"]) assert.strictEqual(fs.readFileSync(path.join(mapping, gpu), "utf8"), `${id}\n`, "the wrapper wrote the mapping");
    }

    /** install over a copy of runc, then remove with the records named, as the RuncWrapper step does. */
    function installThenRemove(): string {
        const where = fs.mkdtempSync(path.join(dir, "runc-"));
        const runc = path.join(where, "runc");
        fs.copyFileSync(realRunc(), runc);
        const args = ["--runc", runc, "--wrapper", wrapper, "--aside", path.join(where, "runc.real")];
        for (const action of [
            ["install", ...args],
            ["remove", ...args, "--jobs", records()],
        ]) {
            const r = spawnSync("bash", [SCRIPT, ...action], { encoding: "utf8", timeout: 60_000 });
            assert.strictEqual(r.status, 0, r.stdout + r.stderr);
            if (action[0] === "remove") return r.stdout;
        }
        return "";
    }

    /** A folder that was there before, root's, with a file of someone else's. */
    function theirs(folder: string, ...files: string[]): void {
        fs.mkdirSync(folder, { mode: 0o755 });
        for (const f of files) fs.writeFileSync(path.join(folder, f), "not the wrapper's\n");
    }

    const list = (folder: string) => fs.readdirSync(folder).sort();

    it("takes back the mapping files and the folders the wrapper made, up to a folder that was there before", () => {
        const pre = path.join(dir, "pre");
        theirs(pre, "theirs");
        leftover(path.join(pre, "made", "jobs"));
        assert.match(installThenRemove(), /removed the wrapper's GPU job records .* and its dcgm-exporter mapping files in .*\/pre\/made\/jobs/);
        assert.ok(!fs.existsSync(records()), "the records are gone");
        assert.deepStrictEqual(list(pre), ["theirs"], "the folders the wrapper made are gone; the one that was there, and its file, stay");
        assert.ok(fs.existsSync(path.join(dir, "run")), "the wrapper's state folder itself stays");
    });

    it("a mapping folder that was there before: only the GPU files the wrapper wrote go", () => {
        const existing = path.join(dir, "existing");
        theirs(existing, "theirs", "7");
        leftover(existing);
        installThenRemove();
        assert.deepStrictEqual(list(existing), ["7", "theirs"]);
        assert.ok(!fs.existsSync(records()));
    });

    it("a folder the wrapper made, where another file was put since, stays with that file", () => {
        const pre = path.join(dir, "pre2");
        theirs(pre);
        leftover(path.join(pre, "made", "jobs"));
        fs.writeFileSync(path.join(pre, "made", "later"), "x\n");
        installThenRemove();
        assert.deepStrictEqual(list(path.join(pre, "made")), ["later"], "jobs, emptied, went; made holds another file");
    });

    it("removes nothing through a link or a folder others can change", () => {
        const cases: { name: string; why: RegExp; change: (pre: string, outside: string) => void }[] = [
            // A link where the wrapper made a folder: the copy outside holds the mapping files, or an empty jobs folder.
            { name: "a link with the files behind it", why: /\/made is a link or no folder/, change: (pre, outside) => plant(pre, outside, true) },
            { name: "a link with an empty folder behind it", why: /\/made is a link or no folder/, change: (pre, outside) => plant(pre, outside, false) },
            {
                name: "the mapping folder writable by all, sticky",
                why: /others may write \S+\/jobs \(mode 1777\)/,
                change: (pre) => fs.chmodSync(path.join(pre, "made", "jobs"), 0o1777),
            },
            {
                name: "a folder above writable by its group",
                why: /others may write \S+\/made \(mode 775\)/,
                change: (pre) => fs.chmodSync(path.join(pre, "made"), 0o775),
            },
            {
                name: "a folder above owned by nobody",
                why: /\/made is not root's \(owner uid 65534\)/,
                change: (pre) => fs.chownSync(path.join(pre, "made"), 65534, 65534),
            },
        ];
        function plant(pre: string, outside: string, files: boolean): void {
            const made = path.join(pre, "made");
            fs.cpSync(made, outside, { recursive: true });
            if (!files) for (const f of fs.readdirSync(path.join(outside, "jobs"))) fs.rmSync(path.join(outside, "jobs", f));
            fs.renameSync(made, `${made}.real`);
            fs.symlinkSync(outside, made);
        }
        cases.forEach((c, i) => {
            const pre = path.join(dir, `unsafe-${i}`);
            theirs(pre);
            const mapping = path.join(pre, "made", "jobs");
            leftover(mapping);
            const outside = path.join(dir, `outside-${i}`);
            c.change(pre, outside);
            const before = fs.existsSync(outside) ? list(path.join(outside, "jobs")) : list(mapping);
            assert.match(installThenRemove(), new RegExp(`leaving the dcgm-exporter mapping files in ${mapping}: .*${c.why.source}`), c.name);
            assert.deepStrictEqual(fs.existsSync(outside) ? list(path.join(outside, "jobs")) : list(mapping), before, c.name);
        });
        // The records' folder itself, writable by others: left as it is.
        leftover(path.join(dir, "unsafe-records"));
        fs.chmodSync(records(), 0o777);
        assert.match(installThenRemove(), /leaving the GPU job records .* as they are: others may write \S+\/gpu-jobs \(mode 777\)/);
        assert.ok(fs.existsSync(path.join(records(), "0")));
        fs.chmodSync(records(), 0o755);
    });
});
