/** PCI addresses as the tools print them: nvidia-smi "00000000:0D:00.0", lspci "0000:0d:00.0", KFD location ids. */

const BUS_ID = /^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/;

/** "00000000:0D:00.0", "0d:00.0" -> "0000:0d:00.0"; undefined when it is not a PCI address. */
export function normalizeBusId(id: string | undefined): string | undefined {
    if (!id) return undefined;
    const m = BUS_ID.exec(id.trim());
    if (!m) return undefined;
    const domain = (m[1] ?? "0")
        .toLowerCase()
        .replace(/^0+(?=[0-9a-f]{4}$)/, "")
        .padStart(4, "0");
    return `${domain}:${m[2].toLowerCase()}:${m[3].toLowerCase()}.${m[4]}`;
}

/** The KFD's domain and location_id (bus << 8 | device << 3 | function) as a bus id. */
export function busIdFromKfdLocation(domain: number, locationId: number): string | undefined {
    if (!Number.isInteger(locationId) || locationId <= 0) return undefined; // 0 is the host bridge: unknown
    const bus = (locationId >> 8) & 0xff;
    const device = (locationId >> 3) & 0x1f;
    const fn = locationId & 0x7;
    const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
    return `${hex(domain, 4)}:${hex(bus, 2)}:${hex(device, 2)}.${fn}`;
}

export const PCI_VENDOR = { nvidia: "10de", amd: "1002" } as const;

/** PCI classes of display functions: VGA, XGA, 3D controller, other display controller. */
export const DISPLAY_CLASSES = new Set(["0300", "0301", "0302", "0380"]);
