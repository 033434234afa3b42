/**
 * CDI specs rendered by the project, read by a real CDI consumer: podman (Debian 12 ships
 * 4.3, which reads specs only from /etc/cdi and /var/run/cdi; containers.conf's cdi_spec_dirs
 * came later). The specs describe test devices backed by /dev/null and /dev/zero, and the
 * container reports what it got. Then specs the validator rejects are handed to podman and to
 * cdi-check (the CDI library v1.1.2, which judges the specs on hosts), and what each does with
 * them is recorded and asserted.
 *
 * Isolation: podman storage lives in a temporary --root/--runroot (vfs driver, no network);
 * spec files get a unique kind and file name under /var/run/cdi and are removed in after().
 * Needs root (it writes /var/run/cdi), as CI runs.
 */
import * as assert from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderIntelCdiSpec } from "../../components/lib/cdi/intel-spec";
import { renderCdiSpec } from "../../components/lib/cdi/render";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { CdiSpecError, validateCdiSpec } from "../../components/lib/cdi/schema";
import { CDI_CHECK_BUILD_OUTPUT } from "../../components/lib/links/container-toolkit/render";
import { ensureCommands } from "../support/tools";

const SPEC_DIR = "/var/run/cdi";
const IMAGE = "localhost/gpu-workers-cdi-test:latest";
const BUSYBOX = "/bin/busybox";

/** true when the ELF file has no PT_INTERP program header (a static executable). */
function isStaticElf(file: string): boolean {
    const b = fs.readFileSync(file);
    if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2) return false; // ELF64 only
    const phoff = Number(b.readBigUInt64LE(0x20));
    const phentsize = b.readUInt16LE(0x36);
    const phnum = b.readUInt16LE(0x38);
    for (let i = 0; i < phnum; i++) if (b.readUInt32LE(phoff + i * phentsize) === 3) return false;
    return true;
}

interface PodmanRun {
    status: number | null;
    stdout: string;
    stderr: string;
}

