/**
 * The host step scripts (gpu-driver, container-toolkit, fabric-manager, concourse-worker,
 * concourse-web),
 * run for real with bash against a fixture root, a private state dir and fake package and
 * service tools (test/fixtures/host-scripts/bin: they log their argv and answer from files).
 * Their PATH holds those fakes plus links to a short list of ordinary programs, so no test
 * can reach this machine's apt-get or systemctl. Checked: what each script does, that a
 * second run does nothing, and the words of its errors.
 */
import * as assert from "assert";
import { execFileSync, spawn, spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ensureCommands } from "../support/tools";
import { pendingWithout, release as suppliedRelease } from "../support/supplied";

const REPO = path.resolve(__dirname, "../../..");
const HOST_DIR = path.join(REPO, "host");
const SCRIPTS_DIR = path.join(REPO, "scripts");
const FAKES = path.join(REPO, "test/fixtures/host-scripts/bin");
const FAKE_TOOLS = ["apt-get", "apt-cache", "dpkg-query", "dpkg", "systemctl", "fmpm", "curl"];
const HOST_SCRIPTS = ["gpu-driver.sh", "container-toolkit.sh", "fabric-manager.sh", "concourse-worker.sh", "concourse-web.sh"];
/** The real programs the scripts and the fakes may run; nothing else is on their PATH. */
const REAL_TOOLS = [
    "bash",
    "sh",
    "env",
    "sed",
    "awk",
    "grep",
    "head",
    "cat",
    "cut",
    "tr",
    "wc",
    "find",
    "sort",
    "ls",
    "sha256sum",
    "mkdir",
    "rm",
    "mv",
    "cp",
    "chmod",
    "touch",
    "dirname",
    "mktemp",
    "tar",
    "gzip",
    "flock",
    "rmdir",
    "basename",
    "xargs",
    "cmp",
    "sleep",
    "readlink",
    "zcat",
];

const NVRM_550 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n" +
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
const NVRM_535 =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n" +
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
/** The open kernel modules (the default since R560) name the architecture after "for". */
const NVRM_OPEN_560 =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n" +
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";

let top = "";
let sysBin = "";
let bash = "";

function which(command: string): string {
    const found = spawnSync(
        "sh",
        ["-c", `command -v "$1" || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || { [ -x "/sbin/$1" ] && echo "/sbin/$1"; }`, "sh", command],
        { encoding: "utf8" },
    ).stdout.trim();
    if (!found.startsWith("/")) throw new Error(`${command} is not installed`);
    return found;
}

function sha256(file: string): string {
    return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

interface Result {
    status: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
    out: string;
}

/** One throwaway host: a root for /proc, /sys, /dev, /opt, a state dir, a Concourse prefix, fake tools. */
class FakeHost {
    readonly dir: string;
    readonly root: string;
    readonly state: string;
    readonly prefix: string;
    readonly fake: string;
    readonly bin: string;
    readonly tmp: string;
    readonly log: string;

    constructor(name: string, opts: { without?: string[] } = {}) {
        this.dir = fs.mkdtempSync(path.join(top, `${name}-`));
        this.root = path.join(this.dir, "root");
        this.state = path.join(this.dir, "state");
        this.prefix = path.join(this.dir, "prefix");
        this.fake = path.join(this.dir, "fake");
        this.bin = path.join(this.dir, "bin");
        this.tmp = path.join(this.dir, "tmp");
        this.log = path.join(this.dir, "calls.log");
        for (const d of [this.root, this.prefix, this.fake, this.bin, this.tmp]) fs.mkdirSync(d, { recursive: true });
        for (const tool of FAKE_TOOLS.filter((t) => !(opts.without ?? []).includes(t))) {
            fs.copyFileSync(path.join(FAKES, tool), path.join(this.bin, tool));
            fs.chmodSync(path.join(this.bin, tool), 0o755);
        }
        fs.writeFileSync(this.log, "");
    }

    env(): NodeJS.ProcessEnv {
        return {
            PATH: `${this.bin}:${sysBin}`,
            LANG: "C",
            LC_ALL: "C",
            HOME: this.dir,
            TMPDIR: this.tmp,
            FAKE_DIR: this.fake,
            FAKE_LOG: this.log,
            GPU_WORKERS_ROOT: this.root,
            GPU_WORKERS_STATE_DIR: this.state,
            GPU_WORKERS_CONCOURSE_PREFIX: this.prefix,
        };
    }

    run(script: string, args: string[], timeoutMs = 30_000): Result {
        const r = spawnSync(bash, [path.join(HOST_DIR, script), ...args], { encoding: "utf8", env: this.env(), timeout: timeoutMs });
        const res = { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, out: `${r.stdout}${r.stderr}` };
        // A fake refusing an unexpected call is a broken test, never the expected failure.
        assert.doesNotMatch(res.out, /^fake [a-z-]+:/m, res.out);
        return res;
    }

    ok(script: string, args: string[]): Result {
        const r = this.run(script, args);
        assert.strictEqual(r.status, 0, `${script} ${args.join(" ")} failed:\n${r.out}`);
        return r;
    }

    fails(script: string, args: string[], message: RegExp): Result {
        const r = this.run(script, args);
        assert.ok(r.status !== 0 && r.status !== null, `${script} ${args.join(" ")} should fail:\n${r.out}`);
        assert.match(r.stderr, message);
        return r;
    }

    /** The fake tools' calls, oldest first, optionally only those of `tool` (+ a subcommand). */
    calls(prefix?: string): string[] {
        const lines = fs
            .readFileSync(this.log, "utf8")
            .split("\n")
            .filter((l) => l !== "");
        return prefix === undefined ? lines : lines.filter((l) => l === prefix || l.startsWith(`${prefix} `));
    }

    resetLog(): void {
        fs.writeFileSync(this.log, "");
    }

    /** A file under the fixture root (content "" for device nodes and markers). */
    put(rel: string, content = ""): void {
        const file = path.join(this.root, rel);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, content);
    }

    drop(rel: string): void {
        fs.rmSync(path.join(this.root, rel), { recursive: true, force: true });
    }

    /** What `apt-cache madison PKG` prints, newest first as apt does. */
    madison(pkg: string, versions: string[]): void {
        fs.mkdirSync(path.join(this.fake, "madison"), { recursive: true });
        fs.writeFileSync(
            path.join(this.fake, "madison", pkg),
            versions.map((v) => ` ${pkg} | ${v} | http://mirror.example/ubuntu jammy/main amd64 Packages\n`).join(""),
        );
    }

    /** A package dpkg knows: status as dpkg's db:Status-Status (installed, config-files). */
    dpkg(pkg: string, status: string, version: string): void {
        fs.mkdirSync(path.join(this.fake, "dpkg"), { recursive: true });
        fs.writeFileSync(path.join(this.fake, "dpkg", pkg), `${status} ${version}\n`);
    }

    dpkgState(pkg: string): string | undefined {
        const file = path.join(this.fake, "dpkg", pkg);
        return fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim() : undefined;
    }

    stateFile(name: string): string | undefined {
        const file = path.join(this.state, name);
        return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
    }

    restarts(): string[] {
        return this.calls("systemctl restart");
    }
}

