/**
 * The CDI spec of an Intel host (`intel.com/gpu`), rendered here from the declared inventory
 * (which `up` verifies against sysfs first), in the form of Intel's own generator: a device
 * per GPU named by its card node (card0), with its card and render nodes and, bound over the
 * same paths, its /dev/dri/by-path links, which oneAPI's Level Zero reads. Pure.
 */
import type { Gpu } from "../gpu/inventory";
import { intelNodes } from "../gpu/nodes";

export const INTEL_CDI_KIND = "intel.com/gpu";
/** hostPath in device nodes is CDI 0.5.0's. */
const INTEL_CDI_VERSION = "0.5.0";

/** The spec as JSON (a YAML reader reads it too), every GPU of the host in index order. */
export function renderIntelCdiSpec(gpus: readonly Gpu[]): string {
    const devices = [...gpus]
        .sort((a, b) => a.index - b.index)
        .map((g) => {
            const byPath = `/dev/dri/by-path/pci-${g.pciBusId}`;
            return {
                name: g.cardNode,
                containerEdits: {
                    deviceNodes: intelNodes(g).map((node) => ({ path: node, hostPath: node, type: "c" })),
                    mounts: ["card", "render"].map((what) => ({
                        hostPath: `${byPath}-${what}`,
                        containerPath: `${byPath}-${what}`,
                        type: "none",
                        options: ["bind", "rw"],
                    })),
                },
            };
        });
    return JSON.stringify({ cdiVersion: INTEL_CDI_VERSION, kind: INTEL_CDI_KIND, devices }, null, 2) + "\n";
}
