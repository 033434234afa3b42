import { stringify } from "smol-toml";
import { combine, hostScriptFile, scriptStep } from "../host/scripts";
import { RenderedComponent, shellCommand } from "../host/steps";

export interface ContainerToolkitSettings {
    vendor: "nvidia" | "amd";
    version: string;
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
}

export const NVIDIA_RUNTIME_CONFIG = "/etc/nvidia-container-runtime/config.toml";
export const NVIDIA_RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime";
export const CDI_SPEC_PATHS = { nvidia: "/etc/cdi/nvidia.yaml", amd: "/etc/cdi/amd.json" } as const;

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
                cdi: { "annotation-prefixes": ["cdi.k8s.io/"], "default-kind": settings.tegra ? "nvidia.com/igpu" : "nvidia.com/gpu", "spec-dirs": ["/etc/cdi", "/var/run/cdi"] },
                csv: { "mount-spec-path": "/etc/nvidia-container-runtime/host-files-for-container.d" },
            },
        },
        "nvidia-container-runtime-hook": { path: "/usr/bin/nvidia-container-runtime-hook", "skip-mode-detection": false },
        "nvidia-ctk": { path: "/usr/bin/nvidia-ctk" },
    };
    return "# Rendered by gpu-workers: changes here are replaced on the next pulumi up.\n" + stringify(config) + "\n";
}

/** The toolkit: its package, its runtime config (NVIDIA), and the CDI spec with a check of the selected ids. */
export function renderContainerToolkit(settings: ContainerToolkitSettings): RenderedComponent {
    const install = scriptStep({ name: "container-toolkit", script: "container-toolkit.sh", args: ["--vendor", settings.vendor, "--version", settings.version] });
    const config: RenderedComponent = settings.vendor === "nvidia"
        ? { files: [{ path: NVIDIA_RUNTIME_CONFIG, mode: "0644", content: renderNvidiaRuntimeConfig(settings) }], steps: [] }
        : { files: [], steps: [] };
    if (!settings.cdi) return combine(config, install);
    const cdiScript = hostScriptFile("generate-cdi.sh");
    const cdiArgs = ["--vendor", settings.vendor, "--output", CDI_SPEC_PATHS[settings.vendor], ...(settings.tegra ? ["--tegra"] : []), "--driver-pin", settings.driverVersion, "--", ...settings.cdiDevices];
    const cdi: RenderedComponent = {
        files: [cdiScript],
        steps: [{
            name: "cdi-spec",
            create: shellCommand([cdiScript.path, "ensure", ...cdiArgs]),
            remove: shellCommand([cdiScript.path, "remove", "--vendor", settings.vendor, "--output", CDI_SPEC_PATHS[settings.vendor]]),
            // A refresh notices a driver upgraded by hand, a MIG change or an edited spec.
            check: shellCommand([cdiScript.path, "check", ...cdiArgs]),
            dependsOn: [cdiScript.path, "container-toolkit"],
        }],
        // The spec the vendor's tool wrote goes through the project's CDI validator too.
        checks: [{ name: "cdi-spec-check", kind: "cdi-spec", after: "cdi-spec", path: CDI_SPEC_PATHS[settings.vendor] }],
    };
    return combine(config, install, cdi);
}
