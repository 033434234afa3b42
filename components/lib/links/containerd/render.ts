/**
 * containerd's side of the chain, as pure functions: the drop-in that adds the GPU runtime
 * (the runc.v2 shim calling the wrapper) for CRI clients, the import line the host's main
 * config needs, the config of the containerd Concourse starts itself, and the host step
 * that applies them. TOML is always built from data with smol-toml, never spliced; on the
 * host, containerd-toml (a small static Go program, containerd-toml/) parses and merges.
 */
import * as path from "path";
import { parse, stringify, TomlPrimitive } from "smol-toml";
import { sha256Text } from "../../file-hash";
import { combine, hostScriptFile, PACKAGE_ROOT } from "../../host/scripts";
import { renderRuntimePackages, RUNTIME_PACKAGES_STEP } from "../../render/runtime-packages";
import { Artifact, HOST_LIB_DIR, HostFile, RenderedComponent, shellCommand } from "../../host/steps";

export interface ContainerdRuntimeSettings {
    /** CRI runtime handler name, e.g. "gpu" (Kubernetes RuntimeClass handler). */
    runtimeName: string;
    /** The runtime binary the runc.v2 shim runs for this handler: the wrapper. */
    binaryName: string;
    /** Make this handler CRI's default_runtime_name. */
    makeDefault: boolean;
    /** Turn on CRI's CDI support (containerd 1.7 and later; 1.6 ignores it). */
    enableCdi: boolean;
    /** Where CRI looks for CDI specs; default /etc/cdi and /var/run/cdi. */
    cdiSpecDirs?: string[];
    /** Also offer Kata Containers' GPU runtime (KATA_GPU_RUNTIME), beside the wrapper's. Default: false. */
    kata?: boolean;
    /** The built containerd-toml to upload (CONTAINERD_TOML_BUILD_OUTPUT, hashed where the build is known). */
    helperBinary: Artifact;
}

export const CONTAINERD_MAIN_CONFIG = "/etc/containerd/config.toml";
export const CONTAINERD_DROP_IN_DIR = "/etc/containerd/conf.d";
export const CONTAINERD_DROP_IN = `${CONTAINERD_DROP_IN_DIR}/gpu-workers.toml`;
export const CONTAINERD_IMPORT_GLOB = `${CONTAINERD_DROP_IN_DIR}/*.toml`;
/** Our settings as uploaded; the host step merges them into the drop-in. */
export const CONTAINERD_SETTINGS_FILE = `${HOST_LIB_DIR}/containerd-runtime.toml`;
export const DEFAULT_CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"];
/** Where containerd-toml is uploaded: apply-containerd-config.sh merges TOML with it. */
export const CONTAINERD_TOML_PATH = `${HOST_LIB_DIR}/containerd-toml`;
/** The binary `npm run build` makes (scripts/build-containerd-toml.sh). */
export const CONTAINERD_TOML_BUILD_OUTPUT = path.join(PACKAGE_ROOT, "dist", "containerd-toml", "containerd-toml");
const CRI = "io.containerd.grpc.v1.cri";
const RUNC_V2 = "io.containerd.runc.v2";

/**
 * Kata Containers' runtime for pods with a GPU passed into their VM (kata-deploy's names): the
 * CRI handler, its shim, and the shim's configuration. A Kubernetes RuntimeClass names the handler.
 */
export const KATA_GPU_RUNTIME = {
    handler: "kata-qemu-nvidia-gpu",
    runtimeType: "io.containerd.kata-qemu-nvidia-gpu.v2",
    runtimePath: "/opt/kata/bin/containerd-shim-kata-v2",
    configPath: "/opt/kata/share/defaults/kata-containers/configuration-qemu-nvidia-gpu.toml",
    /** The pod annotations the shim reads (io.katacontainers.config...): CRI passes only those it is told to. */
    podAnnotations: ["io.katacontainers.*"],
} as const;

type Table = { [key: string]: TomlPrimitive | Table };

function checkSettings(s: Omit<ContainerdRuntimeSettings, "helperBinary">): void {
    if (!/^[a-z0-9][a-z0-9_.-]*$/.test(s.runtimeName)) {
        throw new Error(`containerd.runtimeName: expected a name such as gpu, got ${JSON.stringify(s.runtimeName)}`);
    }
    if (s.runtimeName === "runc") {
        throw new Error("containerd.runtimeName: runc is containerd's own default runtime; choose another name such as gpu");
    }
    if (s.kata && s.runtimeName === KATA_GPU_RUNTIME.handler) {
        throw new Error(`containerd.runtimeName: ${KATA_GPU_RUNTIME.handler} is Kata's runtime, which containerd.kata adds; choose another name such as gpu`);
    }
    if (!s.binaryName.startsWith("/")) {
        throw new Error(`containerd.binaryName: expected an absolute path, got ${JSON.stringify(s.binaryName)}`);
    }
    for (const dir of s.cdiSpecDirs ?? []) {
        if (!dir.startsWith("/")) throw new Error(`containerd.cdiSpecDirs: expected absolute paths, got ${JSON.stringify(dir)}`);
    }
}

/**
 * Our containerd settings (config version 2) as a drop-in. It also names containerd's
 * default `runc` runtime: a config that has a runtimes table gets only the runtimes it
 * lists, so leaving runc out would remove CRI's default runtime.
 */
