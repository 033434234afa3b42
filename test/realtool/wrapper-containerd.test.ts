/**
 * The wrapper on the real path of a container: a private containerd started with the
 * config rendered for Concourse's containerd, the ctr client creating containers through
 * containerd's plain API with no runtime options (as Concourse does), the runc.v2 shim
 * running the first `runc` on PATH, which install-runc-wrapper.sh made the wrapper, and
 * the real runc behind it. Every assertion is made from inside the container.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { spawnSync } from "child_process";
import { renderConcourseContainerdConfig } from "../../components/lib/links/containerd/render";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planWorkerGpus } from "../../components/lib/gpu/plan";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { HGX_H100_8X } from "../fixtures/stacks/inventories";
import { buildTestWrapper, ensureWrapperTools, makeBusyboxImage, mountsBelow, HOST_DIR, sh, TestContainerd, tempDir, writeSettings } from "./wrapper-support";

const NS = `gwtest${process.pid}`;
const IMAGE = "gpu-workers.test/busybox:latest";
const SEP = "\u0001";

describe("runc wrapper through containerd (real containerd, shim, runc)", function () {
    this.timeout(600_000);
    let dir: string;
    let settingsPath: string;
    let wrapper: string;
    let realRunc: string;
    let device: string;
    let datasets: string;
    let containerd: TestContainerd;
    let counter = 0;
    const plan = planWorkerGpus(inventorySchema.parse(HGX_H100_8X), {
        selection: [1, 3],
        cdi: false,
        fabricManager: { mode: "off", partitions: [] },
        extraTags: [],
    });

    function settings(root: string): void {
        writeSettings(
            settingsPath,
            renderWrapperConfig({
                plan: { ...plan, deviceNodes: [device] },
                datasets: { root, writableSuffixes: ["_writable", "_rw"] },
                realRuntime: realRunc,
                logPath: path.join(dir, "wrapper.log"),
            }),
        );
    }

    /** Runs `script` in a new container; extra ctr flags before the image. */
    function run(script: string, flags: string[] = []): string {
        const id = `c${++counter}`;
        return containerd.ctr(["-n", NS, "run", "--rm", ...flags, IMAGE, id, "sh", "-c", script]);
    }

    function envOf(out: string): string[] {
        return out.split("\n").filter((l) => /^[A-Z_]+=/.test(l));
    }

    before(async () => {
        ensureWrapperTools();
        dir = tempDir("gw-ctd-");
        settingsPath = path.join(dir, "runc-wrapper.json");
        realRunc = path.join(dir, "lib", "runc.real");
        wrapper = buildTestWrapper(dir, settingsPath, { realRunc });
        // Concourse's layout: its own bin folder first on containerd's PATH, holding runc.
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        fs.copyFileSync(sh("sh", ["-c", "command -v runc"]).trim(), path.join(bin, "runc"));
        fs.chmodSync(path.join(bin, "runc"), 0o755);
        sh("bash", [path.join(HOST_DIR, "install-runc-wrapper.sh"), "install", "--runc", path.join(bin, "runc"), "--wrapper", wrapper, "--aside", realRunc]);
        // An AMD-style device node: a char device with /dev/null's numbers under the test folder.
        device = path.join(dir, "dev", "kfd-test");
        fs.mkdirSync(path.dirname(device));
        sh("mknod", ["-m", "0666", device, "c", "1", "3"]);
        datasets = path.join(dir, "datasets");
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.mkdirSync(path.join(datasets, "scratch_rw"));
        fs.writeFileSync(path.join(datasets, "models", "weights.bin"), "w");
        settings(datasets);
        const config = path.join(dir, "concourse-containerd.toml");
        fs.writeFileSync(config, renderConcourseContainerdConfig());
        containerd = new TestContainerd(dir, config, { ...process.env, PATH: `${bin}:${process.env.PATH}` });
        await containerd.start();
        const image = makeBusyboxImage(path.join(dir, "image"), [
            "PATH=/bin",
            "NVIDIA_VISIBLE_DEVICES=all",
            "AMD_VISIBLE_DEVICES=all",
            "HSA_OVERRIDE_GFX_VERSION=9.0.0",
            "KEEP_ME=1",
        ]);
        containerd.ctr(["-n", NS, "images", "import", "--base-name", IMAGE.replace(/:latest$/, ""), image]);
    });

    after(async () => {
        await containerd?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
        // The shim keeps runc's state for the namespace here; it is empty once the tasks are gone.
        fs.rmSync(`/run/containerd/runc/${NS}`, { recursive: true, force: true });
    });

    it("control: the real runc alone gives the image's own GPU variables and no datasets", () => {
        const out = run(`env; test -e ${datasets}/models && echo HAS-DATASET || echo NO-DATASET`, ["--runc-binary", realRunc]);
        assert.ok(envOf(out).includes("NVIDIA_VISIBLE_DEVICES=all"), out);
        assert.ok(out.includes("NO-DATASET"), out);
    });

    it("plain containerd API (as Concourse): GPU selection once, control variables gone, device and datasets present", () => {
        const script = [
            "env",
            `if [ -c ${device} ] && echo x > ${device}; then echo DEVICE-OK; else echo DEVICE-MISSING; fi`,
            `cat ${datasets}/models/weights.bin && echo`,
            `touch ${datasets}/models/new 2>/dev/null && echo MODELS-WRITABLE || echo MODELS-READONLY`,
            `touch ${datasets}/scratch_rw/new 2>/dev/null && echo SCRATCH-WRITABLE || echo SCRATCH-READONLY`,
        ].join("; ");
        const out = run(script);
        const env = envOf(out);
        assert.deepStrictEqual(
            env.filter((e) => e.startsWith("NVIDIA_VISIBLE_DEVICES=")),
            ["NVIDIA_VISIBLE_DEVICES=1,3"],
            out,
        );
        assert.deepStrictEqual(
            env.filter((e) => e.startsWith("NVIDIA_DRIVER_CAPABILITIES=")),
            ["NVIDIA_DRIVER_CAPABILITIES=compute,utility"],
            out,
        );
        assert.ok(!env.some((e) => e.startsWith("AMD_VISIBLE_DEVICES=") || e.startsWith("HSA_OVERRIDE_GFX_VERSION=")), out);
        assert.ok(env.includes("KEEP_ME=1"), out);
        assert.ok(out.includes("DEVICE-OK"), out);
        assert.ok(out.includes("w\n"), out);
        assert.ok(out.includes("MODELS-READONLY"), out);
        assert.ok(out.includes("SCRATCH-WRITABLE"), out);
        assert.ok(fs.existsSync(path.join(datasets, "scratch_rw", "new")), "the write reached the host folder");
        assert.ok(!fs.existsSync(path.join(datasets, "models", "new")));
    });

    it("a task that sets NVIDIA_VISIBLE_DEVICES=all itself still gets only its selection", () => {
        const out = run("env", ["--env", "NVIDIA_VISIBLE_DEVICES=all", "--env", "NVIDIA_DRIVER_CAPABILITIES=all", "--env", "NVIDIA_VISIBLE_DEVICES=0"]);
        const env = envOf(out);
        assert.deepStrictEqual(
            env.filter((e) => e.startsWith("NVIDIA_")),
            ["NVIDIA_DRIVER_CAPABILITIES=compute,utility", "NVIDIA_VISIBLE_DEVICES=1,3"],
            out,
        );
    });

    /** Starts a long-lived container, runs `env` in it as a second process (runc exec --process, as Concourse runs a task's command), and removes it. */
    function execEnv(flags: string[] = []): string {
        const id = `c${++counter}`;
        containerd.ctr(["-n", NS, "run", "-d", ...flags, IMAGE, id, "sleep", "600"]);
        try {
            return containerd.ctr(["-n", NS, "task", "exec", "--exec-id", "second", id, "env"]);
        } finally {
            containerd.ctrResult(["-n", NS, "task", "kill", "-s", "SIGKILL", id]);
            for (let i = 0; i < 50 && containerd.ctrResult(["-n", NS, "task", "delete", id]).status !== 0; i++) spawnSync("sleep", ["0.1"]);
            containerd.ctrResult(["-n", NS, "container", "delete", id]);
        }
    }

    it("a second process in a running container (runc exec, how Concourse starts a task's command) gets the same selection", () => {
        const control = envOf(execEnv(["--runc-binary", realRunc]));
        assert.ok(control.includes("NVIDIA_VISIBLE_DEVICES=all"), `control: the process spec carries the image's variables\n${control.join("\n")}`);
        const env = envOf(execEnv());
        assert.deepStrictEqual(
            env.filter((e) => e.startsWith("NVIDIA_VISIBLE_DEVICES=")),
            ["NVIDIA_VISIBLE_DEVICES=1,3"],
            env.join("\n"),
        );
        assert.ok(!env.some((e) => e.startsWith("AMD_VISIBLE_DEVICES=") || e.startsWith("HSA_OVERRIDE_GFX_VERSION=")), env.join("\n"));
        assert.ok(env.includes("KEEP_ME=1"), env.join("\n"));
    });

    it("with the wrapper named as the runtime binary (what CRI's BinaryName option does), the same edits", () => {
        const out = run("env", ["--runc-binary", wrapper]);
        assert.deepStrictEqual(
            envOf(out).filter((e) => e.startsWith("NVIDIA_VISIBLE_DEVICES=")),
            ["NVIDIA_VISIBLE_DEVICES=1,3"],
            out,
        );
    });

    it("a destination the spec already mounts is not mounted again", () => {
        const out = run(`cat /proc/self/mountinfo; touch ${datasets}/models/x && echo MODELS-WRITABLE`, [
            "--mount",
            `type=tmpfs,src=tmpfs,dst=${datasets}/models,options=rw`,
        ]);
        const mounts = mountsBelow(out, datasets);
        assert.strictEqual(mounts.get(`${datasets}/models`)?.fstype, "tmpfs", out);
        assert.strictEqual(out.split("\n").filter((l) => l.split(" ")[4] === `${datasets}/models`).length, 1, out);
        assert.ok(out.includes("MODELS-WRITABLE"));
    });

    describe("hostile and odd dataset folder names", () => {
        const pwned = ["gw-pwned-a", "gw-pwned-b", "gw-pwned-c"];
        const LATIN1_PREFIX = "latin1-caf";
        // name -> mode inside the container (a write probe), or null for "not a folder there".
        // Only real folders with a writable suffix are mounts of their own; everything else is
        // seen through the read-only root, links resolved inside the container.
        const corpus: [string, "ro" | "rw" | null][] = [
            ["plain", "ro"],
            ["with space", "ro"],
            [" leading space", "ro"],
            ["trailing space ", "ro"],
            ["it's", "ro"],
            ['say "hi"', "ro"],
            [`$(touch ${pwned[0]})`, "ro"],
            [`\`touch ${pwned[1]}\``, "ro"],
            [`x;touch ${pwned[2]};y`, "ro"],
            ["back\\slash", "ro"],
            ["new\nline", "ro"],
            ["tab\there", "ro"],
            ["données-🚀-数据", "ro"],
            ["-rf", "ro"],
            ["--bundle", "ro"],
            ["...", "ro"],
            [".hidden", "ro"],
            ["rbind,ro", "ro"],
            ["a:b=c%d*e?f[g]", "ro"],
            ["x".repeat(252) + "_rw", "rw"],
            ["results_rw", "rw"],
            ["cache_writable", "rw"],
            ["_rw", "rw"],
            ["UPPER_RW", "ro"],
            ["Cache_Writable", "ro"],
            ["results_rw ", "ro"],
            ["nested", "ro"],
            // A link has the mode of what it leads to, whatever its own name says.
            ["link_rw", "ro"],
            ["link-to-results_rw", "rw"],
            ["link-to-results", "rw"],
            ["self_rw", "ro"], // "." : the root itself
            ["escape_rw", null], // an absolute host path, which the container does not have
            ["dangling", null],
            ["file.txt", null],
            ["file-link", null],
            ["fifo", null],
            // Not UTF-8 (Latin-1 "é"): JSON cannot carry it, so it stays read-only, with a log line.
            [`${LATIN1_PREFIX}\ufffd_rw`, "ro"],
        ];
        const isLink = (name: string) => name.startsWith("link") || ["self_rw", "escape_rw", "dangling", "file-link"].includes(name);

        function layout(root: string, outside: string): void {
            fs.mkdirSync(root, { recursive: true });
            fs.mkdirSync(outside, { recursive: true });
            for (const [name, mode] of corpus) {
                if (mode !== null && !isLink(name) && !name.startsWith(LATIN1_PREFIX)) fs.mkdirSync(path.join(root, name));
            }
            fs.mkdirSync(path.join(root, "nested", "child"));
            fs.symlinkSync("plain", path.join(root, "link_rw"));
            fs.symlinkSync("results_rw", path.join(root, "link-to-results_rw"));
            fs.symlinkSync("results_rw", path.join(root, "link-to-results"));
            fs.symlinkSync(outside, path.join(root, "escape_rw"));
            fs.symlinkSync("does-not-exist", path.join(root, "dangling"));
            fs.symlinkSync(".", path.join(root, "self_rw"));
            fs.writeFileSync(path.join(root, "file.txt"), "not a dataset");
            fs.symlinkSync("file.txt", path.join(root, "file-link"));
            sh("mkfifo", [path.join(root, "fifo")]);
            fs.mkdirSync(Buffer.concat([Buffer.from(`${root}/${LATIN1_PREFIX}`), Buffer.from([0xe9]), Buffer.from("_rw")]));
        }

        /** What the container sees below root: mode by name (from a write probe), mountinfo below it, and the root's own mount. */
        function inside(root: string): { probed: Map<string, string>; mounts: ReturnType<typeof mountsBelow>; rootMount?: { mode: string; fstype: string } } {
            const script = `cd /; for d in "$R"/* "$R"/.[!.]* "$R"/..?*; do [ -d "$d" ] || continue; if touch "$d/.gw-probe" 2>/dev/null; then rm -f "$d/.gw-probe"; m=rw; else m=ro; fi; printf '%s\\t%s\\0' "$m" "$d"; done; printf '${SEP}'; cat /proc/self/mountinfo`;
            const out = run(script, ["--env", `R=${root}`]);
            const [listing, mountinfo] = out.split(SEP);
            const probed = new Map<string, string>();
            for (const rec of listing.split("\0").filter(Boolean)) {
                const tab = rec.indexOf("\t");
                probed.set(rec.slice(tab + 1).slice(root.length + 1), rec.slice(0, tab));
            }
            return { probed, mounts: mountsBelow(mountinfo, root), rootMount: mountsBelow(mountinfo, path.dirname(root)).get(root) };
        }

        it(`${corpus.length + 1} names and layouts in one root: the root read-only, a mount per writable folder, links as what they lead to, nothing injected`, () => {
            assert.ok(corpus.length >= 25);
            const root = path.join(dir, "odd", "srv");
            layout(root, path.join(dir, "odd", "outside"));
            settings(root);
            const logBefore = fs.existsSync(path.join(dir, "wrapper.log")) ? fs.readFileSync(path.join(dir, "wrapper.log"), "utf8").length : 0;
            const { probed, mounts, rootMount } = inside(root);
            const expected = new Map(corpus.filter(([, m]) => m !== null).map(([n, m]) => [n, m as string]));
            assert.deepStrictEqual(new Map([...probed].sort()), new Map([...expected].sort()));
            assert.strictEqual(rootMount?.mode, "ro", "the root is mounted read-only");
            const fromMountinfo = new Map([...mounts].map(([p, m]) => [p.slice(root.length + 1), m.mode as string]));
            const writableFolders = corpus.filter(([n, m]) => m === "rw" && !isLink(n)).map(([n]) => [n, "rw"] as [string, string]);
            assert.deepStrictEqual(
                new Map([...fromMountinfo].sort()),
                new Map(writableFolders.sort()),
                "mountinfo below the root: the writable folders, nothing else",
            );
            const log = fs.readFileSync(path.join(dir, "wrapper.log"), "utf8").slice(logBefore);
            assert.match(
                log,
                new RegExp(`dataset "${root}/${LATIN1_PREFIX}\\\\xe9_rw" stays read-only although its name ends with a writable suffix: the name is not UTF-8`),
            );
            assert.ok(
                !log.includes("fifo") && !log.includes("file.txt") && !log.includes("escape_rw"),
                "files and links are not the wrapper's business: no noise",
            );
            // No shell ever saw a name: the command substitutions did not run anywhere.
            const places = [process.cwd(), "/", "/tmp", dir, root, path.join(dir, "state")];
            for (const p of pwned) {
                const found = spawnSync("find", [...places, "-maxdepth", "6", "-name", `${p}*`], { encoding: "utf8" }).stdout.trim();
                assert.strictEqual(found, "", `injection: ${found}`);
            }
        });

        it("an empty root: the root alone, read-only; a missing root: no dataset mounts; the container starts either way", () => {
            const empty = path.join(dir, "empty-root");
            fs.mkdirSync(empty);
            settings(empty);
            const seen = inside(empty);
            assert.strictEqual(seen.mounts.size, 0);
            assert.strictEqual(seen.rootMount?.mode, "ro");
            const missing = path.join(dir, "missing-root");
            settings(missing);
            const none = inside(missing);
            assert.strictEqual(none.mounts.size, 0);
            assert.strictEqual(none.rootMount, undefined);
        });

        it("200 folders, 20 of them writable: the right modes, with a mount for each writable one only", () => {
            const root = path.join(dir, "many");
            fs.mkdirSync(root);
            for (let i = 0; i < 200; i++) fs.mkdirSync(path.join(root, i % 10 === 0 ? `set-${i}_rw` : `set-${i}`));
            settings(root);
            const { probed, mounts } = inside(root);
            assert.strictEqual(probed.size, 200);
            assert.strictEqual(mounts.size, 20);
            assert.strictEqual([...probed.values()].filter((m) => m === "rw").length, 20);
            assert.strictEqual(probed.get("set-10_rw"), "rw");
            assert.strictEqual(probed.get("set-11"), "ro");
        });
    });
});
