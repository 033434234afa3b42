/**
 * The LXD devices (and instance config) of a worker instance, taken from the same GPU plan
 * that makes the worker's tags: an instance tagged gpu-devices=0 gets GPU 0 and nothing else.
 * Pure: no Pulumi import, no I/O.
 */
import type { WorkerGpuPlan } from "../gpu/plan";
import type { Gpu } from "../gpu/inventory";
import type { LxdDevice, LxdDevices, LxdInstanceType } from "./types";

export interface WorkerDeviceOptions {
    /** Pass NVIDIA GPUs by CDI id (plan.cdiDevices) instead of PCI address / card id. */
    cdi: boolean;
    /** Host folder whose subfolders are the datasets (absent: no dataset disks). */
    datasetSource?: string;
    /** Where datasets appear inside the instance, and which folder-name suffixes are writable. */
    datasets: { root: string; writableSuffixes: string[] };
    /**
     * Subfolders of datasetSource to attach, each as its own disk so each can be read-only or
     * writable. Absent: the whole datasetSource is attached read-only at datasets.root.
     */
    datasetFolders?: string[];
    /**
     * Host address and port the instance's sshd is reached on: adds the proxy device "sshd"
     * (host tcp:address:port -> instance tcp:127.0.0.1:22). Leave out if you add it yourself.
     */
    ssh?: { address: string; port: number };
    /** Group inside the instance that owns AMD and Intel device nodes (the image's render group); default 0. */
    gpuGid?: number;
    /**
     * Attach writable dataset folders with `shift` (an idmapped mount), so the instance's root
     * writes there as the host's owner of the folder. Default true. Needs idmapped-mount support
     * (kernel >= 5.12 and a filesystem that has it; LXD refuses to start the instance otherwise,
     * "Required idmapping abilities not available"). With false, a writable folder must be owned
     * on the host by the instance's mapped root (volatile.idmap.base, e.g. 1000000).
     */
    shiftWritable?: boolean;
    /**
     * Host PCI address of each GPU by the index the instance numbers it with, where the two
     * differ: a worker VM on a shared board numbers its partition's GPUs 0, 1, ... while the
     * host knows them by their board addresses. Example: { 0: "0000:9a:00.0" }.
     */
    hostPci?: Record<number, string>;
}

/** Group-only access: device nodes are never opened to every user. */
const DEVICE_MODE = "0660";

/** nvidia-smi writes PCI bus ids with an 8-digit domain (00000000:18:00.0); LXD wants 4 (0000:18:00.0). */
export function lxdPciAddress(pciBusId: string): string {
    const m = /^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$/.exec(pciBusId);
    if (!m) throw new Error(`PCI bus id "${pciBusId}" is not domain:bus:device.function`);
    return `${m[1].slice(-4)}:${m[2]}`.toLowerCase();
}

/** Picks one GPU on the server: by PCI address when known (the host's, where given), else by card id. */
function whichGpu(gpu: Gpu, hostPci?: Record<number, string>): LxdDevice {
    const address = hostPci?.[gpu.index] ?? gpu.pciBusId;
    return address ? { pci: lxdPciAddress(address) } : { id: String(gpu.index) };
}

function cdiIdFor(plan: WorkerGpuPlan, name: string): string {
    const id = plan.cdiDevices.find((c) => c.endsWith(`=${name}`));
    if (!id) throw new Error(`the GPU plan has no CDI device named ${name} (has: ${plan.cdiDevices.join(", ") || "none"})`);
    return id;
}

function nvidiaDevices(plan: WorkerGpuPlan, cdi: boolean, hostPci?: Record<number, string>): LxdDevices {
    const devices: LxdDevices = {};
    for (const gpu of plan.selected) {
        if (gpu.mig.length === 0) {
            devices[`gpu${gpu.index}`] = cdi
                ? { type: "gpu", gputype: "physical", id: cdiIdFor(plan, `${gpu.index}`) }
                : { type: "gpu", gputype: "physical", ...whichGpu(gpu, hostPci) };
            continue;
        }
        for (const mig of [...gpu.mig].sort((a, b) => a.index - b.index)) {
            const name = `gpu${gpu.index}-mig${mig.index}`;
            if (cdi) devices[name] = { type: "gpu", gputype: "physical", id: cdiIdFor(plan, `${gpu.index}:${mig.index}`) };
            else if (mig.uuid) devices[name] = { type: "gpu", gputype: "mig", "mig.uuid": mig.uuid };
            else devices[name] = { type: "gpu", gputype: "mig", ...whichGpu(gpu), "mig.gi": String(mig.gi), "mig.ci": String(mig.ci) };
        }
    }
    return devices;
}

/**
 * AMD and Intel: a gpu device per GPU (by PCI address) brings its /dev/dri nodes, owned by the
 * render group's gid; ROCm also needs /dev/kfd, which no gpu device carries, so every node of
 * plan.deviceNodes outside /dev/dri becomes a unix-char device.
 */
