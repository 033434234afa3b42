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
