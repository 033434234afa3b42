import * as assert from "assert";
import { parse } from "smol-toml";
import {
    CONTAINERD_DROP_IN,
    CONTAINERD_IMPORT_GLOB,
    CONTAINERD_MAIN_CONFIG,
    CONTAINERD_SETTINGS_FILE,
    CONTAINERD_TOML_BUILD_OUTPUT,
    CONTAINERD_TOML_PATH,
    ensureImports,
    renderConcourseContainerdConfig,
    renderContainerdDropIn,
    renderContainerdRuntimeComponent,
} from "../../components/lib/links/containerd/render";
import { HOST_LIB_DIR } from "../../components/lib/host/steps";

/** The parts of a containerd config that the tests read. */
interface ContainerdDoc {
    version?: number;
    imports?: string[];
    plugins: Record<
        string,
        {
            containerd: { default_runtime_name?: string; runtimes: Record<string, { runtime_type?: string; options: Record<string, unknown> }> };
            enable_cdi?: boolean;
            cdi_spec_dirs?: string[];
            cni: { bin_dir: string };
        }
    >;
}
const WRAPPER = "/usr/local/lib/gpu-workers/runc-wrapper";
/** Parses TOML into plain objects (smol-toml's have no prototype). */
const toml = (text: string): ContainerdDoc => JSON.parse(JSON.stringify(parse(text))) as ContainerdDoc;

describe("containerd drop-in (render)", () => {
    it("adds the runtime with the wrapper as BinaryName, keeps runc, no default when not asked", () => {
        const text = renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER, makeDefault: false, enableCdi: false });
        const doc = toml(text);
        assert.strictEqual(doc.version, 2);
        const cri = doc.plugins["io.containerd.grpc.v1.cri"];
        assert.deepStrictEqual(cri.containerd.runtimes.gpu, { runtime_type: "io.containerd.runc.v2", options: { BinaryName: WRAPPER } });
        assert.deepStrictEqual(cri.containerd.runtimes.runc, { runtime_type: "io.containerd.runc.v2", options: {} });
        assert.strictEqual(cri.containerd.default_runtime_name, undefined);
        assert.strictEqual(cri.enable_cdi, undefined);
        assert.deepStrictEqual(Object.keys(doc), ["version", "plugins"]);
        assert.ok(
            text.includes('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu.options]\nBinaryName = "/usr/local/lib/gpu-workers/runc-wrapper"\n'),
        );
    });

    it("Kata's GPU runtime only when asked, beside the wrapper's; a wrapper entry by kata's name is refused", () => {
        const plain = toml(renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER, makeDefault: false, enableCdi: false }));
        assert.deepStrictEqual(Object.keys(plain.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes).sort(), ["gpu", "runc"]);
        const doc = toml(renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER, makeDefault: false, enableCdi: false, kata: true }));
        const runtimes = doc.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes;
        assert.deepStrictEqual(runtimes["kata-qemu-nvidia-gpu"], {
            runtime_type: "io.containerd.kata-qemu-nvidia-gpu.v2",
            runtime_path: "/opt/kata/bin/containerd-shim-kata-v2",
            privileged_without_host_devices: true,
            pod_annotations: ["io.katacontainers.*"],
            options: { ConfigPath: "/opt/kata/share/defaults/kata-containers/configuration-qemu-nvidia-gpu.toml" },
        });
        assert.deepStrictEqual(runtimes.gpu, { runtime_type: "io.containerd.runc.v2", options: { BinaryName: WRAPPER } });
        assert.throws(
            () => renderContainerdDropIn({ runtimeName: "kata-qemu-nvidia-gpu", binaryName: WRAPPER, makeDefault: false, enableCdi: false, kata: true }),
            /containerd\.runtimeName: kata-qemu-nvidia-gpu is Kata's runtime/,
        );
    });

    it("default runtime and CDI when asked", () => {
        const doc = toml(renderContainerdDropIn({ runtimeName: "nvidia-gpu", binaryName: WRAPPER, makeDefault: true, enableCdi: true }));
        const cri = doc.plugins["io.containerd.grpc.v1.cri"];
        assert.strictEqual(cri.containerd.default_runtime_name, "nvidia-gpu");
        assert.strictEqual(cri.enable_cdi, true);
        assert.deepStrictEqual(cri.cdi_spec_dirs, ["/etc/cdi", "/var/run/cdi"]);
        const custom = toml(renderContainerdDropIn({ runtimeName: "gpu", binaryName: WRAPPER, makeDefault: true, enableCdi: true, cdiSpecDirs: ["/opt/cdi"] }));
        assert.deepStrictEqual(custom.plugins["io.containerd.grpc.v1.cri"].cdi_spec_dirs, ["/opt/cdi"]);
    });

    it("names with dots and quotes in paths come out as valid TOML", () => {
        const odd = '/opt/a "b"/runc\\wrapper';
        const doc = toml(renderContainerdDropIn({ runtimeName: "gpu.v2", binaryName: odd, makeDefault: true, enableCdi: false }));
        assert.strictEqual(doc.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes["gpu.v2"].options.BinaryName, odd);
    });

    it("bad settings: clear errors", () => {
        assert.throws(() => renderContainerdDropIn({ runtimeName: "GPU!", binaryName: WRAPPER, makeDefault: false, enableCdi: false }), /runtimeName/);
        assert.throws(
            () => renderContainerdDropIn({ runtimeName: "runc", binaryName: WRAPPER, makeDefault: false, enableCdi: false }),
            /containerd's own default/,
        );
        assert.throws(
            () => renderContainerdDropIn({ runtimeName: "gpu", binaryName: "runc-wrapper", makeDefault: false, enableCdi: false }),
            /binaryName: expected an absolute path/,
        );
    });
});

