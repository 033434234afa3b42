import * as path from "path";
import { stringify } from "smol-toml";
import { combine, hostScriptFile, OWNERSHIP_SCRIPT, PACKAGE_ROOT, scriptStep } from "../../host/scripts";
import { Artifact, HOST_LIB_DIR, HostFile, RenderedComponent, shellCommand } from "../../host/steps";
import { APT_PATHS, AptPaths, renderAptPinFile, renderVendorRepository, sourcePath, keyringPath } from "../../render/apt-sources";
import type { VendorRepository } from "../../repos/vendor-repos";
import { toolkitPin } from "../../toolkit/pins";
import { cveFloorArgs, ToolkitVendor } from "../../toolkit/versions";
import type { Gpu } from "../../gpu/inventory";
import { renderIntelCdiSpec } from "../../cdi/intel-spec";

export interface ContainerToolkitSettings {
    /** Whose toolkit: nvidia-container-toolkit or amd-container-toolkit; Intel has none to install, only its CDI spec. */
    vendor: "nvidia" | "amd" | "intel";
    /** A version to install and hold, or "preinstalled" to use (and check against the CVE floor) the one on the host. */
    version: string;
    /** The vendor's apt repository, when the project ships its key; absent: the host's own apt sources. */
    repository?: VendorRepository;
    /** Generate a CDI spec and check every selected device has an entry in it. */
    cdi: boolean;
    /** NVIDIA Tegra/Jetson: CDI in csv mode. */
    tegra: boolean;
    /** CDI ids of the selected devices, from the worker's GPU plan. */
    cdiDevices: string[];
    /** The real OCI runtime nvidia-container-runtime hands containers to (never the wrapper). */
    realRuntime: string;
    /** The driver pin: a change regenerates the CDI spec. */
    driverVersion: string;
    /** The built cdi-check to upload (CDI_CHECK_BUILD_OUTPUT, hashed where the build is known): the CDI library's verdict on the spec. */
    checkerBinary: Artifact;
    /** Intel: every GPU of the host, for the CDI spec rendered here (no tool of Intel's is installed). */
    intelGpus?: Gpu[];
}

export const NVIDIA_RUNTIME_CONFIG = "/etc/nvidia-container-runtime/config.toml";
export const NVIDIA_RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime";
export const CDI_SPEC_PATHS = { nvidia: "/etc/cdi/nvidia.yaml", amd: "/etc/cdi/amd.json", intel: "/etc/cdi/intel.json" } as const;
/** The udev rule that keeps /dev/char links for the NVIDIA device nodes. */
export const DEV_CHAR_RULE_PATH = "/etc/udev/rules.d/71-gpu-workers-nvidia-dev-char.rules";
export const NVIDIA_CTK = "/usr/bin/nvidia-ctk";
/** Where cdi-check is uploaded: generate-cdi.sh judges the spec with it before installing it. */
export const CDI_CHECK_PATH = `${HOST_LIB_DIR}/cdi-check`;
/** The binary `npm run build` makes (scripts/build-cdi-check.sh). */
export const CDI_CHECK_BUILD_OUTPUT = path.join(PACKAGE_ROOT, "dist", "cdi-check", "cdi-check");

/**
 * Under systemd's cgroup driver a `systemctl daemon-reload` re-applies device rules that name
 * /dev/char/MAJOR:MINOR links, and running containers lose their GPUs ("Failed to initialize
 * NVML: Unknown Error") where those links are missing. This is the rule NVIDIA gives for it:
 * create the links whenever the driver binds.
 */
export function renderDevCharRule(): string {
    return (
        "# Rendered by gpu-workers: changes here are replaced on the next pulumi up.\n" +
        "# /dev/char links for the NVIDIA device nodes, so that a systemctl daemon-reload does not take GPUs from running containers.\n" +
        `ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", RUN+="${NVIDIA_CTK} system create-dev-char-symlinks --create-all"\n`
    );
}

/**
 * nvidia-container-runtime's config. Its runtimes list names the real runc, so the wrapper
 * (which calls this runtime) can never be reached again. Host paths only: ldconfig is
 * taken from the host ("@" prefix), never from the image.
 */
export function renderNvidiaRuntimeConfig(settings: Pick<ContainerToolkitSettings, "cdi" | "tegra" | "realRuntime">): string {
    const mode = settings.tegra ? "csv" : settings.cdi ? "cdi" : "legacy";
    const config = {
        "accept-nvidia-visible-devices-as-volume-mounts": false,
        "accept-nvidia-visible-devices-envvar-when-unprivileged": true,
        "disable-require": false,
        "nvidia-container-cli": {
            environment: [],
            ldconfig: "@/sbin/ldconfig",
            "load-kmods": true,
            "no-cgroups": false,
        },
        "nvidia-container-runtime": {
            "log-level": "info",
            mode,
            runtimes: [settings.realRuntime],
            modes: {
                cdi: {
                    "annotation-prefixes": ["cdi.k8s.io/"],
                    "default-kind": settings.tegra ? "nvidia.com/igpu" : "nvidia.com/gpu",
                    "spec-dirs": ["/etc/cdi", "/var/run/cdi"],
                },
                csv: { "mount-spec-path": "/etc/nvidia-container-runtime/host-files-for-container.d" },
            },
        },
        "nvidia-container-runtime-hook": { path: "/usr/bin/nvidia-container-runtime-hook", "skip-mode-detection": false },
        "nvidia-ctk": { path: "/usr/bin/nvidia-ctk" },
    };
    return "# Rendered by gpu-workers: changes here are replaced on the next pulumi up.\n" + stringify(config) + "\n";
}