describe("host step scripts (real bash, fake package and service tools)", () => {
    before(function () {
        top = fs.mkdtempSync(path.join(os.tmpdir(), "gw-host-scripts-"));
        sysBin = path.join(top, "sys-bin");
        fs.mkdirSync(sysBin);
        for (const tool of REAL_TOOLS) fs.symlinkSync(which(tool), path.join(sysBin, tool));
        bash = which("bash");
    });

    after(() => {
        if (top) fs.rmSync(top, { recursive: true, force: true });
    });

    describe("host scripts: the sandbox", () => {
        it("reaches the fake apt-get and systemctl, never this machine's", () => {
            const h = new FakeHost("sandbox");
            const env = h.env();
            const look = (cmd: string, pathVar: string) =>
                spawnSync(bash, ["-c", `command -v ${cmd} || true`], { encoding: "utf8", env: { ...env, PATH: pathVar } }).stdout.trim();
            for (const tool of ["apt-get", "systemctl", "dpkg", "curl"]) {
                assert.strictEqual(look(tool, env.PATH as string), path.join(h.bin, tool));
                assert.strictEqual(look(tool, sysBin), "", `${tool} must not be reachable past the fakes`);
            }
        });
    });

    describe("gpu-driver.sh", () => {
        const pinned = (v: string, vendor = "nvidia") => ["ensure", "--vendor", vendor, "--version", v];

        it("preinstalled nvidia: reports the loaded version and calls no tool", () => {
            const h = new FakeHost("drv-pre");
            h.put("proc/driver/nvidia/version", NVRM_550);
            const r = h.ok("gpu-driver.sh", pinned("preinstalled"));
            assert.match(r.stdout, /nvidia driver 550\.54\.15 is present/);
            assert.deepStrictEqual(h.calls(), []);
        });

        it('reads the version of the open kernel modules too ("Kernel Module for x86_64  560.35.03")', () => {
            const h = new FakeHost("drv-open");
            h.put("proc/driver/nvidia/version", NVRM_OPEN_560);
            assert.match(h.ok("gpu-driver.sh", pinned("preinstalled")).stdout, /nvidia driver 560\.35\.03 is present/);
            assert.match(h.ok("gpu-driver.sh", pinned("560.35.03")).stdout, /560\.35\.03 matches the pin 560\.35\.03/);
            assert.deepStrictEqual(h.calls(), []);
        });

        it("preinstalled nvidia but no driver loaded: fails naming /proc/driver/nvidia/version", () => {
            const h = new FakeHost("drv-none");
            h.fails(
                "gpu-driver.sh",
                pinned("preinstalled"),
                /expected a preinstalled nvidia driver, but none is loaded \(\/proc\/driver\/nvidia\/version is missing\)/,
            );
            assert.deepStrictEqual(h.calls(), []);
        });

        it("a pin equal to the loaded version, or its X.Y, needs no apt", () => {
            const h = new FakeHost("drv-same");
            h.put("proc/driver/nvidia/version", NVRM_550);
            for (const pin of ["550.54.15", "550.54"]) {
                assert.match(h.ok("gpu-driver.sh", pinned(pin)).stdout, new RegExp(`driver 550\\.54\\.15 matches the pin ${pin.replace(/\./g, "\\.")}`));
            }
            assert.deepStrictEqual(h.calls(), []);
            assert.strictEqual(h.stateFile("driver-package"), undefined);
        });

        it("a pin that is not loaded: installs package=version from apt, records it, asks for a reboot", () => {
            const h = new FakeHost("drv-install");
            h.put("proc/driver/nvidia/version", NVRM_535);
            h.madison("nvidia-driver-550", ["550.54.15-0ubuntu0.22.04.1", "550.54.14-0ubuntu0.22.04.1"]);
            h.fails(
                "gpu-driver.sh",
                pinned("550.54.15"),
                /installed nvidia-driver-550=550\.54\.15-0ubuntu0\.22\.04\.1, but 535\.104\.05 is loaded: reboot the host, then run pulumi up again/,
            );
            assert.deepStrictEqual(h.calls("apt-cache"), ["apt-cache madison nvidia-driver-550-server", "apt-cache madison nvidia-driver-550"]);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get install -y -q nvidia-driver-550=550.54.15-0ubuntu0.22.04.1"]);
            assert.strictEqual(h.stateFile("driver-package"), "nvidia-driver-550 not-installed\n", "installed, and not there before");
            // After the reboot the pinned module is loaded: nothing more to do.
            h.put("proc/driver/nvidia/version", NVRM_550);
            h.resetLog();
            assert.match(h.ok("gpu-driver.sh", pinned("550.54.15")).stdout, /matches the pin/);
            assert.deepStrictEqual(h.calls(), []);
        });

        it("no apt package offers the pin (nor a version it is only a prefix of): says so, installs nothing", () => {
            const h = new FakeHost("drv-nocand");
            h.madison("nvidia-driver-550", ["550.54.15-0ubuntu1", "550.54.14-0ubuntu1"]);
            for (const pin of ["550.54.16", "550.54.1"]) {
                h.fails(
                    "gpu-driver.sh",
                    pinned(pin),
                    new RegExp(
                        `driver ${pin.replace(/\./g, "\\.")} is pinned but no driver is loaded, and no apt package offers ${pin.replace(/\./g, "\\.")}; add the vendor's repository or preinstall the driver`,
                    ),
                );
            }
            assert.deepStrictEqual(h.calls("apt-get"), []);
            assert.strictEqual(h.stateFile("driver-package"), undefined);
        });

        it("remove removes only the package it installed, and twice is fine", () => {
            const h = new FakeHost("drv-remove");
            h.dpkg("nvidia-driver-550", "installed", "550.54.15-0ubuntu1");
            const args = ["remove", "--vendor", "nvidia", "--version", "550.54.15"];
            assert.match(h.ok("gpu-driver.sh", args).stdout, /nothing installed by gpu-workers/);
            assert.deepStrictEqual(h.calls(), [], "a driver someone else installed stays");
            assert.strictEqual(h.dpkgState("nvidia-driver-550"), "installed 550.54.15-0ubuntu1");

            fs.mkdirSync(h.state, { recursive: true });
            fs.writeFileSync(path.join(h.state, "driver-package"), "nvidia-driver-550\n"); // as an earlier version recorded it
            h.ok("gpu-driver.sh", args);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get purge -y -q nvidia-driver-550"]);
            assert.strictEqual(h.stateFile("driver-package"), undefined);
            h.resetLog();
            assert.match(h.ok("gpu-driver.sh", args).stdout, /nothing installed by gpu-workers/);
            assert.deepStrictEqual(h.calls(), []);
        });

        it("AMD preinstalled needs both /dev/kfd and the amdgpu module", () => {
            const h = new FakeHost("drv-amd");
            h.put("dev/kfd");
            h.put("sys/module/amdgpu/version", "6.7.0\n");
            h.put("opt/rocm/.info/version", "6.1.2-119\n");
            assert.match(h.ok("gpu-driver.sh", pinned("preinstalled", "amd")).stdout, /amd driver 6\.1\.2-119 is present/);
            h.drop("opt/rocm");
            assert.match(h.ok("gpu-driver.sh", pinned("preinstalled", "amd")).stdout, /amd driver loaded is present/);
            const missing = /expected a preinstalled amd driver, but none is loaded \(\/dev\/kfd or the amdgpu module is missing\)/;
            h.drop("dev/kfd");
            h.fails("gpu-driver.sh", pinned("preinstalled", "amd"), missing);
            h.put("dev/kfd");
            h.drop("sys/module/amdgpu");
            h.fails("gpu-driver.sh", pinned("preinstalled", "amd"), missing);
            assert.deepStrictEqual(h.calls(), []);
        });

        it("Intel preinstalled needs the i915 or xe module and /dev/dri; a pin is refused (the drivers are the kernel's)", () => {
            const h = new FakeHost("drv-intel");
            const missing =
                /expected a preinstalled intel driver, but none is loaded \(neither the i915 nor the xe module is loaded, or \/dev\/dri is missing\)/;
            h.fails("gpu-driver.sh", pinned("preinstalled", "intel"), missing);
            h.put("sys/module/xe/version", "1\n");
            h.fails("gpu-driver.sh", pinned("preinstalled", "intel"), missing);
            h.put("dev/dri/renderD128");
            assert.match(h.ok("gpu-driver.sh", pinned("preinstalled", "intel")).stdout, /intel driver xe is present/);
            h.put("sys/module/i915/version", "1\n");
            assert.match(h.ok("gpu-driver.sh", pinned("preinstalled", "intel")).stdout, /intel driver i915,xe is present/);
            h.fails(
                "gpu-driver.sh",
                pinned("6.8", "intel"),
                /Intel's GPU drivers \(i915, xe\) come with the kernel: only --version preinstalled \(got '6\.8'\)/,
            );
            assert.deepStrictEqual(h.calls(), []);
        });

        it("rejects a vendor it does not know and a missing --version", () => {
            const h = new FakeHost("drv-args");
            h.fails(
                "gpu-driver.sh",
                ["ensure", "--vendor", "qualcomm", "--version", "preinstalled"],
                /--vendor must be nvidia, amd or intel \(got 'qualcomm'\)/,
            );
            h.fails("gpu-driver.sh", ["ensure", "--vendor", "nvidia"], /--version is required/);
        });
    });

    describe("container-toolkit.sh", () => {
        const ensure = ["ensure", "--vendor", "nvidia", "--version", "1.17.8"];
        const remove = ["remove", "--vendor", "nvidia", "--version", "1.17.8"];
        const INSTALL = "apt-get install -y -q -o Dpkg::Options::=--force-confold nvidia-container-toolkit=1.17.8-1";

        it("installed at the pinned version: no apt-get", () => {
            const h = new FakeHost("ctk-same");
            h.dpkg("nvidia-container-toolkit", "installed", "1.17.8-1");
            assert.match(h.ok("container-toolkit.sh", ensure).stdout, /nvidia-container-toolkit 1\.17\.8-1 is installed/);
            assert.deepStrictEqual(h.calls("apt-get"), []);
            assert.deepStrictEqual(h.calls("apt-cache"), []);
        });

        it("another version installed: installs the pin keeping our config files, then does nothing", () => {
            const h = new FakeHost("ctk-upgrade");
            h.dpkg("nvidia-container-toolkit", "installed", "1.16.2-1");
            h.madison("nvidia-container-toolkit", ["1.17.8-1", "1.17.7-1", "1.16.2-1"]);
            h.ok("container-toolkit.sh", ensure);
            assert.deepStrictEqual(h.calls("apt-get"), [INSTALL]);
            assert.strictEqual(h.stateFile("toolkit-package"), undefined, "the host's package, at another version, is not ours to remove");
            h.resetLog();
            h.ok("container-toolkit.sh", ensure);
            assert.deepStrictEqual(h.calls("apt-get"), []);
        });

        it("no apt source offers the pin: a clear message, nothing installed", () => {
            const h = new FakeHost("ctk-nocand");
            h.madison("nvidia-container-toolkit", ["1.17.7-1", "1.16.2-1"]);
            h.fails(
                "container-toolkit.sh",
                ensure,
                /nvidia-container-toolkit 1\.17\.8 is pinned but no apt source offers it \(installed: none\); add the vendor's repository/,
            );
            assert.deepStrictEqual(h.calls("apt-get"), []);
            assert.strictEqual(h.stateFile("toolkit-package"), undefined);
        });

        it("remove purges what it installed, is idempotent, and an ensure after it installs again", () => {
            const h = new FakeHost("ctk-remove");
            h.madison("nvidia-container-toolkit", ["1.17.8-1"]);
            h.ok("container-toolkit.sh", ensure);
            h.resetLog();
            h.ok("container-toolkit.sh", remove);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get purge -y -q nvidia-container-toolkit"]);
            assert.strictEqual(h.stateFile("toolkit-package"), undefined);
            assert.strictEqual(h.dpkgState("nvidia-container-toolkit"), undefined, "as it was before: never installed");
            h.resetLog();
            assert.match(h.ok("container-toolkit.sh", remove).stdout, /nothing installed by gpu-workers/);
            assert.deepStrictEqual(h.calls(), []);
            h.ok("container-toolkit.sh", ensure);
            assert.deepStrictEqual(h.calls("apt-get"), [INSTALL]);
        });
    });

    describe("fabric-manager.sh", () => {
        /** An HGX-like host: the driver loaded and `switches` NVSwitches, plus a config file. */
        function nvswitchHost(name: string, switches: number, opts: { without?: string[] } = {}): { h: FakeHost; config: string } {
            const h = new FakeHost(name, opts);
            h.put("proc/driver/nvidia/version", NVRM_550);
            for (let i = 0; i < switches; i++) h.put(`proc/driver/nvidia-nvswitch/devices/0000:0${i + 5}:00.0/information`, `Fabric Module ID: ${i}\n`);
            const config = path.join(h.dir, "fabricmanager.cfg");
            fs.writeFileSync(config, "FABRIC_MODE=0\nLOG_LEVEL=4\n");
            return { h, config };
        }
        /** fmpm's partitions: id -> active. */
        function partitions(h: FakeHost, state: Record<number, boolean>): void {
            fs.mkdirSync(path.join(h.fake, "fmpm"), { recursive: true });
            for (const [id, active] of Object.entries(state)) fs.writeFileSync(path.join(h.fake, "fmpm", id), active ? "1\n" : "0\n");
        }
        const partitionActive = (h: FakeHost, id: number) => fs.readFileSync(path.join(h.fake, "fmpm", String(id)), "utf8").trim() === "1";

        it("no NVSwitch: refuses to start fabricmanager and never calls systemctl", () => {
            const { h, config } = nvswitchHost("fm-none", 0);
            const message = /no NVSwitch under \/proc\/driver\/nvidia-nvswitch\/devices: fabricmanager must not start without NVSwitches/;
            h.fails("fabric-manager.sh", ["ensure", "--config", config], message);
            fs.mkdirSync(path.join(h.root, "proc/driver/nvidia-nvswitch/devices"), { recursive: true });
            h.fails("fabric-manager.sh", ["ensure", "--config", config], message);
            assert.deepStrictEqual(h.calls("systemctl"), []);
            assert.deepStrictEqual(h.calls("apt-get"), []);
        });

        it("installs fabricmanager at exactly the driver's version, restarts once, again only when the config changed", () => {
            const { h, config } = nvswitchHost("fm-install", 6);
            h.madison("nvidia-fabricmanager-550", ["550.54.15-1", "550.54.14-1"]);
            const args = ["ensure", "--config", config];
            assert.match(h.ok("fabric-manager.sh", args).stdout, /running for 6 NVSwitches, driver 550\.54\.15/);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get install -y -q -o Dpkg::Options::=--force-confold nvidia-fabricmanager-550=550.54.15-1"]);
            assert.ok(h.calls("systemctl").includes("systemctl enable nvidia-fabricmanager"), h.calls().join("\n"));
            assert.deepStrictEqual(h.restarts(), ["systemctl restart nvidia-fabricmanager"]);
            assert.strictEqual(h.stateFile("fabricmanager-package"), "nvidia-fabricmanager-550 not-installed\n");

            h.resetLog();
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.calls("apt-get"), []);
            assert.deepStrictEqual(h.restarts(), [], "same config, service running: no restart");

            fs.appendFileSync(config, "LOG_LEVEL=2\n");
            h.resetLog();
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.restarts(), ["systemctl restart nvidia-fabricmanager"]);
            h.resetLog();
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.restarts(), []);

            fs.rmSync(path.join(h.fake, "systemd/active/nvidia-fabricmanager")); // it died
            h.resetLog();
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.restarts(), ["systemctl restart nvidia-fabricmanager"]);
        });

        it("no package matches the driver exactly, or no driver: refuses before starting anything", () => {
            const { h, config } = nvswitchHost("fm-nomatch", 2);
            h.madison("nvidia-fabricmanager-550", ["550.54.14-1"]);
            h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.14-1");
            h.fails(
                "fabric-manager.sh",
                ["ensure", "--config", config],
                /no nvidia-fabricmanager package matches the loaded driver 550\.54\.15 exactly; fabricmanager must match the driver version/,
            );
            h.drop("proc/driver/nvidia/version");
            h.fails("fabric-manager.sh", ["ensure", "--config", config], /the NVIDIA driver is not loaded \(\/proc\/driver\/nvidia\/version is missing\)/);
            h.fails("fabric-manager.sh", ["ensure", "--config", path.join(h.dir, "nope.cfg")], /config .*nope\.cfg is missing/);
            assert.deepStrictEqual(h.calls("systemctl"), []);
            assert.deepStrictEqual(h.calls("apt-get"), []);
        });

        it("partitions: fmpm -a for the requested inactive ones only, and not again on a second run", () => {
            const { h, config } = nvswitchHost("fm-part", 4);
            h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.15-1");
            partitions(h, { 0: true, 1: false, 2: false, 10: true });
            const args = ["ensure", "--config", config, "--partition", "0", "--partition", "1"];
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.calls("fmpm -a"), ["fmpm -a 1"]);
            assert.ok(partitionActive(h, 1) && !partitionActive(h, 2));
            assert.deepStrictEqual(h.calls("apt-get"), []);
            h.resetLog();
            h.ok("fabric-manager.sh", args);
            assert.deepStrictEqual(h.calls("fmpm -a"), [], "active partitions are left alone");
        });

        it("in a service VM: reports ready (plan and partitions) or the failure on the console file, once", () => {
            const { h, config } = nvswitchHost("fm-report", 4);
            h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.15-1");
            partitions(h, { 1: false, 2: false });
            const console = path.join(h.dir, "ttyS0");
            h.ok("fabric-manager.sh", ["ensure", "--config", config, "--partition", "1", "--partition", "2", "--report", console, "--plan", "p1"]);
            assert.strictEqual(fs.readFileSync(console, "utf8"), "gpu-workers-fabric: ready plan=p1 partitions=1,2\n");
            h.drop("proc/driver/nvidia/version");
            h.fails(
                "fabric-manager.sh",
                ["ensure", "--config", config, "--partition", "1", "--report", console, "--plan", "p2"],
                /the NVIDIA driver is not loaded/,
            );
            assert.strictEqual(
                fs.readFileSync(console, "utf8"),
                "gpu-workers-fabric: failed plan=p2: the NVIDIA driver is not loaded (/proc/driver/nvidia/version is missing)\n",
            );
        });

        it("partitions without fmpm, or one fmpm cannot activate: names what is wrong", () => {
            const a = nvswitchHost("fm-nofmpm", 2, { without: ["fmpm"] });
            a.h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.15-1");
            a.h.fails(
                "fabric-manager.sh",
                ["ensure", "--config", a.config, "--partition", "1"],
                /partition 1 requested but fmpm \(the fabric manager partition tool\) is not installed/,
            );
            const b = nvswitchHost("fm-badpart", 2);
            b.h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.15-1");
            partitions(b.h, { 0: false });
            b.h.fails("fabric-manager.sh", ["ensure", "--config", b.config, "--partition", "7"], /could not activate fabric partition 7 \(fmpm -a 7 failed\)/);
            fs.rmSync(path.join(b.h.fake, "fmpm"), { recursive: true }); // fabricmanager unreachable
            b.h.resetLog();
            b.h.fails("fabric-manager.sh", ["ensure", "--config", b.config, "--partition", "0"], /could not list the fabric partitions \(fmpm -l failed\)/);
            assert.deepStrictEqual(b.h.calls("fmpm -a"), []);
        });

        it("remove stops the service, removes only the package it installed, and twice is fine", () => {
            const { h, config } = nvswitchHost("fm-remove", 2);
            h.madison("nvidia-fabricmanager-550", ["550.54.15-1"]);
            h.ok("fabric-manager.sh", ["ensure", "--config", config]);
            h.resetLog();
            h.ok("fabric-manager.sh", ["remove"]);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get purge -y -q nvidia-fabricmanager-550"]);
            // Disabled and stopped, as it was before ensure.
            assert.ok(!fs.existsSync(path.join(h.fake, "systemd/enabled/nvidia-fabricmanager")), h.calls().join("\n"));
            assert.ok(!fs.existsSync(path.join(h.fake, "systemd/active/nvidia-fabricmanager")));
            assert.strictEqual(h.stateFile("fabricmanager-package"), undefined);
            assert.strictEqual(h.stateFile("fabricmanager.config.sha256"), undefined);
            h.resetLog();
            h.ok("fabric-manager.sh", ["remove"]);
            assert.deepStrictEqual(h.calls("apt-get"), []);
            // Purged as it was never there: the next ensure installs again.
            assert.strictEqual(h.dpkgState("nvidia-fabricmanager-550"), undefined);
            h.ok("fabric-manager.sh", ["ensure", "--config", config]);
            assert.deepStrictEqual(h.calls("apt-get"), ["apt-get install -y -q -o Dpkg::Options::=--force-confold nvidia-fabricmanager-550=550.54.15-1"]);

            // A fabricmanager the host had before stays installed.
            const other = nvswitchHost("fm-remove-theirs", 2);
            other.h.dpkg("nvidia-fabricmanager-550", "installed", "550.54.15-1");
            other.h.ok("fabric-manager.sh", ["ensure", "--config", other.config]);
            other.h.ok("fabric-manager.sh", ["remove"]);
            assert.deepStrictEqual(other.h.calls("apt-get"), []);
            assert.strictEqual(other.h.dpkgState("nvidia-fabricmanager-550"), "installed 550.54.15-1");
        });
    });

    describe("concourse-worker.sh", function () {
        const UNIT = "concourse-worker.service";
        /** A file only v2 has. */
        const NEW_RELEASE_MARK = "concourse/repacked-by-test";
        let runcSha = "";
        let concourseSha = "";
        let v1Version = "";
        let v2Version = "";
        let wrapper = "";
        let wrapperSha = "";
        let v1 = "";
        let v2 = "";

        /**
         * The real release (scripts/concourse-release.sh) as v1; as v2, the same release repacked
         * with a file of its own (NEW_RELEASE_MARK), so an upgrade shows in the prefix.
         */
        function makeReleases(): void {
            ({ tarball: v1, version: v1Version } = suppliedRelease());
            v2Version = `${v1Version}-repacked`;
            const dir = path.join(top, "release-repacked");
            fs.mkdirSync(dir, { recursive: true });
            execFileSync("tar", ["-xzf", v1, "-C", dir]);
            fs.writeFileSync(path.join(dir, NEW_RELEASE_MARK), `${v2Version}\n`);
            v2 = path.join(top, `concourse-${v2Version}.tgz`);
            execFileSync("tar", ["-czf", v2, "-C", dir, "concourse"]);
            concourseSha = sha256(path.join(dir, "concourse/bin/concourse"));
            runcSha = sha256(path.join(dir, "concourse/bin/runc"));
            fs.rmSync(dir, { recursive: true, force: true });
        }

        /** The worker's unit and env files, watched for restarts. */
        function workerFiles(h: FakeHost): { unit: string; env: string; flags: string[] } {
            const unit = path.join(h.dir, UNIT);
            const env = path.join(h.dir, "worker.env");
            fs.writeFileSync(unit, "[Service]\nExecStart=/usr/local/concourse/bin/concourse worker --tag=gpu\n");
            fs.writeFileSync(env, "CONCOURSE_RUNTIME=containerd\n");
            return { unit, env, flags: ["--env", env, "--watch", unit, "--watch", env] };
        }

        /** install-runc-wrapper.sh as the host has it (0755), recording what runc holds after a remove. */
        function installerShim(h: FakeHost): { shim: string; restored: string } {
            const shim = path.join(h.dir, "install-runc-wrapper.sh");
            const restored = path.join(h.dir, "restored.sha256");
            fs.writeFileSync(
                shim,
                [
                    "#!/bin/sh",
                    "set -eu",
                    `bash ${JSON.stringify(path.join(HOST_DIR, "install-runc-wrapper.sh"))} "$@"`,
                    'if [ "$1" = remove ]; then',
                    '  runc=""; prev=""',
                    '  for a in "$@"; do if [ "$prev" = --runc ]; then runc=$a; fi; prev=$a; done',
                    `  sha256sum "$runc" | cut -d' ' -f1 >> ${JSON.stringify(restored)}`,
                    "fi",
                    "",
                ].join("\n"),
                { mode: 0o755 },
            );
            return { shim, restored };
        }

        const concourse = (h: FakeHost) => path.join(h.prefix, "concourse/bin/concourse");
        const runc = (h: FakeHost) => path.join(h.prefix, "concourse/bin/runc");

        before(function () {
            pendingWithout(this, "concourse");
            this.timeout(300_000);
            execFileSync("bash", [path.join(SCRIPTS_DIR, "build-wrapper.sh")], { stdio: ["ignore", "pipe", "pipe"], timeout: 300_000 });
            wrapper = path.join(REPO, "dist/wrapper/runc-wrapper");
            wrapperSha = sha256(wrapper);
            makeReleases();
        });

        it("unpacks the release into the prefix; restarts on the first run, then only when a watched file changed", () => {
            const h = new FakeHost("cw-archive");
            const files = workerFiles(h);
            const args = ["ensure", "--version", v1Version, "--archive", v1, "--unit", UNIT, ...files.flags];
            assert.match(h.ok("concourse-worker.sh", args).stdout, new RegExp(`concourse-worker\\.service is running Concourse ${v1Version}`));
            assert.strictEqual(sha256(concourse(h)), concourseSha);
            assert.strictEqual(sha256(runc(h)), runcSha);
            assert.ok(h.calls("systemctl").includes("systemctl daemon-reload"));
            assert.ok(h.calls("systemctl").includes(`systemctl enable ${UNIT}`));
            assert.deepStrictEqual(h.restarts(), [`systemctl restart ${UNIT}`]);

            fs.writeFileSync(path.join(h.prefix, "concourse/unpacked-once"), "");
            h.resetLog();
            h.ok("concourse-worker.sh", args);
            assert.deepStrictEqual(h.restarts(), [], "nothing changed: no restart");
            assert.ok(fs.existsSync(path.join(h.prefix, "concourse/unpacked-once")), "the same release is not unpacked again");

            fs.appendFileSync(files.env, "CONCOURSE_TEAM=ml\n");
            h.resetLog();
            h.ok("concourse-worker.sh", args);
            assert.deepStrictEqual(h.restarts(), [`systemctl restart ${UNIT}`]);
            h.resetLog();
            h.ok("concourse-worker.sh", args);
            assert.deepStrictEqual(h.restarts(), []);

            fs.rmSync(path.join(h.fake, "systemd/active/concourse-worker")); // it died
            h.resetLog();
            h.ok("concourse-worker.sh", args);
            assert.deepStrictEqual(h.restarts(), [`systemctl restart ${UNIT}`]);
            assert.deepStrictEqual(fs.readdirSync(h.tmp), [], "no temporary folder is left behind");
        });

        it("a new release replaces the binaries and restarts the worker, with no watched file changed", () => {
            const h = new FakeHost("cw-upgrade");
            const files = workerFiles(h);
            h.ok("concourse-worker.sh", ["ensure", "--version", v1Version, "--archive", v1, "--unit", UNIT, ...files.flags]);
            h.resetLog();
            h.ok("concourse-worker.sh", ["ensure", "--version", v2Version, "--archive", v2, "--unit", UNIT, ...files.flags]);
            assert.strictEqual(fs.readFileSync(path.join(h.prefix, NEW_RELEASE_MARK), "utf8"), `${v2Version}\n`);
            assert.strictEqual(sha256(concourse(h)), concourseSha);
            assert.deepStrictEqual(fs.readdirSync(h.prefix), ["concourse"]);
            assert.deepStrictEqual(h.restarts(), [`systemctl restart ${UNIT}`], "the running worker still runs the old binary");
        });

        it("--url downloads with curl and checks the sha256; a mismatch fails and keeps the install as it was", () => {
            const h = new FakeHost("cw-url");
            const files = workerFiles(h);
            const url1 = `file://${v1}`;
            h.ok("concourse-worker.sh", ["ensure", "--version", v1Version, "--url", url1, "--sha256", sha256(v1), "--unit", UNIT, ...files.flags]);
            const curls = h.calls("curl");
            assert.strictEqual(curls.length, 1);
            assert.match(curls[0], new RegExp(`^curl -fsSL --retry 3 -o ${h.tmp}/\\S+/concourse\\.tgz ${url1}$`));
            assert.strictEqual(sha256(concourse(h)), concourseSha);
            assert.strictEqual(sha256(runc(h)), runcSha);

            h.resetLog();
            h.ok("concourse-worker.sh", ["ensure", "--version", v1Version, "--url", url1, "--sha256", sha256(v1), "--unit", UNIT, ...files.flags]);
            assert.deepStrictEqual(h.calls("curl"), [], "an installed release is not downloaded again");
            assert.deepStrictEqual(h.restarts(), []);

            h.resetLog();
            const wrong = sha256(v1);
            h.fails(
                "concourse-worker.sh",
                ["ensure", "--version", v2Version, "--url", `file://${v2}`, "--sha256", wrong, "--unit", UNIT, ...files.flags],
                new RegExp(`file://${v2} does not match sha256 ${wrong}`),
            );
            assert.ok(!fs.existsSync(path.join(h.prefix, NEW_RELEASE_MARK)), "the installed release stays");
            assert.strictEqual(sha256(concourse(h)), concourseSha);
            assert.deepStrictEqual(h.calls("systemctl"), []);
            assert.deepStrictEqual(fs.readdirSync(h.tmp), [], "the download is cleaned up");
            h.fails(
                "concourse-worker.sh",
                ["ensure", "--version", v2Version, "--url", `file://${v2}`, "--unit", UNIT, "--env", files.env],
                /--url needs --sha256/,
            );
        });

        it("--wrap-runc puts the wrapper in Concourse's runc and keeps the real one aside; remove restores it byte for byte", () => {
            const h = new FakeHost("cw-wrap");
            const files = workerFiles(h);
            const { shim, restored } = installerShim(h);
            const aside = path.join(h.state, "concourse-runc.real");
            const args = [
                "ensure",
                "--version",
                v1Version,
                "--archive",
                v1,
                "--unit",
                UNIT,
                ...files.flags,
                "--wrap-runc",
                shim,
                "--wrapper",
                wrapper,
                "--wrapper-sha256",
                wrapperSha,
            ];
            assert.match(h.ok("concourse-worker.sh", args).stdout, /installed the wrapper at .*concourse\/bin\/runc/);
            assert.strictEqual(sha256(runc(h)), wrapperSha);
            assert.strictEqual(sha256(aside), runcSha);
            assert.match(fs.readFileSync(`${aside}.state`, "utf8"), new RegExp(`^runc=${runc(h)}\ninstalled=${wrapperSha}\n$`));

            h.resetLog();
            assert.match(h.ok("concourse-worker.sh", args).stdout, /already holds the wrapper/);
            assert.strictEqual(sha256(runc(h)), wrapperSha);
            assert.strictEqual(sha256(aside), runcSha, "a second run does not put the wrapper aside as the real runc");
            assert.deepStrictEqual(h.restarts(), []);

            const remove = ["remove", "--unit", UNIT, "--wrap-runc", shim];
            h.resetLog();
            h.ok("concourse-worker.sh", remove);
            assert.deepStrictEqual(fs.readFileSync(restored, "utf8").trim().split("\n"), [runcSha], "Concourse's own runc was back before the prefix went");
            assert.ok(h.calls("systemctl").includes(`systemctl disable --now ${UNIT}`));
            assert.ok(!fs.existsSync(path.join(h.prefix, "concourse")));
            assert.deepStrictEqual(fs.readdirSync(h.state), [], "every state file is gone");
            h.ok("concourse-worker.sh", remove);
            assert.strictEqual(fs.readFileSync(restored, "utf8").trim().split("\n").length, 1, "nothing to restore the second time");

            // The next ensure starts over from the tarball.
            h.ok("concourse-worker.sh", args);
            assert.strictEqual(sha256(runc(h)), wrapperSha);
            assert.strictEqual(sha256(aside), runcSha);
        });

        it("a wrapper with the wrong checksum is refused and Concourse's runc stays", () => {
            const h = new FakeHost("cw-badwrap");
            const files = workerFiles(h);
            const { shim } = installerShim(h);
            const bad = "0".repeat(64);
            h.fails(
                "concourse-worker.sh",
                [
                    "ensure",
                    "--version",
                    v1Version,
                    "--archive",
                    v1,
                    "--unit",
                    UNIT,
                    ...files.flags,
                    "--wrap-runc",
                    shim,
                    "--wrapper",
                    wrapper,
                    "--wrapper-sha256",
                    bad,
                ],
                new RegExp(`has sha256 ${wrapperSha}, expected ${bad}`),
            );
            assert.strictEqual(sha256(runc(h)), runcSha);
            assert.ok(!fs.existsSync(path.join(h.state, "concourse-runc.real")));
            assert.deepStrictEqual(h.restarts(), []);
            h.fails(
                "concourse-worker.sh",
                ["ensure", "--version", v1Version, "--archive", v1, "--unit", UNIT, "--env", files.env, "--wrap-runc", shim],
                /--wrap-runc needs --wrapper and --wrapper-sha256/,
            );
        });

        it("bad input: no --unit, a missing archive, a file that is no release", () => {
            const h = new FakeHost("cw-args");
            const env = ["--env", workerFiles(h).env];
            h.fails("concourse-worker.sh", ["ensure", "--version", v1Version, "--archive", v1, ...env], /--unit is required/);
            h.fails("concourse-worker.sh", ["ensure", "--version", v1Version, "--archive", v1, "--unit", UNIT], /--env is required/);
            h.fails("concourse-worker.sh", ["ensure", "--version", v1Version, "--unit", UNIT, ...env], /give --url URL --sha256 HEX or --archive PATH/);
            h.fails(
                "concourse-worker.sh",
                ["ensure", "--version", v1Version, "--archive", path.join(h.dir, "nope.tgz"), "--unit", UNIT, ...env],
                /archive .*nope\.tgz is missing/,
            );
            const notTar = path.join(h.dir, "concourse.tgz");
            fs.writeFileSync(notTar, "<html>not found</html>\n");
            h.fails(
                "concourse-worker.sh",
                ["ensure", "--version", v1Version, "--archive", notTar, "--unit", UNIT, ...env],
                /concourse\.tgz is not a gzip tarball/,
            );
            assert.deepStrictEqual(fs.readdirSync(h.prefix), []);
            assert.deepStrictEqual(h.calls("systemctl"), []);
        });
    });

    describe("concourse-install.sh: a host's own PREFIX/concourse", () => {
        /**
         * A stand-in shaped as Concourse's release (concourse/bin/concourse, executable, the one
         * file the script checks): CI runs these without the real tarball.
         */
        function standIn(h: FakeHost, version: string): string {
            const dir = fs.mkdtempSync(path.join(h.dir, "release-"));
            fs.mkdirSync(path.join(dir, "concourse/bin"), { recursive: true });
            fs.writeFileSync(path.join(dir, "concourse/bin/concourse"), `#!/bin/sh\necho stand-in ${version}\n`, { mode: 0o755 });
            fs.writeFileSync(path.join(dir, "concourse/bin/runc"), `runc of ${version}\n`, { mode: 0o755 });
            const tarball = path.join(h.dir, `concourse-${version}.tgz`);
            execFileSync("tar", ["-czf", tarball, "-C", dir, "concourse"]);
            return tarball;
        }

        /** Every entry under `top` (itself too) by relative path: type, mode, owner, and content or link target. */
        function tree(top: string): Record<string, string> {
            const out: Record<string, string> = {};
            const walk = (rel: string) => {
                const at = path.join(top, rel);
                const st = fs.lstatSync(at);
                const head = `mode ${(st.mode & 0o7777).toString(8)} owner ${st.uid}:${st.gid}`;
                if (st.isSymbolicLink()) out[rel] = `link -> ${fs.readlinkSync(at)} (${head})`;
                else if (st.isFile()) out[rel] = `file sha256 ${sha256(at)} (${head})`;
                else if (st.isDirectory()) {
                    out[rel] = `dir (${head})`;
                    for (const name of fs.readdirSync(at).sort()) walk(rel === "." ? name : path.join(rel, name));
                } else out[rel] = `other (${head})`;
            };
            walk(".");
            return out;
        }

        /** The host's own release folder: files of several modes, links (one dangling), nested and empty folders, another owner where root may give one. */
        function hostsOwn(root: string): void {
            const put = (rel: string, content: string, mode: number) => {
                fs.mkdirSync(path.join(root, path.dirname(rel)), { recursive: true });
                fs.writeFileSync(path.join(root, rel), content, { mode });
                fs.chmodSync(path.join(root, rel), mode);
            };
            put("bin/concourse", "#!/bin/sh\necho the host's own concourse\n", 0o755);
            put("bin/helper", "#!/bin/sh\nexit 0\n", 0o700);
            put("etc/worker.conf", "team=ml\n", 0o640);
            put("lib/plugins/deep/plugin.so", Buffer.from([0, 1, 2, 255]).toString("latin1"), 0o444);
            fs.mkdirSync(path.join(root, "empty"), { mode: 0o750 });
            fs.chmodSync(path.join(root, "empty"), 0o750);
            fs.symlinkSync("bin/concourse", path.join(root, "current"));
            fs.symlinkSync("/nonexistent/gone", path.join(root, "dangling"));
            fs.chmodSync(path.join(root, "lib/plugins"), 0o711);
            fs.chmodSync(root, 0o751);
            if (process.getuid?.() === 0) fs.chownSync(path.join(root, "etc/worker.conf"), 65534, 65534);
        }

        const release = (h: FakeHost) => path.join(h.prefix, "concourse");
        const ensure = (h: FakeHost, version: string, tarball: string) => h.ok("concourse-install.sh", ["ensure", "--version", version, "--archive", tarball]);

        it("ensure then remove over a host's own release folder puts it back byte for byte: content, modes, owners, links", () => {
            const h = new FakeHost("ci-own");
            hostsOwn(release(h));
            const before = tree(release(h));
            const [v1, v2] = [standIn(h, "1.0.0"), standIn(h, "2.0.0")];

            const first = ensure(h, "1.0.0", v1);
            assert.strictEqual(first.stdout, "changed\n");
            assert.match(first.stderr, /the host's own .*\/concourse is kept aside in .*concourse\.kept; remove puts it back/);
            assert.strictEqual(fs.readFileSync(path.join(release(h), "bin/concourse"), "utf8"), "#!/bin/sh\necho stand-in 1.0.0\n");
            assert.ok(!fs.existsSync(path.join(release(h), "etc")), "the release replaced the folder, not merged into it");
            // A new release replaces ours: what is kept stays the host's, not the release it replaced.
            assert.strictEqual(ensure(h, "2.0.0", v2).stdout, "changed\n");
            assert.strictEqual(fs.readFileSync(path.join(release(h), "bin/concourse"), "utf8"), "#!/bin/sh\necho stand-in 2.0.0\n");
            assert.deepStrictEqual(tree(path.join(h.state, "concourse.kept")), before);

            assert.match(h.ok("concourse-install.sh", ["remove"]).stderr, /the host's own .*\/concourse is back/);
            assert.deepStrictEqual(tree(release(h)), before);
            assert.deepStrictEqual(fs.readdirSync(h.state), [], "the marker and the kept copy are gone");
            assert.deepStrictEqual(fs.readdirSync(h.prefix), ["concourse"]);
            h.ok("concourse-install.sh", ["remove"]);
            assert.deepStrictEqual(tree(release(h)), before, "a second remove leaves it be");
        });

        it("a host's own PREFIX/concourse that is a link comes back as that link, and where it leads is never written", () => {
            const h = new FakeHost("ci-own-link");
            const elsewhere = path.join(h.dir, "opt-concourse");
            hostsOwn(elsewhere);
            const there = tree(elsewhere);
            fs.symlinkSync(elsewhere, release(h));
            ensure(h, "1.0.0", standIn(h, "1.0.0"));
            assert.ok(!fs.lstatSync(release(h)).isSymbolicLink(), "the release is a folder of its own");
            assert.deepStrictEqual(tree(elsewhere), there);
            h.ok("concourse-install.sh", ["remove"]);
            assert.strictEqual(fs.readlinkSync(release(h)), elsewhere);
            assert.deepStrictEqual(tree(elsewhere), there);
            assert.deepStrictEqual(fs.readdirSync(h.state), []);
        });

        it("without one, nothing is kept: a second release is no host's own, and remove leaves no PREFIX/concourse", () => {
            const h = new FakeHost("ci-none");
            ensure(h, "1.0.0", standIn(h, "1.0.0"));
            ensure(h, "2.0.0", standIn(h, "2.0.0"));
            assert.ok(!fs.existsSync(path.join(h.state, "concourse.kept")), "our own release was kept aside as the host's");
            h.ok("concourse-install.sh", ["remove"]);
            assert.deepStrictEqual(fs.readdirSync(h.prefix), []);
            assert.deepStrictEqual(fs.readdirSync(h.state), []);
        });
    });

    describe("concourse-web.sh", function () {
        this.timeout(120_000);
        const UNIT = "concourse-web.service";

        /**
         * A web that is starting: a real TCP listener (its own process, as the script runs
         * synchronously) that resets the first `resets` connections it takes, as a web being
         * (re)started does, then holds one open without a word, and then answers the info
         * endpoint. Stopped by the test.
         */
        async function startingWeb(resets: number): Promise<{ port: number; stop: () => void }> {
            const server = [
                "const net = require('net');",
                `let n = 0; const resets = ${resets};`,
                "net.createServer((c) => {",
                // A probe that gives up on the held connection resets it: that is no error of the web's.
                "  c.on('error', () => {});",
                "  if (++n <= resets) return c.resetAndDestroy();",
                "  if (n === resets + 1) return;",
                "  c.once('data', () => c.end('HTTP/1.0 200 OK\\r\\nContent-Type: application/json\\r\\n\\r\\n{}'));",
                "}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });",
            ].join("\n");
            const child = spawn(process.execPath, ["-e", server], { stdio: ["ignore", "pipe", "inherit"] });
            const port = await new Promise<number>((resolve, reject) => {
                child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
                child.once("exit", (code) => reject(new Error(`the listener exited ${code}`)));
            });
            return { port, stop: () => child.kill() };
        }

        it("a web that resets connections or holds one unanswered while it starts is waited for: no SIGPIPE, no hang", async function () {
            pendingWithout(this, "concourse");
            const { tarball: release, version } = suppliedRelease();
            const h = new FakeHost("cweb-starting");
            const unitFile = path.join(h.dir, UNIT);
            fs.writeFileSync(unitFile, "[Service]\nExecStart=/usr/local/concourse/bin/concourse web\n");
            const keysDir = path.join(h.dir, "worker-keys");
            fs.mkdirSync(keysDir);
            fs.writeFileSync(path.join(keysDir, "web.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0 web\n");
            // Only the 14th connection is answered: ensure waited through twelve resets (each a fair
            // chance of SIGPIPE for a probe that does not ignore it) and a web that never answered.
            const web = await startingWeb(12);
            try {
                const args = ["ensure", "--version", version, "--archive", release, "--unit", UNIT, "--port", String(web.port)];
                const keys = ["--keys-dir", keysDir, "--keys", path.join(h.dir, "authorized_worker_keys"), "--watch", unitFile];
                const r = h.run("concourse-web.sh", [...args, ...keys], 90_000);
                assert.strictEqual(r.status, 0, `ensure ended with ${r.signal ?? `exit ${r.status}`}:\n${r.out}`);
                assert.match(r.stdout, new RegExp(`${UNIT} answers on 127\\.0\\.0\\.1:${web.port}`));
                assert.deepStrictEqual(h.restarts(), [`systemctl restart ${UNIT}`]);
            } finally {
                web.stop();
            }
        });
    });

    describe("host scripts: shellcheck", () => {
        it("the five scripts (and the fake tools) pass shellcheck -S style", () => {
            ensureCommands(["shellcheck"], ["shellcheck"]);
            const scripts = spawnSync("shellcheck", ["-S", "style", ...HOST_SCRIPTS.map((s) => path.join(HOST_DIR, s))], { encoding: "utf8" });
            assert.strictEqual(scripts.status, 0, scripts.stdout + scripts.stderr);
            const fakes = spawnSync("shellcheck", ["-S", "style", "-s", "sh", ...FAKE_TOOLS.map((t) => path.join(FAKES, t))], { encoding: "utf8" });
            assert.strictEqual(fakes.status, 0, fakes.stdout + fakes.stderr);
        });
    });
});
