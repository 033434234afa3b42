/**
 * fabricmanager in a service VM, for a board shared by several workers (NVIDIA's shared
 * NVSwitch model): the host step that binds the NVSwitches and their memory controller to
 * vfio-pci (again at every boot), the libvirt domain that gets exactly those functions, and
 * the cloud-init seed that makes the VM run fabricmanager with FABRIC_MODE=1 and activate the
 * planned partitions. The VM reports on its serial console, which libvirt logs to a file that
 * the host step reads: no network path into the VM is needed. Pure.
 */
import { stringify } from "yaml";
import { sha256Text } from "../file-hash";
import { hostScriptFile, OWNERSHIP_SCRIPT, readHostScript } from "../host/scripts";
import { HOST_ETC_DIR, HostFile, HostStep, RenderedComponent, shellCommand } from "../host/steps";
import { FABRIC_MANAGER_CONFIG, renderFabricManagerConfig } from "../links/fabric-manager/render";

export interface FabricServiceVmSettings {
    /** libvirt domain name. Example: "hgx-a-fabric". */
    name: string;
    /** Virtual CPUs. Example: 2. */
    vcpus: number;
    /** Memory in MiB. Example: 4096. */
    memoryMiB: number;
    /**
     * Base disk image on the host (qcow2 or raw) with cloud-init, the NVIDIA driver and its
     * fabricmanager (or apt access to it, through `network`): fabricmanager must match the
     * driver inside the VM exactly. The VM writes to a layer of its own; the image stays as it is.
     */
    image: string;
    /** Size of the VM's disk layer in GiB. Default: the image's size. */
    diskGiB?: number;
    /** libvirt network for a NIC (e.g. "default"). Default: none (no NIC). */
    network?: string;
    /** PCI addresses of the board's NVSwitches. */
    nvswitchPci: string[];
    /** PCI addresses of the NVSwitch memory controller (HGX: PMC-Sierra 11f8:4128). */
    memoryControllerPci: string[];
    /** Partitions fabricmanager activates, from the partition planner. */
    partitions: number[];
    /** libvirt connection URI on the host. Example: "qemu:///system". */
    libvirtUri: string;
    /** How long the host step waits for the VM to report its partitions active. */
    readyTimeoutSeconds: number;
}

export const NVSWITCH_VFIO_SCRIPT = "nvswitch-vfio.sh";
export const SERVICE_VM_SCRIPT = "fabric-service-vm.sh";
export const FABRIC_MANAGER_SCRIPT = "fabric-manager.sh";
export const NVSWITCH_VFIO_UNIT = "gpu-workers-nvswitch-vfio.service";
/** Inside the VM: the unit that runs fabricmanager and activates the partitions at every boot. */
export const VM_FABRIC_UNIT = "gpu-workers-fabric.service";
/** The VM's first serial port, which libvirt logs to the console file. */
export const VM_CONSOLE = "/dev/ttyS0";

/** Where each piece lives on the host. */
export function serviceVmPaths(name: string) {
    const etc = `${HOST_ETC_DIR}/fabric-vm/${name}`;
    const state = `/var/lib/gpu-workers/fabric-vm/${name}`;
    return {
        domainXml: `${etc}/domain.xml`,
        seedDir: `${etc}/seed`,
        userData: `${etc}/seed/user-data`,
        metaData: `${etc}/seed/meta-data`,
        state,
        disk: `${state}/disk.qcow2`,
        seedIso: `${state}/seed.iso`,
        consoleLog: `/var/log/gpu-workers/${name}-console.log`,
        vfioUnit: `/etc/systemd/system/${NVSWITCH_VFIO_UNIT}`,
    };
}

/** 00000000:09:00.0 or 0000:09:00.0 -> its parts, as libvirt's <address> takes them. */
export function pciParts(address: string): { domain: string; bus: string; slot: string; function: string } {
    const m = /^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/.exec(address);
    if (!m) throw new Error(`"${address}" is not a PCI address such as 0000:09:00.0`);
    return { domain: `0x${m[1].slice(-4).toLowerCase()}`, bus: `0x${m[2].toLowerCase()}`, slot: `0x${m[3].toLowerCase()}`, function: `0x${m[4]}` };
}

/** 0000:09:00.0 (what sysfs and the scripts use). */
export function sysfsAddress(address: string): string {
    const p = pciParts(address);
    return `${p.domain.slice(2)}:${p.bus.slice(2)}:${p.slot.slice(2)}.${p.function.slice(2)}`;
}

