/**
 * `lspci -Dnn` (and `lspci -nn`, without the domain):
 *   0000:0d:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
 *   0000:09:00.0 Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3] (rev a1)
 *   c2:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Phoenix1 [1002:15bf] (rev 03)
 * Works before any driver is installed. NVIDIA also makes other class-0680 bridges (nForce
 * Ethernet), so an NVSwitch is recognised by its name or its device id, never by class alone.
 * The sysfs form (pci-devices: address -> [vendor, device, class]) gives the same ids without names.
 */
import { DiscoverySources } from "./document";
import { DISPLAY_CLASSES, normalizeBusId, PCI_VENDOR } from "./pci";

export interface PciFunction {
    busId: string;
    classId: string;
    className: string;
    vendorId: string;
    deviceId: string;
    /** The device name without the vendor, e.g. "GH100 [H100 SXM5 80GB]"; empty from sysfs. */
    name: string;
}

/** NVSwitch device ids: Volta/Turing NVSwitch (1ac0-1ac2), A100 (1af1), H100 (22a3). */
export const NVSWITCH_DEVICE_IDS = new Set(["1ac0", "1ac1", "1ac2", "1af1", "22a3"]);

const LINE =
    /^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.+?)\s+\[([0-9a-fA-F]{4})\]:\s+(.*?)\s+\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\](?:\s+\(rev [0-9a-fA-F]+\))?(?:\s+\(prog-if [^)]*\))?\s*$/;

const VENDOR_PREFIXES = [
    /^NVIDIA Corporation\s+/i,
    /^nVidia Corporation\s+/i,
    /^Advanced Micro Devices, Inc\.\s+\[AMD\/ATI\]\s+/i,
    /^Advanced Micro Devices, Inc\.\s+\[AMD\]\s+/i,
    /^ATI Technologies Inc\s+/i,
];

export function parseLspci(text: string): PciFunction[] {
    const out: PciFunction[] = [];
    for (const line of text.split(/\r?\n/)) {
        const m = LINE.exec(line.trim());
        if (!m) continue;
        const busId = normalizeBusId(m[1]);
        if (!busId) continue;
        let name = m[4];
        for (const prefix of VENDOR_PREFIXES) name = name.replace(prefix, "");
        out.push({ busId, className: m[2], classId: m[3].toLowerCase(), vendorId: m[5].toLowerCase(), deviceId: m[6].toLowerCase(), name: name.trim() });
    }
    return out;
}

/** sysfs: {"0000:0d:00.0": ["0x10de", "0x2330", "0x030200"]}. */
export function parsePciSysfs(devices: Record<string, [string, string, string]>): PciFunction[] {
    const out: PciFunction[] = [];
    for (const [address, [vendor, device, cls]] of Object.entries(devices)) {
        const busId = normalizeBusId(address);
        if (!busId) continue;
        out.push({
            busId,
            vendorId: vendor.replace(/^0x/i, "").toLowerCase().padStart(4, "0"),
            deviceId: device.replace(/^0x/i, "").toLowerCase().padStart(4, "0"),
            classId: cls.replace(/^0x/i, "").toLowerCase().padStart(6, "0").slice(0, 4),
            className: "",
            name: "",
        });
    }
    return out.sort((a, b) => a.busId.localeCompare(b.busId));
}

export function isGpuFunction(f: PciFunction, vendor: keyof typeof PCI_VENDOR): boolean {
    return f.vendorId === PCI_VENDOR[vendor] && DISPLAY_CLASSES.has(f.classId);
}

export function isNvSwitch(f: PciFunction): boolean {
    return f.vendorId === PCI_VENDOR.nvidia && f.classId === "0680" && (/nvswitch/i.test(f.name) || NVSWITCH_DEVICE_IDS.has(f.deviceId));
}

/** A readable model from the PCI name: the marketing name in brackets when there is one. */
export function pciModelName(f: PciFunction, vendor: keyof typeof PCI_VENDOR): string {
    const label = vendor === "nvidia" ? "NVIDIA" : "AMD";
    if (!f.name) return `${label} device ${f.vendorId}:${f.deviceId}`;
    const bracket = /\[([^\]]+)\]\s*$/.exec(f.name);
    return `${label} ${bracket ? bracket[1] : f.name}`;
}

/** PCI functions from lspci when it ran, from sysfs otherwise. */
export function pciFunctions(sources: DiscoverySources): PciFunction[] {
    if (sources.lspci !== undefined) return parseLspci(sources.lspci);
    if (sources["pci-devices"]) return parsePciSysfs(sources["pci-devices"]);
    return [];
}