function driDevices(plan: WorkerGpuPlan, gid: number): LxdDevices {
    const devices: LxdDevices = {};
    for (const gpu of plan.selected) {
        devices[`gpu${gpu.index}`] = { type: "gpu", gputype: "physical", ...whichGpu(gpu), gid: String(gid), mode: DEVICE_MODE };
    }
    for (const node of plan.deviceNodes.filter((n) => !n.startsWith("/dev/dri/"))) {
        const name = node.replace(/^\/dev\//, "").replace(/[^A-Za-z0-9_.-]+/g, "-");
        devices[name] = { type: "unix-char", source: node, path: node, gid: String(gid), mode: DEVICE_MODE };
    }
    return devices;
}

function datasetDevices(opts: WorkerDeviceOptions): LxdDevices {
    if (!opts.datasetSource) return {};
    const source = opts.datasetSource.replace(/\/+$/, "");
    const root = opts.datasets.root.replace(/\/+$/, "");
    if (!opts.datasetFolders) return { datasets: { type: "disk", source, path: root, readonly: "true" } };
    const devices: LxdDevices = {};
    for (const folder of opts.datasetFolders) {
        if (!/^[^/\0]+$/.test(folder) || folder === "." || folder === "..")
            throw new Error(`dataset folder "${folder}" must be one folder name under ${source}`);
        const writable = opts.datasets.writableSuffixes.some((s) => folder.endsWith(s));
        const name = `dataset-${folder.replace(/[^A-Za-z0-9_.-]+/g, "-")}`;
        const disk: LxdDevice = { type: "disk", source: `${source}/${folder}`, path: `${root}/${folder}`, readonly: writable ? "false" : "true" };
        // shift maps ownership through the instance's id map, so its root can write there.
        if (writable && (opts.shiftWritable ?? true)) disk.shift = "true";
        devices[name] = disk;
    }
    return devices;
}

/** A TCP endpoint as LXD's proxy device writes it (IPv6 addresses in brackets). */
function tcp(endpoint: { address: string; port: number }): string {
    const address = endpoint.address.includes(":") && !endpoint.address.startsWith("[") ? `[${endpoint.address}]` : endpoint.address;
    return `tcp:${address}:${endpoint.port}`;
}

/**
 * A proxy device. bind "host": `listen` is on the LXD server and `connect` inside the instance
 * (publishing an instance's port); bind "instance": the other way round (reaching a port of
 * the server from an instance that has no network of its own).
 */
export function lxdProxyDevice(listen: { address: string; port: number }, connect: { address: string; port: number }, bind: "host" | "instance"): LxdDevice {
    return { type: "proxy", listen: tcp(listen), connect: tcp(connect), bind };
}

/** A proxy device: host tcp:address:port forwards to the instance's sshd on its own loopback. */
export function lxdSshProxyDevice(ssh: { address: string; port: number }): LxdDevice {
    return lxdProxyDevice(ssh, { address: "127.0.0.1", port: 22 }, "host");
}

/** The devices map of a worker instance: its GPUs from the plan, the sshd proxy, the dataset disks. */
export function lxdDevicesForWorker(plan: WorkerGpuPlan, opts: WorkerDeviceOptions): LxdDevices {
    let gpus: LxdDevices = {};
    if (plan.vendor === "nvidia") gpus = nvidiaDevices(plan, opts.cdi, opts.hostPci);
    else if (plan.vendor === "amd" || plan.vendor === "intel") gpus = driDevices(plan, opts.gpuGid ?? 0);
    return { ...gpus, ...(opts.ssh ? { sshd: lxdSshProxyDevice(opts.ssh) } : {}), ...datasetDevices(opts) };
}

/**
 * A virtual machine's sshd, reached through the LXD server: LXD forwards to a VM only in NAT
 * mode, to a static address of a bridged nic. So the VM gets a nic on `network` with that
 * address, and a NAT proxy from host address:port to it.
 */
export function lxdVmSshDevices(vm: { network: string; address: string }, ssh: { address: string; port: number }): LxdDevices {
    const bracket = (a: string) => (a.includes(":") && !a.startsWith("[") ? `[${a}]` : a);
    return {
        eth0: { type: "nic", network: vm.network, "ipv4.address": vm.address },
        sshd: { type: "proxy", nat: "true", listen: `tcp:${bracket(ssh.address)}:${ssh.port}`, connect: `tcp:${bracket(vm.address)}:22`, bind: "host" },
    };
}

/**
 * Instance config a worker needs: nesting for containers (the worker runs containerd inside),
 * and for NVIDIA containers without CDI, LXD's nvidia.runtime with the plan's driver capabilities.
 * (With CDI the CDI spec brings the driver libraries; nvidia.runtime must stay off. A VM has its
 * own driver: its GPUs are whole PCI devices.)
 */
export function lxdConfigForWorker(plan: WorkerGpuPlan, opts: { cdi: boolean; type?: LxdInstanceType }): Record<string, string> {
    const config: Record<string, string> = {};
    const container = (opts.type ?? "container") === "container";
    if (container) config["security.nesting"] = "true";
    if (container && plan.vendor === "nvidia" && plan.selected.length > 0 && !opts.cdi) {
        config["nvidia.runtime"] = "true";
        config["nvidia.driver.capabilities"] = plan.env.NVIDIA_DRIVER_CAPABILITIES ?? "compute,utility";
    }
    return config;
}
