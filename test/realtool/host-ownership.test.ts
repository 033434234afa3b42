/**
 * Destroy takes away only what gpu-workers installed, and puts back what the host had.
 *
 * Packages, with real apt and dpkg against a local signed repository (apt-sandbox.ts): a
 * toolkit or driver package the host had stays after remove, whether the pinned version failed
 * to install (a downgrade apt refuses, a missing dependency) or replaced it; a fresh install is purged with the dependencies it brought, and
 * not with one the host had; an install cut short (the run killed after dpkg) is finished by
 * the next remove.
 *
 * Services, placed files and the Concourse release, with the real systemd and dpkg of a
 * Debian 12 LXD instance, each component applied and deleted as the program does (its files
 * placed and removed with the commands of components/providers/host/resources.ts, its steps'
 * create and remove): fabricmanager enabled and running before keeps running, enabled, with
 * the package's own config back byte for byte; a web and a worker on one host share the
 * release and the scripts, and removing one leaves the other working; removing both leaves
 * nothing.
 */
import * as assert from "assert";
import { execFileSync, spawn, spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { localArtifact } from "../../components/chain/artifacts";
import { hostScriptFile } from "../../components/lib/host/scripts";
import { HostFile, RenderedComponent, shellCommand } from "../../components/lib/host/steps";
import { renderAptPinFile, renderVendorRepository } from "../../components/lib/render/apt-sources";
import { concourseReleaseArgs, concourseReleaseFiles } from "../../components/lib/concourse/release";
import { renderToolkitAptFiles, toolkitScriptArgs } from "../../components/lib/links/container-toolkit/render";
import { FABRIC_MANAGER_CONFIG, renderFabricManager, renderFabricManagerConfig } from "../../components/lib/links/fabric-manager/render";
import type { VendorRepository } from "../../components/lib/repos/vendor-repos";
import { driverPin } from "../../components/lib/toolkit/pins";
import { fileSetStdin, placeFileSetCommand, removeFilesCommand, stagingPath, writeFileCommand } from "../../components/lib/host/placed-files";
import { AptSandbox, LocalAptRepository, TestKey } from "./apt-sandbox";
import { ensureLxdTools, TestDaemon } from "./lxd-support";
import { HOST_DIR, tempDir } from "./wrapper-support";

const TOOLKIT = path.join(HOST_DIR, "container-toolkit.sh");
const DRIVER = path.join(HOST_DIR, "gpu-driver.sh");
const TOOLKIT_PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1"];
const NVRM_535 = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n";

describe("destroy removes only what it installed: packages (real apt and dpkg)", function () {
    this.timeout(300_000);
    let dir: string;
    let repo: LocalAptRepository;
    let key: TestKey;
    let n = 0;

    const repository = (): VendorRepository => ({
        id: "test-vendor",
        uris: `file:${repo.dir}`,
        suites: "/",
        components: "",
        key: key.armored,
        fingerprint: key.fingerprint,
    });

    /** A host of its own: apt's and dpkg's folders, the vendor's source and the toolkit pin for `version`. */
    function host(version: string): AptSandbox {
        const apt = new AptSandbox(path.join(dir, `host-${n++}`));
        for (const file of [
            ...renderToolkitAptFiles({ vendor: "nvidia", version, repository: repository() }, apt.paths),
            renderAptPinFile(driverPin("nvidia", "550.54.15"), apt.paths),
        ]) {
            fs.mkdirSync(path.dirname(file.path), { recursive: true });
            fs.writeFileSync(file.path, file.content, { mode: 0o644 });
        }
        return apt;
    }

    /** The host's own packages, installed with dpkg before gpu-workers comes. */
    const preinstall = (apt: AptSandbox, pkgs: string[], version: string) => apt.dpkgInstall(pkgs.map((p) => path.join(repo.dir, `${p}_${version}_all.deb`)));

    const toolkit = (apt: AptSandbox, action: "ensure" | "remove", version: string) =>
        apt.run("bash", [
            TOOLKIT,
            action,
            ...toolkitScriptArgs({ vendor: "nvidia", version, repository: repository() }, apt.paths).filter((a) => a !== "--dev-char-links"),
        ]);

    const sourceArgs = (apt: AptSandbox) => {
        const [keyring, source] = renderVendorRepository(repository(), apt.paths).map((f) => f.path);
        return ["--apt-source", source, "--keyring", keyring, "--fingerprint", key.fingerprint];
    };

    /** gpu-driver.sh with the loaded driver 535 (so a pinned 550 asks for a reboot). */
    function driver(apt: AptSandbox, action: "ensure" | "remove", version: string, aptConf?: string) {
        const root = path.join(apt.dir, "proc-root");
        fs.mkdirSync(path.join(root, "proc/driver/nvidia"), { recursive: true });
        fs.writeFileSync(path.join(root, "proc/driver/nvidia/version"), NVRM_535);
        return apt.run("bash", [DRIVER, action, "--vendor", "nvidia", "--version", version, ...sourceArgs(apt)], {
            GPU_WORKERS_ROOT: root,
            ...(aptConf ? { APT_CONFIG: aptConf } : {}),
        });
    }

    before(() => {
        dir = tempDir("gw-ownership-apt-");
        fs.chmodSync(dir, 0o755);
        repo = new LocalAptRepository(dir);
        key = repo.makeKey("vendor");
        for (const v of ["1.17.8-1", "1.17.9-1"]) {
            repo.deb("libnvidia-container1", v);
            repo.deb("nvidia-container-toolkit-base", v);
            repo.deb("nvidia-container-toolkit", v, { depends: `nvidia-container-toolkit-base (= ${v}), libnvidia-container1 (= ${v})` });
        }
        // A pinned version apt cannot install: a dependency no source has.
        repo.deb("libnvidia-container1", "1.17.6-1");
        repo.deb("nvidia-container-toolkit-base", "1.17.6-1");
        repo.deb("nvidia-container-toolkit", "1.17.6-1", {
            depends: "nvidia-container-toolkit-base (= 1.17.6-1), libnvidia-container1 (= 1.17.6-1), nvidia-missing-firmware",
        });
        // The host's own program, which comes to depend on the toolkit's base package.
        repo.deb("host-monitor", "1.0-1", { depends: "nvidia-container-toolkit-base" });
        for (const v of ["550.54.14-1", "550.54.15-1"]) repo.deb("nvidia-driver-550-server", v);
        repo.publish(key.fingerprint);
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("a pinned toolkit apt cannot install (a dependency no source has): remove leaves the host's toolkit installed", () => {
        const apt = host("1.17.6");
        preinstall(apt, TOOLKIT_PACKAGES, "1.17.9-1");
        const r = toolkit(apt, "ensure", "1.17.6");
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /nvidia-missing-firmware/, "apt's own words");
        const removed = toolkit(apt, "remove", "1.17.6");
        assert.strictEqual(removed.status, 0, removed.out);
        for (const pkg of TOOLKIT_PACKAGES) assert.strictEqual(apt.installed(pkg), "installed 1.17.9-1", pkg);
    });

    it("a pinned toolkit below the host's, a downgrade apt refuses: remove leaves the host's toolkit installed", () => {
        const apt = host("1.17.8");
        preinstall(apt, TOOLKIT_PACKAGES, "1.17.9-1");
        const r = toolkit(apt, "ensure", "1.17.8");
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /Packages were downgraded and -y was used without --allow-downgrades/);
        const removed = toolkit(apt, "remove", "1.17.8");
        assert.strictEqual(removed.status, 0, removed.out);
        for (const pkg of TOOLKIT_PACKAGES) assert.strictEqual(apt.installed(pkg), "installed 1.17.9-1", pkg);
    });

    it("a pinned toolkit that upgraded the host's: remove leaves the host's packages installed", () => {
        const apt = host("1.17.9");
        preinstall(apt, TOOLKIT_PACKAGES, "1.17.8-1");
        const r = toolkit(apt, "ensure", "1.17.9");
        assert.strictEqual(r.status, 0, r.out);
        for (const pkg of TOOLKIT_PACKAGES) assert.strictEqual(apt.installed(pkg), "installed 1.17.9-1", pkg);
        const removed = toolkit(apt, "remove", "1.17.9");
        assert.strictEqual(removed.status, 0, removed.out);
        for (const pkg of TOOLKIT_PACKAGES) assert.strictEqual(apt.installed(pkg), "installed 1.17.9-1", `${pkg}: the host's, at the pinned version`);
    });

    it("a fresh install is purged with the dependencies it brought, not with one the host had", () => {
        const apt = host("1.17.8");
        preinstall(apt, ["libnvidia-container1"], "1.17.8-1");
        const r = toolkit(apt, "ensure", "1.17.8");
        assert.strictEqual(r.status, 0, r.out);
        assert.strictEqual(apt.installed("nvidia-container-toolkit-base"), "installed 1.17.8-1");
        const removed = toolkit(apt, "remove", "1.17.8");
        assert.strictEqual(removed.status, 0, removed.out);
        assert.doesNotMatch(apt.installed("nvidia-container-toolkit"), /^installed/);
        assert.doesNotMatch(apt.installed("nvidia-container-toolkit-base"), /^installed/, "the dependency the install brought");
        assert.strictEqual(apt.installed("libnvidia-container1"), "installed 1.17.8-1", "the dependency the host had");
        assert.deepStrictEqual(fs.readdirSync(path.join(apt.dir, "gw-state")), [], "no record left");
    });

    it("packages a program of the host came to depend on stay, and remove says why", () => {
        const apt = host("1.17.8");
        assert.strictEqual(toolkit(apt, "ensure", "1.17.8").status, 0);
        const hostProgram = apt.run("apt-get", ["install", "-y", "-q", "host-monitor"]);
        assert.strictEqual(hostProgram.status, 0, hostProgram.out);
        const removed = toolkit(apt, "remove", "1.17.8");
        assert.strictEqual(removed.status, 0, removed.out);
        assert.match(removed.out, /left installed: .*nvidia-container-toolkit-base.*: removing them would take along host-monitor/);
        assert.strictEqual(apt.installed("host-monitor"), "installed 1.0-1");
        for (const pkg of TOOLKIT_PACKAGES) assert.strictEqual(apt.installed(pkg), "installed 1.17.8-1", pkg);
    });

    it("a driver package the host had, moved to the pinned version: remove leaves it installed", () => {
        const apt = host("1.17.8");
        preinstall(apt, ["nvidia-driver-550-server"], "550.54.14-1");
        const r = driver(apt, "ensure", "550.54.15");
        assert.match(r.out, /installed nvidia-driver-550-server=550\.54\.15-1, but 535\.104\.05 is loaded: reboot the host/);
        assert.strictEqual(apt.installed("nvidia-driver-550-server"), "installed 550.54.15-1");
        const removed = driver(apt, "remove", "550.54.15");
        assert.strictEqual(removed.status, 0, removed.out);
        assert.strictEqual(apt.installed("nvidia-driver-550-server"), "installed 550.54.15-1");
    });

    it("an install cut short after dpkg (the SSH session lost): the next remove purges what it installed", async () => {
        const apt = host("1.17.8");
        const mark = path.join(apt.dir, "dpkg-done");
        // apt runs this once dpkg has installed the package, and the run is killed there.
        const slow = path.join(apt.dir, "apt-slow.conf");
        fs.writeFileSync(slow, `${fs.readFileSync(apt.conf, "utf8")}DPkg::Post-Invoke { "touch ${mark}; sleep 120"; };\n`);
        const root = path.join(apt.dir, "proc-root");
        fs.mkdirSync(root);
        const run = spawn("bash", [DRIVER, "ensure", "--vendor", "nvidia", "--version", "550.54.15", ...sourceArgs(apt)], {
            env: { ...apt.env, APT_CONFIG: slow, GPU_WORKERS_ROOT: root },
            detached: true,
            stdio: "ignore",
        });
        const exited = new Promise((resolve) => run.on("exit", resolve));
        for (let waited = 0; !fs.existsSync(mark); waited += 100) {
            if (waited > 120_000) throw new Error("dpkg did not finish within 120 s");
            await new Promise((resolve) => setTimeout(resolve, 100));
        }
        process.kill(-run.pid!, "SIGKILL");
        await exited;
        assert.strictEqual(apt.installed("nvidia-driver-550-server"), "installed 550.54.15-1");
        const removed = driver(apt, "remove", "550.54.15");
        assert.strictEqual(removed.status, 0, removed.out);
        assert.doesNotMatch(apt.installed("nvidia-driver-550-server"), /^installed/);
        assert.deepStrictEqual(fs.readdirSync(path.join(apt.dir, "gw-state")), [], "no record left");
    });
});

describe("destroy puts back what the host had: services, placed files, the Concourse release (systemd and dpkg in an LXD instance)", function () {
    this.timeout(900_000);
    const INSTANCE = "gw-own";
    const FAKE_ROOT = "/opt/gw-fake-root";
    /** What the package ships: its own config, and a unit that records the config it started with. */
    const PACKAGE_CONFIG = "# nvidia-fabricmanager-550's own config\nFABRIC_MODE=0\nLOG_LEVEL=4\n";
    const FM_UNIT =
        "[Unit]\nDescription=test fabricmanager\n[Service]\nExecStart=/bin/sh -c 'cp /usr/share/nvidia/nvswitch/fabricmanager.cfg /run/fm-read.cfg; exec sleep infinity'\n[Install]\nWantedBy=multi-user.target\n";
    let daemon: TestDaemon;
    let dir: string;
    let fmDeb: string;
    let release: string;

    function sh(cmd: string, input: string | Buffer = ""): { status: number | null; out: string } {
        const r = spawnSync("lxc", ["exec", INSTANCE, "--", "bash", "-c", cmd], { env: daemon.env, input, encoding: "utf8", timeout: 180_000 });
        return { status: r.status, out: `${r.stdout}${r.stderr}` };
    }
    function ok(cmd: string, input: string | Buffer = ""): string {
        const r = sh(cmd, input);
        assert.strictEqual(r.status, 0, `${cmd}\n${r.out}`);
        return r.out;
    }
    const sha = (text: string | Buffer) => crypto.createHash("sha256").update(text).digest("hex");
    const hostSha = (file: string) => ok(`sha256sum ${file}`).split(" ")[0];

    /** Each path once, as the program places a component's files. */
    const unique = (files: HostFile[]) => files.filter((f, i) => files.findIndex((g) => g.path === f.path) === i);

    /** Applies a component as the program does: every file placed, then every step created. */
    function up(component: string, rendered: RenderedComponent, env = ""): void {
        for (const file of unique(rendered.files)) {
            if (file.artifact) {
                // A binary: copied to its staging path in the login user's home, then installed by its set.
                daemon.lxc("file", "push", "-q", "--create-dirs", file.artifact.path, `${INSTANCE}/root/${stagingPath(file.artifact.sha256)}`);
                ok(`cd /root && ${placeFileSetCommand([file], component, "root")}`, fileSetStdin([file]));
                assert.notStrictEqual(sh(`test -e /root/${stagingPath(file.artifact.sha256)}`).status, 0, "the staged copy is gone once installed");
            } else ok(writeFileCommand(file, component, false, "root"), file.content);
        }
        for (const step of rendered.steps) ok(`${env}${step.create}`);
    }

    /** Deletes it as the program does: the steps' remove, last first, then the files. */
    function down(component: string, rendered: RenderedComponent, env = ""): void {
        for (const step of [...rendered.steps].reverse()) if (step.remove) ok(`${env}${step.remove}`);
        for (const file of unique(rendered.files).reverse()) ok(removeFilesCommand([file], component, "root"));
    }

    /** What gpu-workers left in its state folder. */
    const records = () => ok("find /var/lib/gpu-workers -mindepth 1 2>/dev/null || true").trim();

    before(() => {
        ensureLxdTools();
        dir = tempDir("gw-ownership-lxd-");
        const repo = new LocalAptRepository(dir);
        fmDeb = repo.deb("nvidia-fabricmanager-550", "550.54.15-1", {
            files: { [FABRIC_MANAGER_CONFIG]: PACKAGE_CONFIG, "/lib/systemd/system/nvidia-fabricmanager.service": FM_UNIT },
            conffiles: [FABRIC_MANAGER_CONFIG],
        });
        repo.publish(repo.makeKey("vendor").fingerprint);
        // A stand-in for Concourse's release: its web answers the info endpoint, its worker runs.
        const bin = path.join(dir, "release", "concourse", "bin");
        fs.mkdirSync(bin, { recursive: true });
        fs.writeFileSync(
            path.join(bin, "concourse"),
            [
                "#!/bin/bash",
                'case "$1" in',
                '  web) exec perl -MIO::Socket::INET -e \'my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$ENV{CONCOURSE_BIND_PORT}", Listen => 5, ReuseAddr => 1) or die $!; while (my $c = $s->accept) { <$c>; print $c "HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\n{}"; close $c }\' ;;',
                "  worker) exec sleep infinity ;;",
                "  retire-worker) exit 0 ;;",
                '  *) echo "concourse (test) $*" ;;',
                "esac",
                "",
            ].join("\n"),
            { mode: 0o755 },
        );
        release = path.join(dir, "concourse.tgz");
        execFileSync("tar", ["-czf", release, "-C", path.join(dir, "release"), "concourse"]);

        daemon = TestDaemon.start();
        daemon.importImage("debian-12");
        daemon.lxc("launch", "gpu-workers/debian-12", INSTANCE);
        sh(
            'for i in $(seq 60); do systemctl is-system-running --quiet --wait 2>/dev/null && exit 0; [ "$(systemctl is-system-running 2>/dev/null)" = degraded ] && exit 0; sleep 1; done; exit 0',
        );
        daemon.lxc("file", "push", "-q", "-r", "--create-dirs", repo.dir, `${INSTANCE}/srv/`);
        // The instance has no network: its apt reads the test repository only.
        ok("rm -f /etc/apt/sources.list.d/* && echo 'deb [trusted=yes] file:/srv/repo ./' > /etc/apt/sources.list && apt-get update -qq");
        // An NVSwitch host with driver 550.54.15 loaded, as fabric-manager.sh reads it.
        ok(
            `mkdir -p ${FAKE_ROOT}/proc/driver/nvidia ${FAKE_ROOT}/proc/driver/nvidia-nvswitch/devices/0000:05:00.0 ${FAKE_ROOT}/proc/driver/nvidia-nvswitch/devices/0000:06:00.0` +
                ` && echo 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024' > ${FAKE_ROOT}/proc/driver/nvidia/version`,
        );
    });

    after(() => {
        daemon?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    describe("fabric-manager", () => {
        // Rendered by each test: the step reads its host scripts.
        const fabric = () => renderFabricManager({ partitions: [] });
        const env = `GPU_WORKERS_ROOT=${FAKE_ROOT} `;
        const ours = renderFabricManagerConfig({ partitions: [] });
        const state = () =>
            ok("systemctl is-enabled nvidia-fabricmanager 2>/dev/null; systemctl is-active nvidia-fabricmanager 2>/dev/null; true")
                .trim()
                .split("\n")
                .join(" ");

        it("a host without fabricmanager: installed, then purged with its unit and config", () => {
            up("fm", fabric(), env);
            assert.match(ok("dpkg-query -W -f '${db:Status-Status}' nvidia-fabricmanager-550"), /^installed$/);
            assert.strictEqual(ok("cat /run/fm-read.cfg"), ours, "running with the config gpu-workers placed");
            down("fm", fabric(), env);
            assert.doesNotMatch(sh("dpkg-query -W -f '${db:Status-Status}' nvidia-fabricmanager-550").out, /^installed/);
            assert.notStrictEqual(sh(`test -e ${FABRIC_MANAGER_CONFIG}`).status, 0, "no config left");
            assert.notStrictEqual(sh("test -e /lib/systemd/system/nvidia-fabricmanager.service").status, 0, "no unit left");
            assert.strictEqual(records(), "");
        });

        it("a fabricmanager the host had, enabled and running: it stays so, with the package's own config back byte for byte", () => {
            daemon.lxc("file", "push", "-q", fmDeb, `${INSTANCE}/tmp/fm.deb`);
            ok("dpkg -i /tmp/fm.deb >/dev/null && systemctl daemon-reload && systemctl enable --now nvidia-fabricmanager 2>/dev/null");
            const before = { config: hostSha(FABRIC_MANAGER_CONFIG), mode: ok(`stat -c '%a %U %Y' ${FABRIC_MANAGER_CONFIG}`) };
            assert.strictEqual(before.config, sha(PACKAGE_CONFIG));
            assert.strictEqual(state(), "enabled active");

            up("fm", fabric(), env);
            assert.strictEqual(ok("cat /run/fm-read.cfg"), ours, "restarted with the config gpu-workers placed");
            down("fm", fabric(), env);

            assert.strictEqual(hostSha(FABRIC_MANAGER_CONFIG), before.config, "the package's own config, byte for byte");
            assert.strictEqual(ok(`stat -c '%a %U %Y' ${FABRIC_MANAGER_CONFIG}`), before.mode, "with its mode, owner and time");
            assert.strictEqual(state(), "enabled active", "enabled and running, as before");
            assert.strictEqual(ok("cat /run/fm-read.cfg"), PACKAGE_CONFIG, "restarted with its own config");
            assert.match(ok("dpkg-query -W -f '${db:Status-Status}' nvidia-fabricmanager-550"), /^installed$/, "the host's package stays");
            assert.strictEqual(records(), "");
        });
    });

    describe("a web and a worker on one host", () => {
        const archive = "/usr/local/lib/gpu-workers/concourse.tgz";
        const releaseArtifact = () => localArtifact(release, "Concourse release");
        // Read by each test (a describe body reads no file).
        const webScript = () => hostScriptFile("concourse-web.sh");
        const workerScript = () => hostScriptFile("concourse-worker.sh");
        const releaseArgs = () => concourseReleaseArgs("7.0.0", releaseArtifact(), archive);
        const web = (): RenderedComponent => {
            const script = webScript();
            return {
                files: [
                    {
                        path: "/etc/systemd/system/concourse-web.service",
                        mode: "0644",
                        content:
                            "[Service]\nEnvironmentFile=/etc/concourse/web.env\nExecStart=/usr/local/concourse/bin/concourse web\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    { path: "/etc/concourse/web.env", mode: "0644", content: "CONCOURSE_BIND_PORT=8080\n" },
                    ...concourseReleaseFiles(releaseArtifact(), archive),
                    script,
                ],
                steps: [
                    {
                        name: "concourse-web",
                        create: shellCommand([
                            script.path,
                            "ensure",
                            ...releaseArgs(),
                            "--unit",
                            "concourse-web.service",
                            "--port",
                            "8080",
                            "--keys-dir",
                            "/etc/concourse/worker-keys",
                            "--keys",
                            "/etc/concourse/authorized_worker_keys",
                            "--watch",
                            "/etc/systemd/system/concourse-web.service",
                        ]),
                        remove: shellCommand([script.path, "remove", "--unit", "concourse-web.service", "--keys", "/etc/concourse/authorized_worker_keys"]),
                        dependsOn: [],
                    },
                ],
            };
        };
        const worker = (): RenderedComponent => {
            const script = workerScript();
            return {
                files: [
                    {
                        path: "/etc/systemd/system/concourse-worker.service",
                        mode: "0644",
                        content:
                            "[Service]\nEnvironmentFile=/etc/concourse/worker.env\nExecStart=/usr/local/concourse/bin/concourse worker\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    {
                        path: "/etc/concourse/worker.env",
                        mode: "0644",
                        content:
                            "CONCOURSE_NAME=gw-test-worker\nCONCOURSE_TSA_HOST=127.0.0.1:2222\nCONCOURSE_TSA_PUBLIC_KEY=/etc/concourse/tsa_host_key.pub\nCONCOURSE_TSA_WORKER_PRIVATE_KEY=/etc/concourse/worker_key\nCONCOURSE_WORK_DIR=/opt/concourse/worker\n",
                    },
                    ...concourseReleaseFiles(releaseArtifact(), archive),
                    script,
                ],
                steps: [
                    {
                        name: "concourse-worker",
                        create: shellCommand([
                            script.path,
                            "ensure",
                            ...releaseArgs(),
                            "--unit",
                            "concourse-worker.service",
                            "--env",
                            "/etc/concourse/worker.env",
                            "--watch",
                            "/etc/systemd/system/concourse-worker.service",
                        ]),
                        remove: shellCommand([
                            script.path,
                            "remove",
                            "--unit",
                            "concourse-worker.service",
                            "--env",
                            "/etc/concourse/worker.env",
                            "--retire-timeout",
                            "1",
                        ]),
                        dependsOn: [],
                    },
                ],
            };
        };
        const answers = () => sh("exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /api/v1/info HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3").out;
        const active = (unit: string) => sh(`systemctl is-active ${unit}`).out.trim();
        const containerd = () =>
            ok("systemctl is-enabled containerd 2>/dev/null; systemctl is-active containerd 2>/dev/null; true").trim().split("\n").join(" ");
        let containerdBefore = "";

        before(() => {
            containerdBefore = containerd();
        });

        /** Nothing of either is left, and the host's containerd is as it was. */
        function nothingLeft(): void {
            assert.notStrictEqual(sh("test -e /usr/local/concourse").status, 0, "the release is gone with its last user");
            assert.notStrictEqual(sh("test -e /usr/local/lib/gpu-workers").status, 0, "and the scripts and archive with theirs");
            assert.strictEqual(records(), "");
            assert.strictEqual(containerd(), containerdBefore);
        }

        it("removing the web leaves the worker's release, scripts and unit working; removing the worker then removes them", () => {
            up("web", web());
            up("worker", worker());
            assert.match(answers(), /200 OK/);
            assert.strictEqual(active("concourse-worker"), "active");

            down("web", web());
            assert.notStrictEqual(active("concourse-web"), "active");
            assert.match(ok("/usr/local/concourse/bin/concourse version"), /concourse \(test\) version/, "the release stays");
            ok("systemctl restart concourse-worker");
            assert.strictEqual(active("concourse-worker"), "active", "the worker's unit (re)starts from it");
            for (const script of ["concourse-install.sh", "ownership.sh", "concourse-worker.sh"]) ok(`test -x /usr/local/lib/gpu-workers/${script}`);
            ok(`test -f ${archive}`);

            down("worker", worker());
            assert.notStrictEqual(active("concourse-worker"), "active");
            nothingLeft();
        });

        it("removing the worker leaves the web answering; removing the web then removes the release", () => {
            up("web", web());
            up("worker", worker());
            down("worker", worker());
            ok("systemctl restart concourse-web");
            for (let i = 0; i < 50 && !/200 OK/.test(answers()); i++) ok("sleep 0.2");
            assert.match(answers(), /200 OK/, "the web still runs from the release");
            ok("/usr/local/lib/gpu-workers/concourse-install.sh check --version 7.0.0 --archive " + archive);
            down("web", web());
            nothingLeft();
        });
    });
});