describe("containerd main config imports (ensureImports)", () => {
    const glob = CONTAINERD_IMPORT_GLOB;

    it("no config: a minimal version 2 config that imports the drop-ins", () => {
        const text = ensureImports("", glob);
        assert.deepStrictEqual(toml(text), { version: 2, imports: [glob] });
        assert.strictEqual(text, `version = 2\nimports = [ "${glob}" ]\n`);
    });

    it("adds the import as the first line and keeps every other line (comments too)", () => {
        const existing = '# host settings\nversion = 2\n\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/usr/lib/cni" # Debian\n';
        const text = ensureImports(existing, glob);
        assert.strictEqual(text, `imports = [ "${glob}" ]\n` + existing);
        const doc = toml(text);
        assert.deepStrictEqual(doc.imports, [glob]);
        assert.strictEqual(doc.plugins["io.containerd.grpc.v1.cri"].cni.bin_dir, "/usr/lib/cni");
    });

    it("returns the text unchanged when the import is there (no restart)", () => {
        const existing = `version = 2\nimports = ["/other/*.toml", "${glob}"]\n`;
        assert.strictEqual(ensureImports(existing, glob), existing);
        const once = ensureImports("version = 2\n", glob);
        assert.strictEqual(ensureImports(once, glob), once);
    });

    it("refuses what it cannot extend safely", () => {
        assert.throws(() => ensureImports('imports = ["/x/*.toml"]\nversion = 2\n', glob), /add "\/etc\/containerd\/conf.d\/\*.toml" to that list/);
        assert.throws(() => ensureImports("[plugins.cri]\nx = 1\n", glob), /version = 2 \(got no version, i.e. version 1\)/);
        assert.throws(() => ensureImports("version = 2\n[broken\n", glob), /not valid TOML/);
    });
});

describe("Concourse's containerd config (render)", () => {
    it("Concourse's own defaults: no CRI, overlayfs only", () => {
        const doc = toml(renderConcourseContainerdConfig());
        assert.deepStrictEqual(doc, {
            version: 2,
            oom_score: -999,
            disabled_plugins: [
                "io.containerd.grpc.v1.cri",
                "io.containerd.snapshotter.v1.aufs",
                "io.containerd.snapshotter.v1.btrfs",
                "io.containerd.snapshotter.v1.zfs",
            ],
        });
    });
});

describe("ContainerdRuntime component (render)", () => {
    const helperBinary = { path: CONTAINERD_TOML_BUILD_OUTPUT, sha256: "1".repeat(64) };
    const settings = { runtimeName: "gpu", binaryName: WRAPPER, makeDefault: true, enableCdi: true, helperBinary };

    it("uploads our settings, containerd-toml and the script; containerd and runc come from the distribution where missing; the step applies, checks and removes", () => {
        const r = renderContainerdRuntimeComponent(settings);
        assert.deepStrictEqual(
            r.files.map((f) => f.path),
            [
                `${HOST_LIB_DIR}/runtime-packages.sh`,
                `${HOST_LIB_DIR}/ownership.sh`,
                CONTAINERD_SETTINGS_FILE,
                CONTAINERD_TOML_PATH,
                `${HOST_LIB_DIR}/apply-containerd-config.sh`,
            ],
        );
        assert.strictEqual(r.files[2].content, renderContainerdDropIn(settings));
        assert.deepStrictEqual({ ...r.files[3] }, { path: CONTAINERD_TOML_PATH, mode: "0755", content: "", artifact: helperBinary });
        const [packages, step] = r.steps;
        assert.strictEqual(packages.create, `${HOST_LIB_DIR}/runtime-packages.sh ensure containerd=containerd runc=runc`);
        const glob = CONTAINERD_IMPORT_GLOB.replace(/[.*]/g, "\\$&");
        assert.match(
            step.create,
            new RegExp(
                `apply-containerd-config.sh apply --ours ${CONTAINERD_SETTINGS_FILE} --toml ${CONTAINERD_TOML_PATH} --sha256 [0-9a-f]{64} --main ${CONTAINERD_MAIN_CONFIG} --drop-in ${CONTAINERD_DROP_IN} --import '${glob}'$`,
            ),
        );
        // A refresh runs the check: a hand edit of the host's main config is drift.
        assert.match(
            step.check!,
            new RegExp(
                `apply-containerd-config.sh check --ours ${CONTAINERD_SETTINGS_FILE} --toml ${CONTAINERD_TOML_PATH} --main ${CONTAINERD_MAIN_CONFIG} --drop-in ${CONTAINERD_DROP_IN} --import '${glob}'$`,
            ),
        );
        assert.ok(step.remove!.includes(" remove --main "));
        assert.deepStrictEqual(step.dependsOn, [
            `${HOST_LIB_DIR}/apply-containerd-config.sh`,
            CONTAINERD_SETTINGS_FILE,
            CONTAINERD_TOML_PATH,
            "runtime-packages",
        ]);
    });

    it("a settings change changes the step's command (so it runs again), the same settings do not", () => {
        const apply = (s: typeof settings) => renderContainerdRuntimeComponent(s).steps.find((step) => step.name === "containerd-runtime")!.create;
        const a = apply(settings);
        assert.strictEqual(apply({ ...settings }), a);
        assert.notStrictEqual(apply({ ...settings, makeDefault: false }), a);
    });
});
