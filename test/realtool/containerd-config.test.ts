/**
 * apply-containerd-config.sh with the real containerd as the judge: `containerd config
 * dump` shows what containerd really makes of the main config plus our drop-in. Host
 * settings survive (containerd 1.6 replaces whole plugin sections from imported files),
 * whatever TOML form they are written in (containerd-toml parses them), files are written
 * and containerd restarted only when something changed, a later edit of the main config
 * is drift that the next apply carries, and remove puts the main config back byte for byte.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parse } from "smol-toml";
import { CONTAINERD_TOML_BUILD_OUTPUT, ensureImports, KATA_GPU_RUNTIME, renderContainerdDropIn } from "../../components/lib/links/containerd/render";
import { WRAPPER_PATH } from "../../components/lib/links/runc-wrapper/render";
import { ensureWrapperTools, HOST_DIR, sh, tempDir, TestContainerd } from "./wrapper-support";

/** Debian 12's /etc/containerd/config.toml as the containerd package ships it. */
const DEBIAN_MAIN = `version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
`;

/** A Kubernetes node's config: systemd cgroups, its own pause image, a multi-line list. */
const K8S_MAIN = `# managed by the cluster
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:3.9"
  max_concurrent_downloads = 7
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
`;

describe("apply-containerd-config.sh (real containerd config loading)", function () {
    this.timeout(300_000);
    let dir: string;
    let restarts: string;
    let env: NodeJS.ProcessEnv;

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-cfg-");
        restarts = path.join(dir, "systemctl.log");
        // A systemctl that says containerd is running and records restarts.
        const systemctl = path.join(dir, "systemctl");
        fs.writeFileSync(systemctl, `#!/bin/sh\n[ "$1" = is-active ] && exit 0\necho "$@" >> ${restarts}\n`, { mode: 0o755 });
        env = { ...process.env, GPU_WORKERS_SYSTEMCTL: systemctl, GPU_WORKERS_STATE_DIR: path.join(dir, "state") };
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    function host(name: string, main: string | null) {
        const d = path.join(dir, name);
        fs.mkdirSync(d);
        const paths = {
            main: path.join(d, "config.toml"),
            dropIn: path.join(d, "conf.d", "gpu-workers.toml"),
            ours: path.join(d, "ours.toml"),
            glob: path.join(d, "conf.d", "*.toml"),
        };
        if (main !== null) fs.writeFileSync(paths.main, main);
        return paths;
    }

    function apply(p: ReturnType<typeof host>, ours: string) {
        fs.writeFileSync(p.ours, ours);
        return spawnSync(
            "bash",
            [
                path.join(HOST_DIR, "apply-containerd-config.sh"),
                "apply",
                "--ours",
                p.ours,
                "--toml",
                CONTAINERD_TOML_BUILD_OUTPUT,
                "--main",
                p.main,
                "--drop-in",
                p.dropIn,
            ],
            { encoding: "utf8", env, timeout: 120_000 },
        );
    }

    /** The step's drift check, as a refresh runs it. */
    function check(p: ReturnType<typeof host>) {
        return spawnSync(
            "bash",
            [
                path.join(HOST_DIR, "apply-containerd-config.sh"),
                "check",
                "--ours",
                p.ours,
                "--toml",
                CONTAINERD_TOML_BUILD_OUTPUT,
                "--main",
                p.main,
                "--drop-in",
                p.dropIn,
            ],
            { encoding: "utf8", env, timeout: 120_000 },
        );
    }

    function remove(p: ReturnType<typeof host>) {
        return spawnSync("bash", [path.join(HOST_DIR, "apply-containerd-config.sh"), "remove", "--main", p.main, "--drop-in", p.dropIn], {
            encoding: "utf8",
            env,
            timeout: 120_000,
        });
    }

    const dump = (main: string) => sh("containerd", ["--config", main, "config", "dump"]);
    const restartCount = () => (fs.existsSync(restarts) ? fs.readFileSync(restarts, "utf8").split("\n").filter(Boolean).length : 0);
    const ours = (makeDefault: boolean) => renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER_PATH, makeDefault, enableCdi: true });

    it("Debian's config: our runtime added, the CNI paths kept, restart once; a second apply changes nothing", () => {
        const p = host("debian", DEBIAN_MAIN);
        const before = restartCount();
        const r = apply(p, ours(true));
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(fs.readFileSync(p.main, "utf8"), ensureImports(DEBIAN_MAIN, p.glob), "the script and ensureImports agree");
        const d = dump(p.main);
        assert.match(
            d,
            /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.gpu\.options\]\s+BinaryName = "\/usr\/local\/lib\/gpu-workers\/runc-wrapper"/,
        );
        assert.match(d, /default_runtime_name = "gpu"/);
        assert.match(d, /bin_dir = "\/usr\/lib\/cni"/);
        assert.match(
            d,
            /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.runc\]\n(?:(?!\s*\[).*\n)*\s*runtime_type = "io\.containerd\.runc\.v2"/,
            "containerd's default runc runtime is still there",
        );
        assert.strictEqual(restartCount(), before + 1);

        const stamp = fs.statSync(p.dropIn).mtimeMs;
        const again = apply(p, ours(true));
        assert.strictEqual(again.status, 0, again.stderr);
        assert.match(again.stdout, /unchanged/);
        assert.strictEqual(restartCount(), before + 1);
        assert.strictEqual(fs.statSync(p.dropIn).mtimeMs, stamp, "an unchanged drop-in is not rewritten");

        const changed = apply(p, ours(false));
        assert.strictEqual(changed.status, 0, changed.stderr);
        assert.match(dump(p.main), /default_runtime_name = "runc"/);
        assert.strictEqual(restartCount(), before + 2);

        const removed = remove(p);
        assert.strictEqual(removed.status, 0, removed.stderr);
        assert.strictEqual(fs.readFileSync(p.main, "utf8"), DEBIAN_MAIN, "the main config is back byte for byte");
        assert.ok(!fs.existsSync(p.dropIn));
        assert.strictEqual(restartCount(), before + 3);
        assert.match(remove(p).stdout, /nothing to remove/);
        assert.strictEqual(restartCount(), before + 3);
    });

    it("a Kubernetes node's config: systemd cgroups, pause image, snapshotter all survive", () => {
        const p = host("k8s", K8S_MAIN);
        const r = apply(p, ours(false));
        assert.strictEqual(r.status, 0, r.stderr);
        const d = dump(p.main);
        for (const kept of [
            /SystemdCgroup = true/,
            /sandbox_image = "registry\.example\/pause:3\.9"/,
            /snapshotter = "native"/,
            /max_concurrent_downloads = 7/,
            /default_runtime_name = "runc"/,
            /BinaryName = "\/usr\/local\/lib\/gpu-workers\/runc-wrapper"/,
        ]) {
            assert.match(d, kept);
        }
    });

    it("a Kubernetes node offering Kata: containerd's dump has kata's GPU runtime beside the wrapper's, and the node's own runc", () => {
        const p = host("kata", K8S_MAIN);
        const withKata = renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER_PATH, makeDefault: false, enableCdi: true, kata: true });
        const r = apply(p, withKata);
        assert.strictEqual(r.status, 0, r.stderr);
        type Runtime = {
            runtime_type?: string;
            runtime_path?: string;
            pod_annotations?: string[];
            privileged_without_host_devices?: boolean;
            options?: Record<string, unknown>;
        };
        const doc = JSON.parse(JSON.stringify(parse(dump(p.main)))) as { plugins: Record<string, { containerd: { runtimes: Record<string, Runtime> } }> };
        const runtimes = doc.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes;
        const kata = runtimes[KATA_GPU_RUNTIME.handler];
        assert.ok(kata, `containerd has no ${KATA_GPU_RUNTIME.handler} runtime: ${Object.keys(runtimes).join(", ")}`);
        assert.strictEqual(kata.runtime_type, "io.containerd.kata-qemu-nvidia-gpu.v2");
        assert.strictEqual(kata.runtime_path, "/opt/kata/bin/containerd-shim-kata-v2");
        assert.deepStrictEqual(kata.pod_annotations, ["io.katacontainers.*"]);
        assert.strictEqual(kata.privileged_without_host_devices, true);
        assert.match(String(kata.options?.ConfigPath), /^\/opt\/kata\/share\/defaults\/kata-containers\/[a-z0-9-]+\.toml$/);
        assert.strictEqual(runtimes.gpu.options?.BinaryName, WRAPPER_PATH, "the wrapper's entry is still there");
        assert.strictEqual(runtimes.runc.options?.SystemdCgroup, true, "the node's runc keeps its systemd cgroups");
        // Asked no more, the entry goes again.
        assert.strictEqual(apply(p, ours(false)).status, 0);
        const after = JSON.parse(JSON.stringify(parse(dump(p.main)))) as typeof doc;
        assert.strictEqual(after.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes[KATA_GPU_RUNTIME.handler], undefined);
    });

    it("no main config at all: one is created, and remove deletes it again", () => {
        const p = host("none", null);
        const r = apply(p, ours(true));
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(fs.readFileSync(p.main, "utf8"), ensureImports("", p.glob));
        assert.match(dump(p.main), /default_runtime_name = "gpu"/);
        assert.strictEqual(remove(p).status, 0);
        assert.ok(!fs.existsSync(p.main));
    });

    it("host settings in any TOML form are carried: dotted keys, inline tables, multi-line lists, quoted keys", () => {
        // Valid TOML that a line-by-line text merge does not carry (the awk merge refused it).
        const odd = [
            "version = 2",
            "[plugins]",
            '"io.containerd.grpc.v1.cri".sandbox_image = "registry.example/pause:1"',
            '"io.containerd.grpc.v1.cri".cni = { bin_dir = "/opt/cni/bin", conf_dir = "/etc/cni/net.d" }',
            '"io.containerd.grpc.v1.cri".registry.config_path = """',
            '/etc/containerd/certs.d"""',
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."runc"]',
            '  runtime_type = "io.containerd.runc.v2"',
            "  pod_annotations = [",
            '    "a.example/x",  # a comment inside a list',
            '    "b.example/y",',
            "  ]",
            "",
        ].join("\n");
        const p = host("odd", odd);
        const r = apply(p, ours(true));
        assert.strictEqual(r.status, 0, r.stderr);
        const d = dump(p.main);
        for (const kept of [
            /sandbox_image = "registry\.example\/pause:1"/,
            /bin_dir = "\/opt\/cni\/bin"/,
            /config_path = "\/etc\/containerd\/certs\.d"/,
            /pod_annotations = \["a\.example\/x", "b\.example\/y"\]/,
            /default_runtime_name = "gpu"/,
            /BinaryName = "\/usr\/local\/lib\/gpu-workers\/runc-wrapper"/,
        ]) {
            assert.match(d, kept);
        }
        assert.strictEqual(fs.readFileSync(p.main, "utf8"), ensureImports(odd, p.glob), "the main config keeps its own text");
    });

    it("the main config edited by hand after apply: check says so, and apply carries the edit (containerd's dump shows it)", () => {
        const p = host("edited", K8S_MAIN);
        assert.strictEqual(apply(p, ours(false)).status, 0);
        const fresh = check(p);
        assert.strictEqual(fresh.status, 0, fresh.stderr);
        const restartsBefore = restartCount();
        // A hand edit of a CRI setting: the drop-in, which replaces the whole CRI table, still holds the old one.
        fs.writeFileSync(p.main, fs.readFileSync(p.main, "utf8").replace("max_concurrent_downloads = 7", "max_concurrent_downloads = 3"));
        assert.match(dump(p.main), /max_concurrent_downloads = 7/, "until applied again, containerd keeps the value the drop-in froze");
        const drift = check(p);
        assert.notStrictEqual(drift.status, 0);
        assert.match(drift.stderr.trim().split("\n").pop()!, /differs from what .*config\.toml and our settings give now/);
        const again = apply(p, ours(false));
        assert.strictEqual(again.status, 0, again.stderr);
        assert.match(dump(p.main), /max_concurrent_downloads = 3/);
        assert.strictEqual(restartCount(), restartsBefore + 1, "the changed result restarts containerd once");
        assert.strictEqual(check(p).status, 0);
        const idle = apply(p, ours(false));
        assert.match(idle.stdout, /unchanged/);
        assert.strictEqual(restartCount(), restartsBefore + 1, "applying again with nothing edited changes nothing");
        // An edit outside the CRI table is no drift: the drop-in does not carry it.
        fs.appendFileSync(p.main, "\n# a comment\n");
        assert.strictEqual(check(p).status, 0);
        // Nor is the import line gone unnoticed.
        fs.writeFileSync(p.main, K8S_MAIN);
        assert.match(check(p).stderr, /no longer imports/);
    });

    it("a config it cannot merge without loss is refused, and left exactly as it was", () => {
        // Another drop-in in the same folder names the CRI table too: ours, read after it, would replace its settings.
        const p = host("other", DEBIAN_MAIN);
        const other = path.join(path.dirname(p.dropIn), "10-other.toml");
        fs.mkdirSync(path.dirname(other), { recursive: true });
        fs.writeFileSync(other, 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.example/pause:other"\n');
        const main = ensureImports(DEBIAN_MAIN, p.glob);
        fs.writeFileSync(p.main, main);
        const r = apply(p, ours(true));
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /would lose these settings of the host/);
        assert.match(r.stderr, /lost: plugins\."io\.containerd\.grpc\.v1\.cri"\.sandbox_image = "registry\.example\/pause:other" \(now "[^"]+"\)/);
        assert.strictEqual(fs.readFileSync(p.main, "utf8"), main);
        assert.ok(!fs.existsSync(p.dropIn));
        const v1 = host("v1", `[plugins.cri]\nsandbox_image = "x"\n`);
        const r1 = apply(v1, ours(true));
        assert.notStrictEqual(r1.status, 0);
        assert.match(r1.stderr, /not a version 2 config/);
        const broken = host("broken", "version = 2\n[plugins\n");
        const r2 = apply(broken, ours(true));
        assert.notStrictEqual(r2.status, 0);
        assert.match(r2.stderr, /is not valid TOML/);
        assert.strictEqual(fs.readFileSync(broken.main, "utf8"), "version = 2\n[plugins\n");
    });

    it("containerd starts with the applied config", async () => {
        const p = host("boot", DEBIAN_MAIN);
        assert.strictEqual(apply(p, ours(true)).status, 0);
        const daemon = new TestContainerd(path.join(dir, "boot"), p.main);
        try {
            await daemon.start();
            assert.match(daemon.ctr(["plugins", "ls"]), /io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok/);
        } finally {
            await daemon.stop();
        }
    });
});
