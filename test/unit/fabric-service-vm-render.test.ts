/**
 * The service VM's pure renderers: the libvirt domain (exactly the NVSwitch functions and the
 * memory controller, managed="no"; vCPUs, memory, disk layer, seed, logged console), the
 * cloud-init seed (FABRIC_MODE=1, the planned partitions, the report on the console), the vfio
 * unit, and the host steps with their checks. virt-xml-validate and virsh run on the same
 * output in test/realtool/fabric-service-vm.test.ts.
 */
import * as assert from "assert";
import { parse } from "yaml";
import {
    FabricServiceVmSettings,
    pciParts,
    renderFabricServiceVm,
    renderServiceVmDomain,
    renderServiceVmMetaData,
    renderServiceVmUserData,
    renderVfioUnit,
    servicePlanId,
    serviceVmPaths,
    sysfsAddress,
} from "../../components/lib/fabric/service-vm";
import { readHostScript } from "../../components/lib/host/scripts";

export const SETTINGS: FabricServiceVmSettings = {
    name: "hgx-a-fabric",
    vcpus: 2,
    memoryMiB: 4096,
    image: "/var/lib/gpu-workers/images/fm.qcow2",
    nvswitchPci: ["00000000:09:00.0", "0000:0a:00.0", "0000:0B:00.0", "0000:0c:00.0"],
    memoryControllerPci: ["0000:03:00.1"],
    partitions: [1, 2],
    libvirtUri: "qemu:///system",
    readyTimeoutSeconds: 900,
};

function hostdevs(domain: string): string[] {
    return [
        ...domain.matchAll(
            /<hostdev mode="subsystem" type="pci" managed="(\w+)">\s*<source>\s*<address domain="(0x[0-9a-f]{4})" bus="(0x[0-9a-f]{2})" slot="(0x[0-9a-f]{2})" function="(0x[0-7])"\/>/g,
        ),
    ].map((m) => `${m[1]} ${m[2]}:${m[3]}:${m[4]}.${m[5]}`);
}