function xml(text: string | number): string {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Every function the VM gets: the NVSwitches, then the memory controller. */
function passedFunctions(s: FabricServiceVmSettings): string[] {
    return [...s.nvswitchPci, ...s.memoryControllerPci].map(sysfsAddress);
}

/**
 * The libvirt domain. hostdev entries are managed="no": the functions are on vfio-pci
 * already (the vfio step), and libvirt must not give them back to the host driver when
 * the VM stops, or the next start would find them taken.
 */
export function renderServiceVmDomain(s: FabricServiceVmSettings): string {
    const paths = serviceVmPaths(s.name);
    const hostdevs = passedFunctions(s).map((address) => {
        const p = pciParts(address);
        return [
            `    <hostdev mode="subsystem" type="pci" managed="no">`,
            `      <source>`,
            `        <address domain="${p.domain}" bus="${p.bus}" slot="${p.slot}" function="${p.function}"/>`,
            `      </source>`,
            `    </hostdev>`,
        ].join("\n");
    });
    const nic = s.network
        ? [`    <interface type="network">`, `      <source network="${xml(s.network)}"/>`, `      <model type="virtio"/>`, `    </interface>`]
        : [];
    return [
        `<!-- Rendered by gpu-workers: fabricmanager's service VM. Changes here are replaced on the next pulumi up. -->`,
        `<domain type="kvm">`,
        `  <name>${xml(s.name)}</name>`,
        `  <memory unit="MiB">${s.memoryMiB}</memory>`,
        `  <vcpu placement="static">${s.vcpus}</vcpu>`,
        `  <os>`,
        `    <type arch="x86_64" machine="q35">hvm</type>`,
        `    <boot dev="hd"/>`,
        `  </os>`,
        `  <features>`,
        `    <acpi/>`,
        `    <apic/>`,
        `  </features>`,
        `  <cpu mode="host-passthrough"/>`,
        `  <on_poweroff>destroy</on_poweroff>`,
        `  <on_reboot>restart</on_reboot>`,
        `  <on_crash>restart</on_crash>`,
        `  <devices>`,
        `    <disk type="file" device="disk">`,
        `      <driver name="qemu" type="qcow2"/>`,
        `      <source file="${xml(paths.disk)}"/>`,
        `      <target dev="vda" bus="virtio"/>`,
        `    </disk>`,
        `    <disk type="file" device="cdrom">`,
        `      <driver name="qemu" type="raw"/>`,
        `      <source file="${xml(paths.seedIso)}"/>`,
        `      <target dev="sda" bus="sata"/>`,
        `      <readonly/>`,
        `    </disk>`,
        ...nic,
        `    <serial type="pty">`,
        `      <log file="${xml(paths.consoleLog)}" append="on"/>`,
        `      <target port="0"/>`,
        `    </serial>`,
        `    <console type="pty">`,
        `      <target type="serial" port="0"/>`,
        `    </console>`,
        ...hostdevs,
        `  </devices>`,
        `</domain>`,
        ``,
    ].join("\n");
}

/** The unit inside the VM: fabricmanager and the partitions at every boot, the outcome on the console. */
export function renderVmFabricUnit(s: FabricServiceVmSettings, plan: string): string {
    const run = shellCommand([
        `/usr/local/lib/gpu-workers/${FABRIC_MANAGER_SCRIPT}`,
        "ensure",
        "--config",
        FABRIC_MANAGER_CONFIG,
        ...s.partitions.flatMap((id) => ["--partition", String(id)]),
        "--report",
        VM_CONSOLE,
        "--plan",
        plan,
    ]);
    return [
        "# Rendered by gpu-workers (cloud-init seed of the fabricmanager service VM).",
        "[Unit]",
        "Description=gpu-workers: fabricmanager in shared NVSwitch mode, and the planned partitions",
        "Wants=network-online.target",
        "After=network-online.target systemd-modules-load.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        `ExecStart=${run}`,
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

/**
 * The plan's id: what the VM reports back with, and its cloud-init instance id, so a new plan
 * is a new instance to cloud-init (which then writes the new files on the next boot).
 */
export function servicePlanId(s: FabricServiceVmSettings): string {
    const config = renderFabricManagerConfig({ partitions: s.partitions, shared: true });
    return sha256Text(
        [config, s.partitions.join(","), sha256Text(readHostScript(FABRIC_MANAGER_SCRIPT)), sha256Text(readHostScript(OWNERSHIP_SCRIPT)), VM_FABRIC_UNIT].join(
            "\n",
        ),
    ).slice(0, 16);
}

/** cloud-init user-data of the service VM: fabricmanager's config, its step script (with the helper it runs) and the unit that runs it. */
export function renderServiceVmUserData(s: FabricServiceVmSettings): string {
    const plan = servicePlanId(s);
    const doc = {
        write_files: [
            {
                path: FABRIC_MANAGER_CONFIG,
                permissions: "0644",
                owner: "root:root",
                content: renderFabricManagerConfig({ partitions: s.partitions, shared: true }),
            },
            {
                path: `/usr/local/lib/gpu-workers/${FABRIC_MANAGER_SCRIPT}`,
                permissions: "0755",
                owner: "root:root",
                content: readHostScript(FABRIC_MANAGER_SCRIPT),
            },
            // fabric-manager.sh runs it to record the package it installs.
            { path: `/usr/local/lib/gpu-workers/${OWNERSHIP_SCRIPT}`, permissions: "0755", owner: "root:root", content: readHostScript(OWNERSHIP_SCRIPT) },
            { path: `/etc/systemd/system/${VM_FABRIC_UNIT}`, permissions: "0644", owner: "root:root", content: renderVmFabricUnit(s, plan) },
        ],
        runcmd: [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", VM_FABRIC_UNIT],
        ],
    };
    return `#cloud-config\n# Rendered by gpu-workers: fabricmanager (FABRIC_MODE=1) and partitions ${s.partitions.join(", ") || "(none)"}; plan ${plan}.\n${stringify(doc, { lineWidth: 0 })}`;
}

export function renderServiceVmMetaData(s: FabricServiceVmSettings): string {
    return `instance-id: gpu-workers-fabric-${servicePlanId(s)}\nlocal-hostname: ${s.name}\n`;
}

function vfioArgs(s: FabricServiceVmSettings): string[] {
    return [
        ...s.nvswitchPci.flatMap((a) => ["--nvswitch", sysfsAddress(a)]),
        ...s.memoryControllerPci.flatMap((a) => ["--memory-controller", sysfsAddress(a)]),
    ];
}

/** Binds the functions again at every boot, before libvirt starts the VM (vfio bindings do not survive a reboot). */
export function renderVfioUnit(s: FabricServiceVmSettings): string {
    return [
        "# Rendered by gpu-workers: the NVSwitches of fabricmanager's service VM go to vfio-pci at boot.",
        "[Unit]",
        "Description=gpu-workers: NVSwitches and their memory controller to vfio-pci",
        "After=systemd-modules-load.service",
        "Before=libvirtd.service virtqemud.service libvirt-guests.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        `ExecStart=${shellCommand([hostScriptFile(NVSWITCH_VFIO_SCRIPT).path, "ensure", ...vfioArgs(s)])}`,
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

export function renderFabricServiceVm(s: FabricServiceVmSettings): RenderedComponent {
    if (s.nvswitchPci.length === 0) throw new Error(`service VM ${s.name}: name the board's NVSwitches (nvswitchPci)`);
    const paths = serviceVmPaths(s.name);
    const vfioScript = hostScriptFile(NVSWITCH_VFIO_SCRIPT);
    const vmScript = hostScriptFile(SERVICE_VM_SCRIPT);
    const plan = servicePlanId(s);
    const files: HostFile[] = [
        vfioScript,
        { path: paths.vfioUnit, mode: "0644", content: renderVfioUnit(s) },
        vmScript,
        { path: paths.domainXml, mode: "0644", content: renderServiceVmDomain(s) },
        { path: paths.userData, mode: "0644", content: renderServiceVmUserData(s) },
        { path: paths.metaData, mode: "0644", content: renderServiceVmMetaData(s) },
    ];
    const vm = (action: string, ...args: string[]) =>
        shellCommand([vmScript.path, action, "--name", s.name, "--uri", s.libvirtUri, "--state", paths.state, "--console", paths.consoleLog, ...args]);
    const steps: HostStep[] = [
        {
            name: "nvswitch-vfio",
            create: shellCommand([vfioScript.path, "ensure", ...vfioArgs(s)]),
            remove: shellCommand([vfioScript.path, "remove"]),
            check: shellCommand([vfioScript.path, "check", ...vfioArgs(s)]),
            dependsOn: [vfioScript.path],
        },
        {
            name: "nvswitch-vfio-at-boot",
            create: `systemctl daemon-reload && systemctl enable ${NVSWITCH_VFIO_UNIT}`,
            remove: `systemctl disable ${NVSWITCH_VFIO_UNIT} || true`,
            check: `systemctl is-enabled --quiet ${NVSWITCH_VFIO_UNIT}`,
            dependsOn: [paths.vfioUnit, "nvswitch-vfio"],
        },
        {
            name: "service-vm",
            create: vm(
                "ensure",
                "--domain",
                paths.domainXml,
                "--seed",
                paths.seedDir,
                "--image",
                s.image,
                ...(s.diskGiB !== undefined ? ["--disk-gib", String(s.diskGiB)] : []),
                "--plan",
                plan,
                "--timeout",
                String(s.readyTimeoutSeconds),
                ...passedFunctions(s).flatMap((a) => ["--vfio", a]),
            ),
            remove: vm("remove"),
            check: vm("check", "--plan", plan),
            dependsOn: [vmScript.path, paths.domainXml, paths.userData, paths.metaData, "nvswitch-vfio"],
        },
    ];
    return { files, steps };
}
