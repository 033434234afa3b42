/**
 * The CDI spec of an Intel host (`intel.com/gpu`), rendered from the declared inventory (which
 * `up` verifies against sysfs first), named as Intel's own generator names it: a device per GPU
 * by its card node (card0), with its card and render nodes and its /dev/dri/by-path names,
 * which oneAPI's Level Zero reads. Those names are the nodes themselves (a node's path in the
 * container, its hostPath on the host), not binds of udev's links: a runtime that makes the
 * nodes serves them on a host without the links too. Pure.
 */
import type { Gpu } from "../gpu/inventory";
import { intelByPathLinks, intelNodes } from "../gpu/nodes";
import { renderCdiSpec } from "./render";

export const INTEL_CDI_KIND = "intel.com/gpu";

/** The spec as JSON, every GPU of the host in index order. */
export function renderIntelCdiSpec(gpus: readonly Gpu[]): string {
    const devices = [...gpus]
        .sort((a, b) => a.index - b.index)
        .map((g) => ({
            name: g.cardNode ?? `card${g.index}`,
            deviceNodes: [
                ...intelNodes(g).map((node) => ({ path: node, hostPath: node, type: "c" as const })),
                ...intelByPathLinks(g).map((l) => ({ path: l.path, hostPath: l.node, type: "c" as const })),
            ],
        }));
    return renderCdiSpec({ kind: INTEL_CDI_KIND, devices, format: "json" });
}
