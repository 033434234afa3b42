/**
 * Which packages each vendor's driver and toolkit steps hold at the pinned version, as apt
 * pins. The driver's libraries and fabricmanager carry the driver's branch in their names
 * (nvidia-fabricmanager-550, libnvidia-compute-550), the toolkit's libraries its version.
 * The two sets never overlap, so each package has exactly one pin. Pure.
 */
import type { AptPin } from "../render/apt-sources";
import { ToolkitVendor } from "./versions";

export function toolkitPin(vendor: ToolkitVendor, version: string): AptPin {
    return vendor === "nvidia"
        ? {
              name: "nvidia-container-toolkit",
              packages: ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container*"],
              version: `${version}-*`,
              why: `The NVIDIA container toolkit and its libraries stay at ${version} (the toolkit's version floor is checked when the stack is read).`,
          }
        : {
              name: "amd-container-toolkit",
              packages: ["amd-container-toolkit"],
              version: `${version}*`,
              why: `The AMD container toolkit stays at ${version}.`,
          };
}

export function driverPin(vendor: ToolkitVendor, version: string): AptPin {
    if (vendor === "nvidia") {
        const branch = version.split(".")[0];
        return {
            name: "nvidia-driver",
            // nvidia-driver-550(-server|-open), libnvidia-*-550, nvidia-fabricmanager-550, cuda-drivers-550.
            packages: [`/-${branch}(-server|-open|-server-open)?$/`, "cuda-drivers"],
            version: `${version}[.-]*`,
            why: `The NVIDIA driver of branch ${branch}, its libraries and fabricmanager stay at ${version} (fabricmanager must match the driver exactly).`,
        };
    }
    return {
        name: "amd-rocm",
        packages: ["rocm", "rocm-core"],
        version: `${version}[.-]*`,
        why: `ROCm stays at ${version}.`,
    };
}
