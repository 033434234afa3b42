/**
 * host/nvswitch-vfio.sh, run with real bash against models of sysfs (test/support/fake-sysfs.ts):
 * NVSwitches sharing one IOMMU group with bridges (as on Supermicro HGX boards), one group per
 * NVSwitch (as on DGX), a GPU inside an NVSwitch's group, the IOMMU off. Checked: what ends up
 * bound where, that a second run changes nothing, that remove gives every function back to
 * its driver, and the words of each refusal (naming the device), with nothing changed.
 */
import * as assert from "assert";
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { FakePciDevice, FakeSysfs } from "../support/fake-sysfs";

const SCRIPT = path.resolve(__dirname, "../../../host/nvswitch-vfio.sh");
const run = promisify(execFile);

const SWITCHES = ["0000:09:00.0", "0000:0a:00.0", "0000:0b:00.0", "0000:0c:00.0"];
const CONTROLLER = "0000:03:00.1";
const GPUS = ["0000:0d:00.0", "0000:0e:00.0", "0000:0f:00.0", "0000:10:00.0"];

const nvswitch = (bdf: string, group: number): FakePciDevice => ({
    bdf,
    vendor: "0x10de",
    device: "0x22a3",
    class: "0x068000",
    driver: "nvidia",
    native: "nvidia",
    group,
});
const bridge = (bdf: string, group: number, vendor = "0x1000", device = "0xc030"): FakePciDevice => ({
    bdf,
    vendor,
    device,
    class: "0x060400",
    driver: "pcieport",
    native: "pcieport",
    group,
});
const gpu = (bdf: string, group: number): FakePciDevice => ({
    bdf,
    vendor: "0x10de",
    device: "0x2330",
    class: "0x030200",
    driver: "nvidia",
    native: "nvidia",
    group,
});
// The HGX board's PMC-Sierra function 0 is a bridge; function 1 is the memory controller, with no driver.
const controllerPair = (group: number): FakePciDevice[] => [
    bridge("0000:03:00.0", group, "0x11f8", "0x4128"),
    { bdf: CONTROLLER, vendor: "0x11f8", device: "0x4128", class: "0x058000", group },
];
const nic: FakePciDevice = { bdf: "0000:01:00.0", vendor: "0x8086", device: "0x1521", class: "0x020000", driver: "igb", native: "igb", group: 5 };

/** Supermicro-like: the four NVSwitches and two PCIe switch ports in one group; the controller and its bridge in another. */
function sharedGroups(): FakePciDevice[] {
    return [
        nic,
        bridge("0000:05:00.0", 20),
        bridge("0000:06:00.0", 20),
        ...SWITCHES.map((b) => nvswitch(b, 20)),
        ...controllerPair(21),
        ...GPUS.map((b, i) => gpu(b, 30 + i)),
    ];
}

/** DGX-like: every NVSwitch alone in its group. */
function groupPerSwitch(): FakePciDevice[] {
    return [nic, ...SWITCHES.map((b, i) => nvswitch(b, 40 + i)), ...controllerPair(44), ...GPUS.map((b, i) => gpu(b, 30 + i))];
}

interface Outcome {
    code: number;
    stdout: string;
    stderr: string;
}