describe("fabricmanager service VM rendering", () => {
    it("the domain gets exactly the NVSwitches and the memory controller, managed=no", () => {
        assert.deepStrictEqual(hostdevs(renderServiceVmDomain(SETTINGS)), [
            "no 0x0000:0x09:0x00.0x0",
            "no 0x0000:0x0a:0x00.0x0",
            "no 0x0000:0x0b:0x00.0x0",
            "no 0x0000:0x0c:0x00.0x0",
            "no 0x0000:0x03:0x00.0x1",
        ]);
    });

    it("vCPUs, memory, the disk layer, the seed and the console log come from the settings", () => {
        const domain = renderServiceVmDomain({ ...SETTINGS, vcpus: 4, memoryMiB: 8192 });
        const paths = serviceVmPaths("hgx-a-fabric");
        assert.match(domain, /<name>hgx-a-fabric<\/name>/);
        assert.match(domain, /<memory unit="MiB">8192<\/memory>/);
        assert.match(domain, /<vcpu placement="static">4<\/vcpu>/);
        assert.ok(domain.includes(`<source file="${paths.disk}"/>`));
        assert.ok(domain.includes(`<source file="${paths.seedIso}"/>`) && /device="cdrom"[\s\S]*<readonly\/>/.test(domain));
        assert.ok(domain.includes(`<log file="/var/log/gpu-workers/hgx-a-fabric-console.log" append="on"/>`));
        assert.doesNotMatch(domain, /<interface/, "no NIC unless a network is given");
        assert.match(renderServiceVmDomain({ ...SETTINGS, network: "default" }), /<interface type="network">\s*<source network="default"\/>/);
        assert.match(renderServiceVmDomain({ ...SETTINGS, name: "a&b" }), /<name>a&amp;b<\/name>/);
    });

    it("PCI addresses in nvidia-smi's form are taken, anything else refused", () => {
        assert.deepStrictEqual(pciParts("00000000:9A:00.1"), { domain: "0x0000", bus: "0x9a", slot: "0x00", function: "0x1" });
        assert.strictEqual(sysfsAddress("00000000:9A:00.1"), "0000:9a:00.1");
        assert.throws(() => pciParts("9a:00"), /"9a:00" is not a PCI address such as 0000:09:00\.0/);
    });

    it("the seed runs fabricmanager in shared NVSwitch mode and activates the planned partitions, reporting on the console", () => {
        const doc = parse(renderServiceVmUserData(SETTINGS));
        const file = (p: string) => doc.write_files.find((f: { path: string }) => f.path === p);
        assert.match(file("/usr/share/nvidia/nvswitch/fabricmanager.cfg").content, /^FABRIC_MODE=1$/m);
        assert.strictEqual(file("/usr/local/lib/gpu-workers/fabric-manager.sh").content, readHostScript("fabric-manager.sh"));
        assert.strictEqual(file("/usr/local/lib/gpu-workers/fabric-manager.sh").permissions, "0755");
        const plan = servicePlanId(SETTINGS);
        assert.match(
            file("/etc/systemd/system/gpu-workers-fabric.service").content,
            new RegExp(
                `^ExecStart=/usr/local/lib/gpu-workers/fabric-manager.sh ensure --config /usr/share/nvidia/nvswitch/fabricmanager.cfg --partition 1 --partition 2 --report /dev/ttyS0 --plan ${plan}$`,
                "m",
            ),
        );
        assert.deepStrictEqual(doc.runcmd, [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "gpu-workers-fabric.service"],
        ]);
        assert.strictEqual(renderServiceVmMetaData(SETTINGS), `instance-id: gpu-workers-fabric-${plan}\nlocal-hostname: hgx-a-fabric\n`);
    });

    it("a new plan is a new cloud-init instance; the same plan renders the same bytes", () => {
        assert.strictEqual(renderServiceVmUserData(SETTINGS), renderServiceVmUserData({ ...SETTINGS }));
        assert.notStrictEqual(servicePlanId({ ...SETTINGS, partitions: [5, 6, 1] }), servicePlanId(SETTINGS));
        assert.strictEqual(servicePlanId({ ...SETTINGS, vcpus: 8 }), servicePlanId(SETTINGS), "the VM's size is the domain's, not the plan's");
    });

    it("host steps: vfio (with its check), vfio at boot, the service VM (with its check), in that order", () => {
        const r = renderFabricServiceVm(SETTINGS);
        const paths = serviceVmPaths("hgx-a-fabric");
        assert.deepStrictEqual(
            r.files.map((f) => [f.path, f.mode]),
            [
                ["/usr/local/lib/gpu-workers/nvswitch-vfio.sh", "0755"],
                ["/etc/systemd/system/gpu-workers-nvswitch-vfio.service", "0644"],
                ["/usr/local/lib/gpu-workers/fabric-service-vm.sh", "0755"],
                [paths.domainXml, "0644"],
                [paths.userData, "0644"],
                [paths.metaData, "0644"],
            ],
        );
        const [vfio, atBoot, vm] = r.steps;
        const functions = "--nvswitch 0000:09:00.0 --nvswitch 0000:0a:00.0 --nvswitch 0000:0b:00.0 --nvswitch 0000:0c:00.0 --memory-controller 0000:03:00.1";
        assert.strictEqual(vfio.create, `/usr/local/lib/gpu-workers/nvswitch-vfio.sh ensure ${functions}`);
        assert.strictEqual(vfio.check, `/usr/local/lib/gpu-workers/nvswitch-vfio.sh check ${functions}`);
        assert.strictEqual(vfio.remove, "/usr/local/lib/gpu-workers/nvswitch-vfio.sh remove");
        assert.ok(renderVfioUnit(SETTINGS).includes(`ExecStart=/usr/local/lib/gpu-workers/nvswitch-vfio.sh ensure ${functions}`));
        assert.match(renderVfioUnit(SETTINGS), /^Before=libvirtd\.service virtqemud\.service/m);
        assert.deepStrictEqual(atBoot.dependsOn, [paths.vfioUnit, "nvswitch-vfio"]);
        assert.match(
            vm.create,
            new RegExp(
                `^/usr/local/lib/gpu-workers/fabric-service-vm.sh ensure --name hgx-a-fabric --uri qemu:///system --state ${paths.state} --console ${paths.consoleLog} --domain ${paths.domainXml} --seed ${paths.seedDir} --image /var/lib/gpu-workers/images/fm.qcow2 --plan ${servicePlanId(SETTINGS)} --timeout 900 --vfio 0000:09:00.0 .* --vfio 0000:03:00.1$`,
            ),
        );
        assert.ok(vm.remove!.startsWith("/usr/local/lib/gpu-workers/fabric-service-vm.sh remove --name hgx-a-fabric"));
        assert.ok(vm.check!.endsWith(`--plan ${servicePlanId(SETTINGS)}`));
        assert.ok(vm.dependsOn.includes("nvswitch-vfio") && vm.dependsOn.includes(paths.domainXml));
        assert.throws(() => renderFabricServiceVm({ ...SETTINGS, nvswitchPci: [] }), /name the board's NVSwitches/);
    });
});
