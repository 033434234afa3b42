import { scriptStep } from "../host/scripts";
import { RenderedComponent } from "../host/steps";

export interface GpuDriverSettings {
    vendor: "nvidia" | "amd";
    /** A pinned version, or "preinstalled" to only check that a driver is loaded. */
    version: string;
}

/** The driver step: checks the loaded driver, installing the pinned one where asked. */
export function renderGpuDriver(settings: GpuDriverSettings): RenderedComponent {
    return scriptStep({ name: "gpu-driver", script: "gpu-driver.sh", args: ["--vendor", settings.vendor, "--version", settings.version] });
}