export function renderContainerdDropIn(s: Omit<ContainerdRuntimeSettings, "helperBinary">): string {
    checkSettings(s);
    const cri: Table = {};
    if (s.enableCdi) {
        cri.enable_cdi = true;
        cri.cdi_spec_dirs = s.cdiSpecDirs ?? DEFAULT_CDI_SPEC_DIRS;
    }
    const containerd: Table = {};
    if (s.makeDefault) containerd.default_runtime_name = s.runtimeName;
    containerd.runtimes = {
        [s.runtimeName]: { runtime_type: RUNC_V2, options: { BinaryName: s.binaryName } },
        runc: { runtime_type: RUNC_V2, options: {} },
        ...(s.kata ? { [KATA_GPU_RUNTIME.handler]: kataRuntime() } : {}),
    };
    cri.containerd = containerd;
    return "# Rendered by gpu-workers: the GPU runtime for CRI clients.\n" + stringify({ version: 2, plugins: { [CRI]: cri } }).trimEnd() + "\n";
}

/**
 * Kata's GPU runtime entry: its own shim (by path, so the host's PATH does not matter), the
 * shim's config, and no host devices for a privileged pod (they would be the host's, not the VM's).
 */
function kataRuntime(): Table {
    return {
        runtime_type: KATA_GPU_RUNTIME.runtimeType,
        runtime_path: KATA_GPU_RUNTIME.runtimePath,
        privileged_without_host_devices: true,
        pod_annotations: [...KATA_GPU_RUNTIME.podAnnotations],
        options: { ConfigPath: KATA_GPU_RUNTIME.configPath },
    };
}

/**
 * The config of the containerd that the Concourse worker starts itself (given to it by
 * CONCOURSE_CONTAINERD_CONFIG): the same settings Concourse writes when none is given.
 * It names no runtime binary because containerd 1.6/1.7 has no config setting that
 * reaches clients of its plain API: Concourse creates containers with no runtime options,
 * so the runc.v2 shim runs the `runc` it finds first on PATH, which Concourse makes its
 * own bin folder. The wrapper reaches those containers by being installed in place of
 * that runc (install-runc-wrapper.sh --runc /usr/local/concourse/bin/runc).
 */
export function renderConcourseContainerdConfig(): string {
    const config = {
        version: 2,
        oom_score: -999,
        // Concourse is not a CRI client, and uses only the overlayfs snapshotter.
        disabled_plugins: [`${CRI}`, "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs"],
    };
    return "# Rendered by gpu-workers: containerd for the Concourse worker.\n" + stringify(config).trimEnd() + "\n";
}

/**
 * The main config with `importGlob` in its imports list. Text that already imports it is
 * returned unchanged (so "restart only when the content changed" holds); otherwise the
 * import is added as the first line and every other line is kept as written. Throws when
 * the text is not a version 2 config or has an imports list of its own without the glob
 * (that list is the host's to edit).
 */
export function ensureImports(existingToml: string, importGlob: string): string {
    const importLine = stringify({ imports: [importGlob] }).trim();
    if (existingToml.trim() === "") return `${stringify({ version: 2 }).trim()}\n${importLine}\n`;
    let doc: Record<string, unknown>;
    try {
        doc = parse(existingToml);
    } catch (e) {
        throw new Error(`containerd config: not valid TOML: ${(e as Error).message}`, { cause: e });
    }
    const imports = doc.imports;
    if (imports !== undefined) {
        if (!Array.isArray(imports) || !imports.every((i) => typeof i === "string")) {
            throw new Error("containerd config: imports must be a list of paths");
        }
        if (imports.includes(importGlob)) return existingToml;
        throw new Error(`containerd config: it already has imports = ${JSON.stringify(imports)}; add ${JSON.stringify(importGlob)} to that list`);
    }
    if (doc.version !== 2) {
        throw new Error(
            `containerd config: expected version = 2 (got ${doc.version === undefined ? "no version, i.e. version 1" : JSON.stringify(doc.version)}); gpu-workers only extends version 2 configs`,
        );
    }
    return importLine + "\n" + existingToml;
}

/**
 * The ContainerdRuntime component: our settings and containerd-toml uploaded, and a step
 * that merges them with the host's main config into the drop-in, adds the import to the
 * main config and restarts containerd only when the result changed. Its check (run by a
 * refresh) merges again and compares: a hand edit of the main config since the last apply
 * is drift, so the next up applies again. The settings' checksum is part of the command,
 * so a change of settings re-runs the step.
 */
export function renderContainerdRuntimeComponent(s: ContainerdRuntimeSettings): RenderedComponent {
    const ours = renderContainerdDropIn(s);
    const script = hostScriptFile("apply-containerd-config.sh");
    const helper: HostFile = { path: CONTAINERD_TOML_PATH, mode: "0755", content: "", artifact: s.helperBinary };
    const paths = ["--main", CONTAINERD_MAIN_CONFIG, "--drop-in", CONTAINERD_DROP_IN, "--import", CONTAINERD_IMPORT_GLOB];
    const merge = ["--ours", CONTAINERD_SETTINGS_FILE, "--toml", CONTAINERD_TOML_PATH];
    // containerd runs containers with runc: the host gets both where it lacks them.
    return combine(renderRuntimePackages({ containerd: "containerd", runc: "runc" }), {
        files: [{ path: CONTAINERD_SETTINGS_FILE, mode: "0644", content: ours }, helper, script],
        steps: [
            {
                name: "containerd-runtime",
                create: shellCommand([script.path, "apply", ...merge, "--sha256", sha256Text(ours), ...paths]),
                remove: shellCommand([script.path, "remove", ...paths]),
                check: shellCommand([script.path, "check", ...merge, ...paths]),
                dependsOn: [script.path, CONTAINERD_SETTINGS_FILE, CONTAINERD_TOML_PATH, RUNTIME_PACKAGES_STEP],
            },
        ],
    });
}
