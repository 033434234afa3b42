/** The device nodes of one GPU, as the inventory names them (AMD and Intel: /dev/dri). Pure. */
import type { Gpu } from "./inventory";

/** A GPU's render node: the declared one, or AMD's default renderD<128+index>. */
export function renderNode(gpu: Gpu): string {
    return `/dev/dri/${gpu.renderNode ?? `renderD${128 + gpu.index}`}`;
}

/** An Intel GPU's nodes, card then render (the inventory names both: discovery reads them from sysfs). */
export function intelNodes(gpu: Gpu): string[] {
    return [`/dev/dri/${gpu.cardNode}`, renderNode(gpu)];
}

/** A host node a container gets at another path too (`path`: in the container; `node`: on the host). */
export interface DeviceLink {
    path: string;
    node: string;
}

/**
 * An Intel GPU's /dev/dri/by-path names (udev's, by PCI address), card then render, which
 * Level Zero reads to tell GPUs apart. A container gets the nodes themselves at those paths
 * where the host has the links (the wrapper: wrapper/devices.go).
 */
export function intelByPathLinks(gpu: Gpu): DeviceLink[] {
    const [card, render] = intelNodes(gpu);
    return [
        { path: `/dev/dri/by-path/pci-${gpu.pciBusId}-card`, node: card },
        { path: `/dev/dri/by-path/pci-${gpu.pciBusId}-render`, node: render },
    ];
}