/** What installs a vendor's toolkit package (Intel has none). */
type ToolkitPackage = Pick<ContainerToolkitSettings, "version" | "repository"> & { vendor: ToolkitVendor };

/** The toolkit's apt files: the vendor repository (when its key is shipped) and the pin of a pinned version. */
export function renderToolkitAptFiles(settings: ToolkitPackage, paths: AptPaths = APT_PATHS): HostFile[] {
    if (settings.version === "preinstalled") return [];
    return [
        ...(settings.repository ? renderVendorRepository(settings.repository, paths) : []),
        renderAptPinFile(toolkitPin(settings.vendor, settings.version), paths),
    ];
}

/** container-toolkit.sh's arguments (its file dependencies are the apt files). */
export function toolkitScriptArgs(settings: ToolkitPackage, paths: AptPaths = APT_PATHS): string[] {
    const repo =
        settings.repository && settings.version !== "preinstalled"
            ? [
                  "--apt-source",
                  sourcePath(settings.repository, paths),
                  "--keyring",
                  keyringPath(settings.repository, paths),
                  "--fingerprint",
                  settings.repository.fingerprint,
              ]
            : [];
    return [
        "--vendor",
        settings.vendor,
        "--version",
        settings.version,
        ...cveFloorArgs(settings.vendor),
        ...repo,
        ...(settings.vendor === "nvidia" ? ["--dev-char-links"] : []),
    ];
}

/** The toolkit: its apt files and package, its runtime config (NVIDIA), the /dev/char rule (NVIDIA), and the CDI spec with a check of the selected ids; on Intel, the CDI spec alone. */
export function renderContainerToolkit(given: ContainerToolkitSettings): RenderedComponent {
    if (given.vendor === "intel") {
        if (!given.cdi) return { files: [], steps: [] };
        // Nothing to install: the spec is rendered from the verified inventory (it shows in the
        // preview), and the CDI library judges it on the host as it judges the other vendors'.
        const spec: HostFile = { path: CDI_SPEC_PATHS.intel, mode: "0644", content: renderIntelCdiSpec(given.intelGpus ?? []) };
        const checker: HostFile = { path: CDI_CHECK_PATH, mode: "0755", content: "", artifact: given.checkerBinary };
        const judge = shellCommand([CDI_CHECK_PATH, CDI_SPEC_PATHS.intel]);
        return {
            files: [spec, checker],
            steps: [{ name: "cdi-spec", create: judge, check: judge, dependsOn: [spec.path, checker.path] }],
        };
    }
    const settings = { ...given, vendor: given.vendor };
    const aptFiles = renderToolkitAptFiles(settings);
    const helper = aptFiles.length > 0 && settings.repository ? [hostScriptFile("apt-vendor-source.sh")] : [];
    const install = scriptStep({
        name: "container-toolkit",
        script: "container-toolkit.sh",
        args: toolkitScriptArgs(settings),
        dependsOn: [...aptFiles, ...helper].map((f) => f.path),
        helpers: [OWNERSHIP_SCRIPT],
    });
    const apt: RenderedComponent = { files: [...aptFiles, ...helper], steps: [] };
    const config: RenderedComponent =
        settings.vendor === "nvidia"
            ? {
                  files: [
                      { path: NVIDIA_RUNTIME_CONFIG, mode: "0644", content: renderNvidiaRuntimeConfig(settings) },
                      { path: DEV_CHAR_RULE_PATH, mode: "0644", content: renderDevCharRule() },
                  ],
                  steps: [],
              }
            : { files: [], steps: [] };
    if (!settings.cdi) return combine(apt, config, install);
    const cdiScript = hostScriptFile("generate-cdi.sh");
    const ownership = hostScriptFile(OWNERSHIP_SCRIPT);
    const checker: HostFile = { path: CDI_CHECK_PATH, mode: "0755", content: "", artifact: settings.checkerBinary };
    const cdiArgs = [
        "--vendor",
        settings.vendor,
        "--output",
        CDI_SPEC_PATHS[settings.vendor],
        "--checker",
        CDI_CHECK_PATH,
        ...(settings.tegra ? ["--tegra"] : []),
        "--driver-pin",
        settings.driverVersion,
        "--",
        ...settings.cdiDevices,
    ];
    const cdi: RenderedComponent = {
        files: [cdiScript, ownership, checker],
        steps: [
            {
                name: "cdi-spec",
                create: shellCommand([cdiScript.path, "ensure", ...cdiArgs]),
                remove: shellCommand([cdiScript.path, "remove", "--vendor", settings.vendor, "--output", CDI_SPEC_PATHS[settings.vendor]]),
                // A refresh notices a driver upgraded by hand, a MIG change or an edited spec.
                check: shellCommand([cdiScript.path, "check", ...cdiArgs]),
                dependsOn: [cdiScript.path, ownership.path, CDI_CHECK_PATH, "container-toolkit"],
            },
        ],
        // The spec the CDI library accepted on the host: the program records its kind and devices.
        checks: [{ name: "cdi-spec-check", kind: "cdi-spec", after: "cdi-spec", path: CDI_SPEC_PATHS[settings.vendor] }],
    };
    return combine(apt, config, install, cdi);
}
