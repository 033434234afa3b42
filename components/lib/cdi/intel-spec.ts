/**
 * The CDI spec of an Intel host (`intel.com/gpu`), rendered from the declared inventory (which
 * `up` verifies against sysfs first), in the form of Intel's own generator: a device per GPU
 * named by its card node (card0), with its card and render nodes and, bound over the same
 * paths, its /dev/dri/by-path links, which oneAPI's Level Zero reads. Pure.
 */
import type { Gpu } from "../gpu/inventory";
import { intelNodes } from "../gpu/nodes";
import { renderCdiSpec } from "./render";

export const INTEL_CDI_KIND = "intel.com/gpu";

/** The spec as JSON, every GPU of the host in index order. */
export function renderIntelCdiSpec(gpus: readonly Gpu[]): string {
    const devices = [...gpus]
        .sort((a, b) => a.index - b.index)
        .map((g) => {
            const byPath = `/dev/dri/by-path/pci-${g.pciBusId}`;
            return {
                name: g.cardNode ?? `card${g.index}`,
                deviceNodes: intelNodes(g).map((node) => ({ path: node, hostPath: node, type: "c" as const })),
                mounts: ["card", "render"].map((what) => ({
                    hostPath: `${byPath}-${what}`,
                    containerPath: `${byPath}-${what}`,
                    type: "none",
                    options: ["bind", "rw"],
                })),
            };
        });
    return renderCdiSpec({ kind: INTEL_CDI_KIND, devices, format: "json" });
}
