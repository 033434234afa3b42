import { combine, hostScriptFile, OWNERSHIP_SCRIPT, scriptStep } from "../../host/scripts";
import { RenderedComponent } from "../../host/steps";
import type { VendorRepository } from "../../repos/vendor-repos";
import { driverPin } from "../../toolkit/pins";
import { keyringPath, renderAptPinFile, renderVendorRepository, sourcePath } from "../../render/apt-sources";

export interface GpuDriverSettings {
    /** Whose driver: NVIDIA's, AMD's ROCm, or Intel's i915 or xe (the kernel's). */
    vendor: "nvidia" | "amd" | "intel";
    /** A pinned version, or "preinstalled" to only check that a driver is loaded. */
    version: string;
    /** The vendor's driver repository, when the project ships its key; absent: the host's own apt sources. */
    repository?: VendorRepository;
}

/**
 * The driver step: checks the loaded driver, installing the pinned one where asked. A pinned
 * version is held by an apt pin (the driver's libraries and fabricmanager with it), and comes
 * from the vendor's repository where the project ships that repository's key.
 */
export function renderGpuDriver(settings: GpuDriverSettings): RenderedComponent {
    // Intel's drivers are the kernel's: its script checks them, and refuses a pin.
    if (settings.version === "preinstalled" || settings.vendor === "intel") {
        return scriptStep({
            name: "gpu-driver",
            script: "gpu-driver.sh",
            args: ["--vendor", settings.vendor, "--version", settings.version],
            helpers: [OWNERSHIP_SCRIPT],
        });
    }
    const repo = settings.repository;
    const files = [
        ...(repo ? [...renderVendorRepository(repo), hostScriptFile("apt-vendor-source.sh")] : []),
        renderAptPinFile(driverPin(settings.vendor, settings.version)),
    ];
    const repoArgs = repo ? ["--apt-source", sourcePath(repo), "--keyring", keyringPath(repo), "--fingerprint", repo.fingerprint] : [];
    return combine(
        { files, steps: [] },
        scriptStep({
            name: "gpu-driver",
            script: "gpu-driver.sh",
            args: ["--vendor", settings.vendor, "--version", settings.version, ...repoArgs],
            dependsOn: files.map((f) => f.path),
            helpers: [OWNERSHIP_SCRIPT],
        }),
    );
}