describe("CDI specs in a real consumer (podman)", function () {
    this.timeout(300_000);
    const id = `t${process.pid.toString(16)}${Date.now().toString(16)}`;
    const kind = `${id}.gpu-workers.test/gpu`;
    const written: string[] = [];
    let work: string;
    let share: string;
    let storage: string[];
    let createdSpecDir = false;

    function podman(args: string[]): PodmanRun {
        const r = spawnSync("podman", [...storage, ...args], { encoding: "utf8", timeout: 120_000 });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }

    /** Runs the test image with CDI devices and a shell script; the flags podman needs on this host. */
    function runWith(devices: string[], script: string): PodmanRun {
        return podman([
            "run",
            "--rm",
            "--runtime",
            "runc",
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=4096:4096",
            "--network",
            "none",
            ...devices.flatMap((d) => ["--device", d]),
            IMAGE,
            "sh",
            "-c",
            script,
        ]);
    }

    function writeSpec(name: string, text: string): string {
        const file = path.join(SPEC_DIR, `gpu-workers-test-${id}-${name}`);
        fs.writeFileSync(file, text);
        written.push(file);
        return file;
    }

    function removeSpecs(): void {
        for (const f of written.splice(0)) fs.rmSync(f, { force: true });
    }

    before(() => {
        ensureCommands(["podman", "runc"], ["podman", "runc"]);
        if (process.getuid?.() !== 0) throw new Error("the podman CDI test needs root: it writes spec files to /var/run/cdi");
        if (!fs.existsSync(BUSYBOX)) ensureCommands(["busybox"], ["busybox-static"]);
        if (!isStaticElf(BUSYBOX))
            throw new Error(`${BUSYBOX} is dynamically linked (Debian package busybox): install busybox-static instead, the test image has no libc`);
        work = fs.mkdtempSync(path.join(os.tmpdir(), "cdi-podman-"));
        storage = [
            "--root",
            path.join(work, "root"),
            "--runroot",
            path.join(work, "run"),
            "--tmpdir",
            path.join(work, "tmp"),
            "--storage-driver",
            "vfs",
            "--cgroup-manager",
            "cgroupfs",
            "--events-backend",
            "file",
        ];
        // A local image without network: a static busybox in an otherwise empty root.
        const rootfs = path.join(work, "rootfs");
        for (const d of ["bin", "dev", "proc", "sys", "etc", "tmp", "opt"]) fs.mkdirSync(path.join(rootfs, d), { recursive: true });
        fs.copyFileSync(BUSYBOX, path.join(rootfs, "bin", "busybox"));
        fs.chmodSync(path.join(rootfs, "bin", "busybox"), 0o755);
        for (const applet of ["sh", "cat", "stat", "echo", "test", "touch", "ls", "env"]) fs.symlinkSync("busybox", path.join(rootfs, "bin", applet));
        execFileSync("tar", ["-C", rootfs, "-cf", path.join(work, "rootfs.tar"), "."]);
        const imported = podman(["import", path.join(work, "rootfs.tar"), IMAGE]);
        assert.strictEqual(imported.status, 0, imported.stderr);
        share = path.join(work, "share");
        fs.mkdirSync(share);
        fs.writeFileSync(path.join(share, "marker"), "fake driver files\n");
        createdSpecDir = !fs.existsSync(SPEC_DIR);
        fs.mkdirSync(SPEC_DIR, { recursive: true });
    });

    afterEach(removeSpecs);

    after(() => {
        removeSpecs();
        if (createdSpecDir && fs.existsSync(SPEC_DIR) && fs.readdirSync(SPEC_DIR).length === 0) fs.rmdirSync(SPEC_DIR);
        if (!work) return;
        spawnSync("podman", [...storage, "rm", "-af"], { stdio: "ignore" });
        // Nothing may stay mounted under the temporary storage before it is deleted.
        const mounts = fs
            .readFileSync("/proc/self/mountinfo", "utf8")
            .split("\n")
            .map((l) => l.split(" ")[4])
            .filter((m) => m && m.startsWith(work));
        for (const m of mounts.reverse()) spawnSync("umount", ["-l", m], { stdio: "ignore" });
        fs.rmSync(work, { recursive: true, force: true });
    });

    function hostDevice(p: string): string {
        return execFileSync("stat", ["-c", "%t:%T", p], { encoding: "utf8" }).trim();
    }

    it("injects the device nodes, environment and mounts the rendered spec promises, per requested device", () => {
        const spec = renderCdiSpec({
            kind,
            devices: [
                {
                    name: "gpu0",
                    deviceNodes: [{ path: "/dev/fakegpu0", hostPath: "/dev/null" }],
                    env: { FAKE_GPU_INDEX: "0" },
                    mounts: [{ hostPath: share, containerPath: "/opt/fake-driver", options: ["ro", "rbind"] }],
                },
                { name: "gpu1", deviceNodes: [{ path: "/dev/fakegpu1", hostPath: "/dev/zero" }], env: { FAKE_GPU_INDEX: "1" } },
                { name: "0:1", deviceNodes: [{ path: "/dev/fakemig01", hostPath: "/dev/zero" }] },
            ],
            containerEdits: { env: { FAKE_GPU_DRIVER: "1.0" } },
        });
        writeSpec("good.yaml", spec);
        const report =
            'stat -c "%F %t:%T" /dev/fakegpu0 /dev/fakegpu1 /dev/fakemig01 2>&1; echo "index=$FAKE_GPU_INDEX driver=$FAKE_GPU_DRIVER"; cat /opt/fake-driver/marker 2>&1; touch /opt/fake-driver/x 2>/dev/null && echo writable || echo read-only';

        const one = runWith([`${kind}=gpu0`], report);
        assert.strictEqual(one.status, 0, one.stderr);
        assert.deepStrictEqual(one.stdout.trim().split("\n"), [
            `character special file ${hostDevice("/dev/null")}`,
            "stat: can't stat '/dev/fakegpu1': No such file or directory",
            "stat: can't stat '/dev/fakemig01': No such file or directory",
            "index=0 driver=1.0",
            "fake driver files",
            "read-only",
        ]);

        const both = runWith([`${kind}=gpu0`, `${kind}=gpu1`, `${kind}=0:1`], 'stat -c "%F %t:%T" /dev/fakegpu0 /dev/fakegpu1 /dev/fakemig01');
        assert.strictEqual(both.status, 0, both.stderr);
        assert.deepStrictEqual(both.stdout.trim().split("\n"), [
            `character special file ${hostDevice("/dev/null")}`,
            `character special file ${hostDevice("/dev/zero")}`,
            `character special file ${hostDevice("/dev/zero")}`,
        ]);

        const unknown = runWith([`${kind}=gpu7`], "true");
        assert.notStrictEqual(unknown.status, 0);
        assert.match(unknown.stderr, new RegExp(`unresolvable CDI devices ${kind.replace(/\./g, "\\.")}=gpu7`));
    });

    it("reads the lowest cdiVersion the renderer picks; records which declared versions this podman reads", () => {
        const accepted: string[] = [];
        for (const version of ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"] as const) {
            writeSpec(`v${version}.yaml`, renderCdiSpec({ kind, cdiVersion: version, devices: [{ name: "gpu0", env: { SEEN: version } }] }));
            const r = runWith([`${kind}=gpu0`], "echo $SEEN");
            if (r.status === 0 && r.stdout.trim() === version) accepted.push(version);
            removeSpecs();
        }
        console.log(`      podman ${podmanVersion()} reads CDI versions: ${accepted.join(", ")}`);
        // The renderer's default for plain device specs (hostPath, digit names) is 0.5.0 at most.
        const rendered = renderCdiSpec({ kind, devices: [{ name: "0", deviceNodes: [{ path: "/dev/fakegpu0", hostPath: "/dev/null" }] }] });
        assert.match(rendered, /^---\ncdiVersion: 0\.5\.0\n/);
        assert.ok(accepted.includes("0.5.0"), `podman must read the renderer's version 0.5.0 (it reads: ${accepted.join(", ")})`);
    });

    /** Specs the validator rejects, what podman 4.3 was measured to do with them, and cdi-check's verdict (the library the hosts' specs are judged by). */
    const BAD_SPECS: { name: string; yaml: string; podman: "refused" | "fails at start" | "accepted"; library?: "accepted"; version?: string }[] = [
        { name: "env entry without =", podman: "refused", yaml: "  - name: gpu0\n    containerEdits:\n      env: [NOEQUALS, SEEN=1]\n" },
        { name: "env entry starting with =", podman: "refused", yaml: '  - name: gpu0\n    containerEdits:\n      env: ["=x", SEEN=1]\n' },
        {
            name: "duplicate device names",
            podman: "refused",
            yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n  - name: gpu0\n    containerEdits:\n      env: [SEEN=2]\n",
        },
        {
            name: "relative hook path",
            podman: "fails at start",
            library: "accepted",
            yaml: '  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n      hooks:\n        - hookName: createContainer\n          path: "true"\n',
        },
        {
            name: "unknown hook name",
            podman: "refused",
            yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n      hooks:\n        - hookName: prestop\n          path: /bin/true\n",
        },
        {
            name: "device type x",
            podman: "refused",
            yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n      deviceNodes:\n        - path: /dev/fakegpu0\n          hostPath: /dev/null\n          type: x\n",
        },
        {
            name: "permissions rwx",
            podman: "refused",
            yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n      deviceNodes:\n        - path: /dev/fakegpu0\n          hostPath: /dev/null\n          permissions: rwx\n",
        },
        { name: "unknown key", podman: "refused", yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n    extra: 1\n" },
        { name: "device without edits", podman: "refused", yaml: "  - name: gpu0\n    containerEdits: {}\n" },
        // Looser than the spec in podman 4.3's CDI library: the validator follows SPEC.md.
        {
            name: "device name starting with a digit in a 0.4.0 spec",
            podman: "accepted",
            version: "0.4.0",
            yaml: '  - name: "0"\n    containerEdits:\n      env: [SEEN=1]\n',
        },
        {
            name: "relative device path",
            podman: "accepted",
            library: "accepted",
            yaml: "  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n      deviceNodes:\n        - path: dev/fakegpu0\n          hostPath: /dev/null\n",
        },
    ];

    it("a spec the validator rejects is refused by podman, fails at start, or (where podman 4.3 is looser than SPEC.md) is recorded as accepted; cdi-check refuses all that podman refuses", () => {
        const table: string[] = [];
        for (const bad of BAD_SPECS) {
            const text = `cdiVersion: ${bad.version ?? "0.5.0"}\nkind: ${kind}\ndevices:\n${bad.yaml}`;
            let validator = "";
            try {
                validateCdiSpec(text, "spec");
                assert.fail(`${bad.name}: the validator accepted it`);
            } catch (err) {
                assert.ok(err instanceof CdiSpecError, String(err));
                validator = err.problems.join("; ");
            }
            const file = writeSpec("bad.yaml", text);
            const judged = spawnSync(CDI_CHECK_BUILD_OUTPUT, [file], { encoding: "utf8" });
            const library = judged.status === 0 ? "accepted" : judged.status === 1 ? "refused" : `exit ${judged.status}: ${judged.stderr}`;
            const r = runWith([`${kind}=${bad.yaml.includes('name: "0"') ? "0" : "gpu0"}`], "echo SEEN=$SEEN");
            removeSpecs();
            const outcome = r.status === 0 ? "accepted" : /unresolvable CDI devices/.test(r.stderr) ? "refused" : "fails at start";
            const said = r.status === 0 ? r.stdout.trim() : r.stderr.trim().split("\n").pop();
            const librarySaid = judged.stdout
                .trim()
                .replace(/^\S+: /gm, "")
                .split("\n")
                .join("; ");
            table.push(
                `      ${bad.name}\n        validator: ${validator}\n        podman:    ${outcome} (${said})\n        cdi-check: ${library}${librarySaid ? ` (${librarySaid})` : ""}`,
            );
            assert.strictEqual(outcome, bad.podman, `${bad.name}: podman ${outcome}: ${said}`);
            assert.strictEqual(library, bad.library ?? "refused", `${bad.name}: cdi-check ${library}: ${librarySaid}`);
        }
        console.log(table.join("\n"));
    });

    it("applies the intel.com/gpu spec rendered from an Intel inventory: the asked GPU's card and render nodes and its by-path links, no other GPU's", () => {
        // Nodes of this test's own in the host's /dev/dri, with /dev/null's numbers, and their by-path links.
        const gpus = [0, 1].map((i) => ({ card: `card${80 + i}`, render: `renderD${180 + i}`, address: `0000:8${i}:00.0` }));
        const made: string[] = [];
        const madeDri = !fs.existsSync("/dev/dri");
        fs.mkdirSync("/dev/dri/by-path", { recursive: true });
        try {
            for (const g of gpus) {
                for (const n of [g.card, g.render]) {
                    execFileSync("mknod", ["-m", "0660", `/dev/dri/${n}`, "c", "1", "3"]);
                    made.push(`/dev/dri/${n}`);
                }
                for (const [what, node] of [
                    ["card", g.card],
                    ["render", g.render],
                ]) {
                    fs.symlinkSync(`../${node}`, `/dev/dri/by-path/pci-${g.address}-${what}`);
                    made.push(`/dev/dri/by-path/pci-${g.address}-${what}`);
                }
            }
            const inventory = inventorySchema.parse({
                vendor: "intel",
                gpus: gpus.map((g, index) => ({
                    index,
                    model: "Intel Arc A770",
                    memoryMiB: 16384,
                    pciBusId: g.address,
                    cardNode: g.card,
                    renderNode: g.render,
                    driver: "xe",
                    pciDeviceId: "0x56a0",
                })),
            });
            writeSpec("intel.json", renderIntelCdiSpec(inventory.gpus));
            const r = runWith(
                ["intel.com/gpu=card81"],
                'stat -c "%n %F %t:%T" /dev/dri/card81 /dev/dri/renderD181 /dev/dri/by-path/pci-0000:81:00.0-card /dev/dri/by-path/pci-0000:81:00.0-render; ls /dev/dri',
            );
            assert.strictEqual(r.status, 0, r.stderr);
            const nul = hostDevice("/dev/null");
            assert.deepStrictEqual(r.stdout.trim().split("\n"), [
                `/dev/dri/card81 character special file ${nul}`,
                `/dev/dri/renderD181 character special file ${nul}`,
                `/dev/dri/by-path/pci-0000:81:00.0-card character special file ${nul}`,
                `/dev/dri/by-path/pci-0000:81:00.0-render character special file ${nul}`,
                "by-path",
                "card81",
                "renderD181",
            ]);
        } finally {
            for (const f of made.reverse()) fs.rmSync(f, { force: true });
            if (fs.existsSync("/dev/dri/by-path") && fs.readdirSync("/dev/dri/by-path").length === 0) fs.rmdirSync("/dev/dri/by-path");
            if (madeDri && fs.existsSync("/dev/dri") && fs.readdirSync("/dev/dri").length === 0) fs.rmdirSync("/dev/dri");
        }
    });

    it("kind rules: podman refuses a kind without a class; it accepts '_' in the vendor, which SPEC.md's DNS-subdomain rule forbids", () => {
        const noClass = `cdiVersion: 0.5.0\nkind: ${id}\ndevices:\n  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n`;
        assert.throws(() => validateCdiSpec(noClass), /kind: kind ".*" must be vendor\/class/);
        writeSpec("nokind.yaml", noClass);
        const refused = runWith([`${id}.test/gpu=gpu0`], "true");
        assert.notStrictEqual(refused.status, 0);
        removeSpecs();
        const underscoreKind = `${id}_x.test/gpu`;
        const underscore = `cdiVersion: 0.5.0\nkind: ${underscoreKind}\ndevices:\n  - name: gpu0\n    containerEdits:\n      env: [SEEN=1]\n`;
        assert.throws(() => validateCdiSpec(underscore), /must be a DNS subdomain/);
        writeSpec("underscore.yaml", underscore);
        const accepted = runWith([`${underscoreKind}=gpu0`], "echo SEEN=$SEEN");
        assert.strictEqual(accepted.status, 0, accepted.stderr);
        assert.strictEqual(accepted.stdout.trim(), "SEEN=1");
    });

    function podmanVersion(): string {
        return execFileSync("podman", ["--version"], { encoding: "utf8" })
            .trim()
            .replace(/^podman version /, "");
    }
});
