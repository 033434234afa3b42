/**
 * The fabricmanager service VM with real libvirt tools. Every rendered domain passes
 * virt-xml-validate; virsh defines, starts, lists and destroys it in libvirt's test driver
 * (test:///default). Then host/fabric-service-vm.sh runs for real against a libvirt daemon
 * whose hypervisor is that test driver (libvirtd as an unprivileged user, on its own socket,
 * with one connection held open so the test driver keeps its state between virsh calls): it
 * builds the cloud-init seed (genisoimage) and the disk layer (qemu-img), defines, marks
 * autostart and starts the domain, waits for the VM's report on the console log, restarts
 * the VM only for a new plan, and removes everything. The test driver runs no guest, so the
 * test writes the console lines the VM's unit would (gpu-workers-fabric: ready plan=...).
 * The functions are put on vfio-pci first by host/nvswitch-vfio.sh on a model of sysfs.
 */
import * as assert from "assert";
import { ChildProcess, execFile, execFileSync, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { parseStack } from "../../stacks/checks/stack";
import {
    FabricServiceVmSettings,
    renderServiceVmDomain,
    renderServiceVmMetaData,
    renderServiceVmUserData,
    servicePlanId,
} from "../../components/lib/fabric/service-vm";
import { exampleStack } from "../fixtures/stacks/boards";
import { FakeSysfs } from "../support/fake-sysfs";
import { ensureCommands } from "../support/tools";

const REPO = path.resolve(__dirname, "../../..");
const VM_SCRIPT = path.join(REPO, "host", "fabric-service-vm.sh");
const VFIO_SCRIPT = path.join(REPO, "host", "nvswitch-vfio.sh");
const run = promisify(execFile);

function exampleSettings(): FabricServiceVmSettings {
    return parseStack(exampleStack()).plans.boards[0].serviceVm.settings;
}

function hostdevCount(xml: string): number {
    return (xml.match(/<hostdev mode="subsystem" type="pci" managed="no">/g) ?? []).length;
}

describe("fabricmanager service VM with libvirt's tools", function () {
    this.timeout(120_000);
    let dir: string;

    before(() => {
        ensureCommands(["virsh", "virt-xml-validate", "xmllint"], ["libvirt-clients", "libxml2-utils"]);
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-fabric-vm-"));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    const variants: [string, () => FabricServiceVmSettings][] = [
        ["the example HGX stack's", exampleSettings],
        [
            "one with a NIC, a disk size and addresses in nvidia-smi's form",
            () => ({ ...exampleSettings(), network: "default", diskGiB: 40, nvswitchPci: exampleSettings().nvswitchPci.map((a) => `0000${a.toUpperCase()}`) }),
        ],
        [
            "one with six NVSwitches and no memory controller (an A100 board)",
            () => ({
                ...exampleSettings(),
                nvswitchPci: ["0000:07:00.0", "0000:08:00.0", "0000:09:00.0", "0000:0a:00.0", "0000:0b:00.0", "0000:0c:00.0"],
                memoryControllerPci: [],
            }),
        ],
    ];
    for (const [what, settings] of variants) {
        it(`virt-xml-validate accepts ${what} domain`, () => {
            const file = path.join(dir, "domain.xml");
            fs.writeFileSync(file, renderServiceVmDomain(settings()));
            const r = spawnSync("virt-xml-validate", [file, "domain"], { encoding: "utf8" });
            assert.strictEqual(r.status, 0, r.stdout + r.stderr);
            assert.match(r.stdout + r.stderr, /validates/);
        });
    }

    it("the example's domain holds the 4 NVSwitch functions and the memory controller as hostdevs", () => {
        const xml = renderServiceVmDomain(exampleSettings());
        assert.strictEqual(hostdevCount(xml), 5);
        for (const bus of ["0x09", "0x0a", "0x0b", "0x0c"]) assert.ok(xml.includes(`<address domain="0x0000" bus="${bus}" slot="0x00" function="0x0"/>`), bus);
        assert.ok(xml.includes(`<address domain="0x0000" bus="0x03" slot="0x00" function="0x1"/>`));
    });

    it("virsh (test:///default) defines, starts, lists and destroys it", () => {
        const file = path.join(dir, "domain.xml");
        fs.writeFileSync(file, renderServiceVmDomain(exampleSettings()));
        const out = execFileSync(
            "virsh",
            [
                "-c",
                "test:///default",
                `define ${file}; start hgx-a-fabric; list --all; domstate hgx-a-fabric; dumpxml hgx-a-fabric; destroy hgx-a-fabric; domstate hgx-a-fabric; undefine hgx-a-fabric; list --all --name`,
            ],
            { encoding: "utf8" },
        );
        assert.match(out, /Domain 'hgx-a-fabric' defined from/);
        assert.match(out, /Domain 'hgx-a-fabric' started/);
        assert.match(out, /^\s*\d+\s+hgx-a-fabric\s+running$/m);
        assert.strictEqual(hostdevCount(out.replace(/'/g, '"')), 5, "libvirt keeps the five hostdevs, managed=no");
        assert.match(out, /Domain 'hgx-a-fabric' destroyed\s+shut off/);
        assert.match(out, /Domain 'hgx-a-fabric' has been undefined/);
        assert.ok(!out.split("Domain 'hgx-a-fabric' has been undefined")[1].includes("hgx-a-fabric"), "gone from the list");
    });
});

describe("fabric-service-vm.sh against a libvirt daemon (test driver)", function () {
    this.timeout(300_000);
    let dir: string;
    let uri: string;
    let daemon: ChildProcess | undefined;
    let held: ChildProcess | undefined;
    let sysfs: FakeSysfs;
    /** The example board's service VM, planned in the before hook. */
    let settings: FabricServiceVmSettings;
    let name: string;
    const paths = () => ({
        state: path.join(dir, "state"),
        console: path.join(dir, "log", "console.log"),
        domain: path.join(dir, "etc", "domain.xml"),
        seed: path.join(dir, "etc", "seed"),
        image: path.join(dir, "base.qcow2"),
    });

    const virsh = (...args: string[]) => spawnSync("virsh", ["-q", "-c", uri, ...args], { encoding: "utf8" });

    before(async function () {
        this.timeout(600_000);
        settings = exampleSettings();
        name = settings.name;
        ensureCommands(
            ["virsh", "libvirtd", "qemu-img", "genisoimage", "isoinfo", "runuser"],
            ["libvirt-clients", "libvirt-daemon", "qemu-utils", "genisoimage", "util-linux"],
        );
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-fvm-"));
        fs.chmodSync(dir, 0o755);
        // libvirtd as nobody (session mode): its own socket and state, nothing of this machine's.
        const home = path.join(dir, "libvirt");
        fs.mkdirSync(path.join(home, "run"), { recursive: true });
        execFileSync("chown", ["-R", "nobody", home]);
        daemon = spawn(
            "runuser",
            [
                "-u",
                "nobody",
                "--",
                "env",
                `HOME=${home}`,
                `XDG_RUNTIME_DIR=${home}/run`,
                `XDG_CONFIG_HOME=${home}/config`,
                `XDG_CACHE_HOME=${home}/cache`,
                "libvirtd",
                "--timeout",
                "600",
            ],
            { stdio: ["ignore", "ignore", fs.openSync(path.join(dir, "libvirtd.log"), "w")] },
        );
        const socket = path.join(home, "run", "libvirt", "libvirt-sock");
        uri = `test+unix:///default?socket=${socket}`;
        for (let i = 0; i < 100 && !fs.existsSync(socket); i++) await new Promise((r) => setTimeout(r, 100));
        assert.ok(fs.existsSync(socket), `libvirtd did not start: ${fs.readFileSync(path.join(dir, "libvirtd.log"), "utf8")}`);
        // The test driver keeps its domains while a connection is open.
        held = spawn("virsh", ["-c", uri], { stdio: ["pipe", "ignore", "ignore"] });
        for (let i = 0; i < 50 && virsh("list", "--all").status !== 0; i++) await new Promise((r) => setTimeout(r, 100));

        // The functions on vfio-pci, the way the vfio step leaves them.
        const functions = [...settings.nvswitchPci, ...settings.memoryControllerPci];
        sysfs = new FakeSysfs(
            path.join(dir, "sys"),
            functions.map((bdf, i) => ({
                bdf,
                vendor: i < 4 ? "0x10de" : "0x11f8",
                device: i < 4 ? "0x22a3" : "0x4128",
                class: i < 4 ? "0x068000" : "0x058000",
                driver: i < 4 ? "nvidia" : undefined,
                native: i < 4 ? "nvidia" : undefined,
                group: 20 + i,
            })),
            ["vfio-pci"],
            true,
        );
        sysfs.start();
        await run("bash", [
            VFIO_SCRIPT,
            "ensure",
            "--sysfs",
            sysfs.root,
            "--state",
            path.join(dir, "vfio-state"),
            ...functions.flatMap((f, i) => [i < 4 ? "--nvswitch" : "--memory-controller", f]),
        ]);

        const p = paths();
        fs.mkdirSync(p.seed, { recursive: true });
        execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", p.image, "1G"]);
        writePlan(settings);
    });

    after(async () => {
        sysfs?.stop();
        held?.stdin?.end();
        // libvirtd first, by its own pid file; runuser then reaps it and exits.
        const pidFile = dir ? path.join(dir, "libvirt", "run", "libvirt", "libvirtd.pid") : "";
        if (pidFile && fs.existsSync(pidFile)) spawnSync("kill", [fs.readFileSync(pidFile, "utf8").trim()]);
        if (daemon && daemon.exitCode === null) {
            const exited = new Promise((resolve) => daemon!.once("exit", resolve));
            await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
            if (daemon.exitCode === null) daemon.kill();
        }
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    function writePlan(s: FabricServiceVmSettings): string {
        const p = paths();
        fs.writeFileSync(p.domain, renderServiceVmDomain(s));
        fs.writeFileSync(path.join(p.seed, "user-data"), renderServiceVmUserData(s));
        fs.writeFileSync(path.join(p.seed, "meta-data"), renderServiceVmMetaData(s));
        return servicePlanId(s);
    }

    function script(action: "ensure" | "check" | "remove", plan: string, extra: string[] = []): Promise<{ code: number; out: string }> {
        const p = paths();
        const args = [VM_SCRIPT, action, "--name", name, "--uri", uri, "--state", p.state, "--console", p.console];
        if (action === "ensure")
            args.push(
                "--domain",
                p.domain,
                "--seed",
                p.seed,
                "--image",
                p.image,
                "--plan",
                plan,
                "--timeout",
                "60",
                ...[...settings.nvswitchPci, ...settings.memoryControllerPci].flatMap((f) => ["--vfio", f]),
                ...extra,
            );
        if (action === "check") args.push("--plan", plan);
        return run("bash", args, { encoding: "utf8", env: { ...process.env, GPU_WORKERS_SYSFS: sysfs.root } })
            .then(({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }))
            .catch((e: { code: number; stdout: string; stderr: string; message: string }) => ({ code: e.code, out: `${e.stdout}${e.stderr}` || e.message }));
    }

    /** Plays the VM: once the domain runs (as a new boot, if `after` is given), writes what its unit writes on the console. */
    async function vmReports(line: string, after?: string): Promise<void> {
        for (let i = 0; i < 300; i++) {
            const id = virsh("domid", name).stdout.trim();
            if (virsh("domstate", name).stdout.trim() === "running" && id !== after) {
                fs.appendFileSync(paths().console, `[   12.345678] cloud-init[612]: ...\r\n${line}\r\n`);
                return;
            }
            await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`${name} never started`);
    }

    it("ensure: seed ISO (cidata), a disk layer over the image, defined, autostart, started, waits for the VM's report", async () => {
        const plan = servicePlanId(settings);
        const [result] = await Promise.all([script("ensure", plan), vmReports(`gpu-workers-fabric: ready plan=${plan} partitions=1,2`)]);
        assert.strictEqual(result.code, 0, result.out);
        assert.match(result.out, new RegExp(`hgx-a-fabric runs fabricmanager: ready plan=${plan} partitions=1,2`));
        const p = paths();
        assert.match(execFileSync("isoinfo", ["-d", "-i", path.join(p.state, "seed.iso")], { encoding: "utf8" }), /^Volume id: cidata$/m);
        const listing = execFileSync("isoinfo", ["-R", "-f", "-i", path.join(p.state, "seed.iso")], { encoding: "utf8" })
            .split("\n")
            .filter(Boolean)
            .sort();
        assert.deepStrictEqual(listing, ["/meta-data", "/user-data"]);
        assert.strictEqual(
            execFileSync("isoinfo", ["-R", "-x", "/user-data", "-i", path.join(p.state, "seed.iso")], { encoding: "utf8" }),
            renderServiceVmUserData(settings),
        );
        const disk = JSON.parse(execFileSync("qemu-img", ["info", "--output=json", path.join(p.state, "disk.qcow2")], { encoding: "utf8" }));
        assert.strictEqual(disk["backing-filename"], p.image);
        assert.strictEqual(virsh("domstate", name).stdout.trim(), "running");
        assert.match(virsh("dominfo", name).stdout, /^Autostart:\s+enable$/m);
        const check = await script("check", plan);
        assert.strictEqual(check.code, 0, check.out);
    });

    it("ensure again: nothing restarts", async () => {
        const plan = servicePlanId(settings);
        const id = virsh("domid", name).stdout.trim();
        const again = await script("ensure", plan);
        assert.strictEqual(again.code, 0, again.out);
        assert.strictEqual(virsh("domid", name).stdout.trim(), id, "the same running domain");
    });

    it("check goes by the VM's last report: a failure at a later boot fails it, a later ready passes again", async () => {
        const plan = servicePlanId(settings);
        fs.appendFileSync(paths().console, `gpu-workers-fabric: failed plan=${plan}: fmpm -a 1 failed\r\n`);
        const failed = await script("check", plan);
        assert.strictEqual(failed.code, 1);
        assert.match(failed.out, /has not reported plan \w+ ready since it last started/);
        fs.appendFileSync(paths().console, `gpu-workers-fabric: ready plan=${plan} partitions=1,2\r\n`);
        assert.strictEqual((await script("check", plan)).code, 0);
    });

    it("a new plan (other partitions) restarts the VM with the new seed and waits for the new report", async () => {
        const id = virsh("domid", name).stdout.trim();
        const plan = writePlan({ ...settings, partitions: [1] });
        assert.notStrictEqual(plan, servicePlanId(settings));
        assert.strictEqual((await script("check", plan)).code, 1, "the old plan's report is not the new one's");
        const [result] = await Promise.all([script("ensure", plan), vmReports(`gpu-workers-fabric: ready plan=${plan} partitions=1`, id)]);
        assert.strictEqual(result.code, 0, result.out);
        assert.notStrictEqual(virsh("domid", name).stdout.trim(), id, "restarted");
        assert.match(
            execFileSync("isoinfo", ["-R", "-x", "/meta-data", "-i", path.join(paths().state, "seed.iso")], { encoding: "utf8" }),
            new RegExp(`instance-id: gpu-workers-fabric-${plan}`),
        );
    });

    it("the VM's failure report fails the step with the VM's words", async () => {
        const id = virsh("domid", name).stdout.trim();
        const plan = writePlan({ ...settings, partitions: [7, 8] });
        const [result] = await Promise.all([
            script("ensure", plan),
            vmReports(
                `fabric-manager: no nvidia-fabricmanager package matches the loaded driver 550.127.05 exactly\r\ngpu-workers-fabric: failed plan=${plan}: no nvidia-fabricmanager package matches the loaded driver 550.127.05 exactly; fabricmanager must match the driver version`,
                id,
            ),
        ]);
        assert.strictEqual(result.code, 1);
        assert.match(
            result.out,
            new RegExp(
                `fabric-service-vm: the service VM hgx-a-fabric reports: failed plan=${plan}: no nvidia-fabricmanager package matches the loaded driver 550\\.127\\.05 exactly; fabricmanager must match the driver version \\(console log: `,
            ),
        );
    });

    it("refuses to start while a function is not on vfio-pci, naming it", async () => {
        const r = await script("ensure", "x", ["--vfio", "0000:0d:00.0"]);
        assert.strictEqual(r.code, 1);
        assert.match(r.out, /PCI function 0000:0d:00\.0 is on driver none, not vfio-pci: the nvswitch-vfio step binds it before the VM starts/);
    });

    it("remove: stopped, undefined, its seed, disk layer and log gone; again is fine", async () => {
        const r = await script("remove", "");
        assert.strictEqual(r.code, 0, r.out);
        assert.notStrictEqual(virsh("dominfo", name).status, 0, "undefined");
        assert.ok(!fs.existsSync(paths().state), "state folder removed");
        assert.ok(!fs.existsSync(paths().console), "console log removed");
        assert.ok(fs.existsSync(paths().image), "the base image stays");
        assert.strictEqual((await script("remove", "")).code, 0);
        assert.strictEqual((await script("check", "x")).code, 1);
    });
});
