/**
 * A model of the parts of Linux's sysfs that PCI driver binding uses, as plain files and
 * symlinks under a folder, with a "kernel" that reacts to writes the way the kernel's PCI
 * core does (Documentation/ABI/testing/sysfs-bus-pci):
 *   devices/pci0000:00/<BDF>/{vendor,device,class}  ids, read-only ("0x10de", "0x068000")
 *   devices/pci0000:00/<BDF>/driver_override        "(null)" when unset; a written name is the
 *                                                   only driver that may bind; an empty line clears it
 *   devices/pci0000:00/<BDF>/driver                 link to bus/pci/drivers/<name> while bound
 *   devices/pci0000:00/<BDF>/iommu_group            link to kernel/iommu_groups/<N> (IOMMU on)
 *   bus/pci/devices/<BDF>                           link to the device folder
 *   bus/pci/drivers/<name>/{bind,unbind}            write a BDF to bind or unbind it
 *   bus/pci/drivers/<name>/<BDF>                    link to each bound device
 *   bus/pci/drivers_probe                           write a BDF: bind it to its override, or its own driver
 *   kernel/iommu_groups/<N>/devices/<BDF>           links to the group's devices (no groups: IOMMU off)
 * The kernel acts on a write when the write returns; this model acts a few milliseconds
 * later (it polls), which the script under test waits for. Writes that the kernel would
 * refuse with an error (bind to a driver that does not match) are ignored here.
 */
import * as fs from "fs";
import * as path from "path";

export interface FakePciDevice {
    bdf: string;
    vendor: string;
    device: string;
    /** Six hex digits after 0x: class, subclass, prog-if ("0x068000"). */
    class: string;
    /** The driver bound now. */
    driver?: string;
    /** The driver that binds it by its ids (what drivers_probe picks without an override). */
    native?: string;
    /** IOMMU group number (absent: IOMMU off for it). */
    group?: number;
}

export class FakeSysfs {
    private timer?: NodeJS.Timeout;
    private readonly devices = new Map<string, FakePciDevice>();

    constructor(
        readonly root: string,
        devices: FakePciDevice[],
        drivers: string[],
        readonly iommu: boolean,
    ) {
        for (const dir of ["devices/pci0000:00", "bus/pci/devices", "bus/pci/drivers", "kernel/iommu_groups"])
            fs.mkdirSync(path.join(root, dir), { recursive: true });
        fs.writeFileSync(path.join(root, "bus/pci/drivers_probe"), "", { mode: 0o200 });
        const allDrivers = new Set([...drivers, ...devices.flatMap((d) => [d.driver, d.native].filter((x): x is string => !!x))]);
        for (const name of allDrivers) {
            const dir = path.join(root, "bus/pci/drivers", name);
            fs.mkdirSync(dir, { recursive: true });
            for (const f of ["bind", "unbind", "new_id", "remove_id"]) fs.writeFileSync(path.join(dir, f), "", { mode: 0o200 });
        }
        for (const d of devices) {
            this.devices.set(d.bdf, { ...d });
            const dir = this.deviceDir(d.bdf);
            fs.mkdirSync(dir, { recursive: true });
            fs.writeFileSync(path.join(dir, "vendor"), `${d.vendor}\n`, { mode: 0o444 });
            fs.writeFileSync(path.join(dir, "device"), `${d.device}\n`, { mode: 0o444 });
            fs.writeFileSync(path.join(dir, "class"), `${d.class}\n`, { mode: 0o444 });
            fs.writeFileSync(path.join(dir, "driver_override"), "(null)\n", { mode: 0o644 });
            fs.symlinkSync(`../../../devices/pci0000:00/${d.bdf}`, path.join(root, "bus/pci/devices", d.bdf));
            if (iommu && d.group !== undefined) {
                const group = path.join(root, "kernel/iommu_groups", String(d.group));
                fs.mkdirSync(path.join(group, "devices"), { recursive: true });
                fs.writeFileSync(path.join(group, "type"), "DMA-FQ\n");
                fs.symlinkSync(`../../../../devices/pci0000:00/${d.bdf}`, path.join(group, "devices", d.bdf));
                fs.symlinkSync(`../../../kernel/iommu_groups/${d.group}`, path.join(dir, "iommu_group"));
            }
            if (d.driver) this.bind(d.bdf, d.driver);
        }
    }

