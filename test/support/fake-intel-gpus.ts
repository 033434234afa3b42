/**
 * Intel GPUs without the hardware, as Intel's own device-faker makes them (its DRA driver's
 * doc/device-faker): a sysfs and a devfs under a folder, in the kernel's layout, with real
 * character devices made by mknod with /dev/null's numbers (1:3), so that runc and podman can
 * give them to containers and a process can open them. The layout:
 *   sys/devices/pci0000:00/<BDF>/{vendor,device,class}   "0x8086", "0x56c0", "0x030000"
 *   sys/devices/pci0000:00/<BDF>/driver                  link to sys/bus/pci/drivers/<i915|xe>
 *   sys/devices/pci0000:00/<BDF>/drm/{cardN,renderDM}/   each with `device` linking back to <BDF>
 *   sys/class/drm/cardN, renderDM                        links to those folders; a connector
 *                                                        (cardN-HDMI-A-1) beside an integrated one's
 *   sys/module/<driver>/                                 the loaded driver
 *   dev/dri/{cardN,renderDM}                             character devices
 *   dev/dri/by-path/pci-<BDF>-{card,render}              links to ../cardN, ../renderDM
 * mknod needs root, as the tests that use this have.
 */
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";

export interface FakeIntelGpu {
    bdf: string;
    /** PCI device id, "0x56c0". */
    device: string;
    driver: "i915" | "xe";
    card: number;
    render: number;
    /** PCI class; default 0x030000 (VGA), Flex and Max are 0x038000 (display controller). */
    class?: string;
    /** An integrated GPU drives a display: its card has a connector folder too. */
    connector?: boolean;
}

/** Two Flex 170 (display controllers on i915), an Arc A770 on xe, and an integrated Alder Lake-P. */
export const FLEX_170_PAIR: FakeIntelGpu[] = [
    { bdf: "0000:4d:00.0", device: "0x56c0", driver: "i915", card: 0, render: 128, class: "0x038000" },
    { bdf: "0000:5e:00.0", device: "0x56c0", driver: "i915", card: 1, render: 129, class: "0x038000" },
];
export const ARC_A770_XE: FakeIntelGpu[] = [{ bdf: "0000:03:00.0", device: "0x56a0", driver: "xe", card: 0, render: 128 }];
export const ALDER_LAKE_IGPU: FakeIntelGpu[] = [{ bdf: "0000:00:02.0", device: "0x4626", driver: "i915", card: 0, render: 128, connector: true }];

function link(target: string, at: string): void {
    fs.mkdirSync(path.dirname(at), { recursive: true });
    fs.symlinkSync(target, at);
}

function charDevice(at: string): void {
    fs.mkdirSync(path.dirname(at), { recursive: true });
    execFileSync("mknod", ["-m", "0666", at, "c", "1", "3"]);
}

/** Makes the GPUs' sysfs and devfs under `root` (its sys/ and dev/). */
export function makeFakeIntelGpus(root: string, gpus: FakeIntelGpu[]): void {
    const devices = path.join(root, "sys/devices/pci0000:00");
    for (const g of gpus) {
        const dir = path.join(devices, g.bdf);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, "vendor"), "0x8086\n");
        fs.writeFileSync(path.join(dir, "device"), `${g.device}\n`);
        fs.writeFileSync(path.join(dir, "class"), `${g.class ?? "0x030000"}\n`);
        fs.mkdirSync(path.join(root, "sys/bus/pci/drivers", g.driver), { recursive: true });
        fs.mkdirSync(path.join(root, "sys/module", g.driver), { recursive: true });
        link(`../../../bus/pci/drivers/${g.driver}`, path.join(dir, "driver"));
        const nodes = [`card${g.card}`, `renderD${g.render}`, ...(g.connector ? [`card${g.card}-HDMI-A-1`] : [])];
        for (const node of nodes) {
            fs.mkdirSync(path.join(dir, "drm", node), { recursive: true });
            link("../..", path.join(dir, "drm", node, "device"));
            link(`../../devices/pci0000:00/${g.bdf}/drm/${node}`, path.join(root, "sys/class/drm", node));
        }
        charDevice(path.join(root, "dev/dri", `card${g.card}`));
        charDevice(path.join(root, "dev/dri", `renderD${g.render}`));
        link(`../card${g.card}`, path.join(root, "dev/dri/by-path", `pci-${g.bdf}-card`));
        link(`../renderD${g.render}`, path.join(root, "dev/dri/by-path", `pci-${g.bdf}-render`));
    }
}