describe("nvswitch-vfio.sh on models of sysfs", function () {
    this.timeout(60_000);
    let dir: string;
    let sysfs: FakeSysfs;
    let state: string;

    function board(devices: FakePciDevice[], iommu = true): FakeSysfs {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-vfio-"));
        state = path.join(dir, "state");
        sysfs = new FakeSysfs(path.join(dir, "sys"), devices, ["vfio-pci"], iommu);
        sysfs.start();
        return sysfs;
    }

    afterEach(() => {
        sysfs?.stop();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    async function script(action: string, extra: string[] = []): Promise<Outcome> {
        const args = [SCRIPT, action, "--sysfs", sysfs.root, "--state", state, ...extra];
        try {
            const { stdout, stderr } = await run("bash", args, { encoding: "utf8" });
            return { code: 0, stdout, stderr };
        } catch (e) {
            const err = e as { code: number; stdout: string; stderr: string };
            return { code: err.code, stdout: err.stdout, stderr: err.stderr };
        }
    }

    const named = [...SWITCHES.flatMap((s) => ["--nvswitch", s]), "--memory-controller", CONTROLLER];
    const drivers = (bdfs: string[]) => Object.fromEntries(bdfs.map((b) => [b, sysfs.driverOf(b)]));
    const everyDriver = (devices: FakePciDevice[]) => drivers(devices.map((d) => d.bdf));

    async function bindAndGiveBack(devices: FakePciDevice[]) {
        board(devices);
        const before = everyDriver(devices);
        assert.strictEqual((await script("check", named)).code, 1, "check fails before ensure");

        const first = await script("ensure", named);
        assert.strictEqual(first.code, 0, first.stderr);
        assert.match(first.stdout, /5 functions on vfio-pci \(5 bound now\)/);
        assert.deepStrictEqual(drivers([...SWITCHES, CONTROLLER]), Object.fromEntries([...SWITCHES, CONTROLLER].map((b) => [b, "vfio-pci"])));
        for (const b of [...SWITCHES, CONTROLLER]) assert.strictEqual(sysfs.override(b), "vfio-pci\n", `${b} driver_override`);
        // Bridges stay with their driver, and nothing outside the groups moves.
        const after = everyDriver(devices);
        for (const d of devices.filter((x) => ![...SWITCHES, CONTROLLER].includes(x.bdf))) assert.strictEqual(after[d.bdf], before[d.bdf], d.bdf);
        assert.deepStrictEqual(
            fs
                .readdirSync(state)
                .sort()
                .map((b) => [b, fs.readFileSync(path.join(state, b), "utf8")]),
            [[CONTROLLER, "none\n"], ...SWITCHES.map((b) => [b, "nvidia\n"])],
        );
        assert.strictEqual((await script("check", named)).code, 0);

        const again = await script("ensure", named);
        assert.strictEqual(again.code, 0, again.stderr);
        assert.match(again.stdout, /5 functions on vfio-pci \(0 bound now\)/);
        assert.deepStrictEqual(everyDriver(devices), after);

        const removed = await script("remove");
        assert.strictEqual(removed.code, 0, removed.stderr);
        assert.deepStrictEqual(everyDriver(devices), before, "every function is back with its driver");
        for (const b of [...SWITCHES, CONTROLLER]) assert.strictEqual(sysfs.override(b), "(null)\n", `${b} driver_override cleared`);
        assert.ok(!fs.existsSync(state));
        assert.strictEqual((await script("remove")).code, 0, "remove twice");
        assert.strictEqual((await script("check", named)).code, 1, "check fails after remove");
    }

    it("NVSwitches sharing one group with bridges (Supermicro-like): all four and the controller to vfio-pci, bridges untouched, and back", async () => {
        await bindAndGiveBack(sharedGroups());
    });

    it("one group per NVSwitch (DGX-like): the same, group by group", async () => {
        await bindAndGiveBack(groupPerSwitch());
    });

    async function refuses(devices: FakePciDevice[], iommu: boolean, args: string[], message: RegExp) {
        board(devices, iommu);
        const before = everyDriver(devices);
        const r = await script("ensure", args);
        assert.strictEqual(r.code, 1, r.stdout);
        assert.match(r.stderr, message);
        assert.deepStrictEqual(everyDriver(devices), before, "nothing was changed");
        assert.ok(!fs.existsSync(state), "nothing recorded");
    }

    it("refuses a group that also holds a GPU, naming it, and changes nothing", async () => {
        const devices = sharedGroups().map((d) => (d.bdf === GPUS[0] ? { ...d, group: 20 } : d));
        await refuses(
            devices,
            true,
            named,
            /^nvswitch-vfio: IOMMU group 20 \(of 0000:09:00\.0\) also holds 0000:0d:00\.0 \(10de:2330, class 0x030200, driver nvidia\), which is neither an NVSwitch, the NVSwitch memory controller nor a bridge/,
        );
    });

    it("refuses when the IOMMU is off, naming the NVSwitch", async () => {
        await refuses(
            sharedGroups(),
            false,
            named,
            /^nvswitch-vfio: the IOMMU is off \(no groups under .*\/kernel\/iommu_groups\), so NVSwitch 0000:09:00\.0 cannot be given to a VM: enable VT-d/,
        );
    });

    it("refuses an NVSwitch on the bus that is not named", async () => {
        await refuses(
            sharedGroups(),
            true,
            [...SWITCHES.slice(0, 3).flatMap((s) => ["--nvswitch", s]), "--memory-controller", CONTROLLER],
            /NVSwitch 0000:0c:00\.0 \(10de:22a3, class 0x068000, driver nvidia\) is on the bus but not named/,
        );
    });

    it("refuses a named function that is not what it is named as", async () => {
        await refuses(
            sharedGroups(),
            true,
            [...named, "--nvswitch", GPUS[1]],
            /0000:0e:00\.0 \(10de:2330, class 0x030200, driver nvidia\) is named as the nvswitch but is not one/,
        );
    });

    it("takes addresses as nvidia-smi writes them (8-digit domain, upper case)", async () => {
        board(groupPerSwitch());
        const r = await script("ensure", [...SWITCHES.flatMap((s) => ["--nvswitch", `0000${s.toUpperCase()}`]), "--memory-controller", CONTROLLER]);
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(sysfs.driverOf(SWITCHES[3]), "vfio-pci");
    });
});