    private deviceDir(bdf: string): string {
        return path.join(this.root, "devices/pci0000:00", bdf);
    }

    /** The driver bound now, read from the tree (as the script sees it). */
    driverOf(bdf: string): string {
        const link = path.join(this.deviceDir(bdf), "driver");
        return fs.existsSync(link) ? path.basename(fs.readlinkSync(link)) : "none";
    }

    override(bdf: string): string {
        return fs.readFileSync(path.join(this.deviceDir(bdf), "driver_override"), "utf8");
    }

    private bind(bdf: string, driver: string): void {
        fs.symlinkSync(`../../../bus/pci/drivers/${driver}`, path.join(this.deviceDir(bdf), "driver"));
        fs.symlinkSync(`../../../../devices/pci0000:00/${bdf}`, path.join(this.root, "bus/pci/drivers", driver, bdf));
        this.devices.get(bdf)!.driver = driver;
    }

    private unbind(bdf: string): void {
        const d = this.devices.get(bdf)!;
        if (!d.driver) return;
        fs.rmSync(path.join(this.deviceDir(bdf), "driver"));
        fs.rmSync(path.join(this.root, "bus/pci/drivers", d.driver, bdf));
        d.driver = undefined;
    }

    private overrideOf(bdf: string): string | undefined {
        const text = this.override(bdf).trim();
        return text === "" || text === "(null)" ? undefined : text;
    }

    private driverExists(name: string): boolean {
        return fs.existsSync(path.join(this.root, "bus/pci/drivers", name));
    }

    /** Reads a write-only attribute's last write and empties it, before acting, so no later write is lost. */
    private take(file: string): string[] {
        const text = fs.readFileSync(file, "utf8");
        if (text === "") return [];
        fs.writeFileSync(file, "");
        return text.split(/\s+/).filter(Boolean);
    }

    /** One pass of the kernel over every attribute written since the last. */
    tick(): void {
        for (const bdf of this.devices.keys()) {
            // The stored override reads back with a newline; an empty line clears it.
            const file = path.join(this.deviceDir(bdf), "driver_override");
            const text = fs.readFileSync(file, "utf8");
            const normalized = `${this.overrideOf(bdf) ?? "(null)"}\n`;
            // Empty: a write is under way (truncated, not yet written); leave it to the next pass.
            if (text !== "" && text !== normalized) fs.writeFileSync(file, normalized);
        }
        for (const driver of fs.readdirSync(path.join(this.root, "bus/pci/drivers"))) {
            const dir = path.join(this.root, "bus/pci/drivers", driver);
            for (const bdf of this.take(path.join(dir, "unbind"))) {
                if (this.devices.get(bdf)?.driver === driver) this.unbind(bdf);
            }
            for (const bdf of this.take(path.join(dir, "bind"))) {
                const d = this.devices.get(bdf);
                if (!d || d.driver) continue;
                const override = this.overrideOf(bdf);
                if (override === driver || (override === undefined && d.native === driver)) this.bind(bdf, driver);
            }
        }
        for (const bdf of this.take(path.join(this.root, "bus/pci/drivers_probe"))) {
            const d = this.devices.get(bdf);
            if (!d || d.driver) continue;
            const target = this.overrideOf(bdf) ?? d.native;
            if (target && this.driverExists(target)) this.bind(bdf, target);
        }
    }

    start(): void {
        this.timer = setInterval(() => this.tick(), 5);
    }

    stop(): void {
        if (this.timer) clearInterval(this.timer);
        this.timer = undefined;
    }
}
