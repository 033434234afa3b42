/**
 * How the program reaches a host, as a plan: over SSH as it is, or through an LXD instance the
 * same `up` creates (with the files pushed in before its first start and the sshd proxy
 * device). GpuHost and ConcourseWeb both start from it. Pure.
 */
import type { z } from "zod";
import { HostFile, stepResourceName } from "../host/steps";
import { onTransport, Transport } from "../host/transport";
import { lxdSshProxyDevice, lxdVmSshDevices } from "../lxd/devices";
import type { LxdDevices, LxdWaitFor } from "../lxd/types";
import { authorizedKeysPath, LXD_SSHD_DROP_IN, renderSshdDropIn } from "../render/lxd-access";
import type { lxdTransportSchema } from "../settings/transport-schema";
import type { SshHostShape } from "../settings/worker-spec";

/**
 * A host's transport as planning knows it (no keys, no server secrets): over SSH its login user;
 * in LXD the instance it creates (lxdTransportSchema's output) with its devices besides the sshd
 * proxy (GPUs, datasets, published ports).
 */
export type AccessShape = Transport<SshHostShape, z.output<typeof lxdTransportSchema> & { devices: LxdDevices }>;

/** One thing done on (or about) a host, as the preview and the offline render name it. */
export interface PlannedStep {
    /** The resource's name. */
    name: string;
    /** The component it belongs to. */
    component: string;
    /** What it waits for: step names, and `file:<path>` for files. */
    dependsOn: string[];
    /** What it runs (a shell command on the host, or what the program does). */
    run: string;
    remove?: string;
}

export interface HostAccessPlan {
    /** Login user on the host. */
    user: string;
    /**
     * The instance, its files and how to know it is up (LXD transport only). A container takes
     * the files pushed before its first start; a VM takes them in cloud-init user-data.
     */
    lxd?: { instance: NonNullable<AccessShape["lxd"]>; files: HostFile[]; delivery: "push" | "cloud-init"; waitFor: LxdWaitFor };
    /** The instance step (LXD only): what every other step of the host waits for. */
    steps: PlannedStep[];
    files: HostFile[];
}

const SSHD_READY = ["sh", "-c", "systemctl is-active --quiet ssh || systemctl is-active --quiet sshd"];

/** Files pushed into a new LXD instance so the program can log in and pin the host key. */
function lxdAccessFiles(user: string): HostFile[] {
    return [
        { path: authorizedKeysPath(user), content: "", mode: "0600", generated: "login-key.public" },
        { path: "/etc/ssh/ssh_host_ed25519_key", content: "", mode: "0600", secret: true, generated: "host-key.private" },
        { path: "/etc/ssh/ssh_host_ed25519_key.pub", content: "", mode: "0644", generated: "host-key.public" },
        { path: LXD_SSHD_DROP_IN, content: renderSshdDropIn(), mode: "0644" },
    ];
}

/** `name` is the component's name; `component` its type as the plan names it (GpuHost, ConcourseWeb). */
export function planHostAccess(name: string, component: string, transport: AccessShape): HostAccessPlan {
    return onTransport(transport, {
        ssh: (ssh): HostAccessPlan => ({ user: ssh.user, steps: [], files: [] }),
        lxd: (l): HostAccessPlan => {
            const vm = l.type === "virtual-machine";
            if (vm && (!l.network || !l.address))
                throw new Error(`${name}: a virtual machine needs network and address: LXD forwards sshd to a VM only through NAT to a static address`);
            const ssh = { address: l.sshAddress, port: l.sshPort };
            const access = vm ? lxdVmSshDevices({ network: l.network!, address: l.address! }, ssh) : { sshd: lxdSshProxyDevice(ssh) };
            const instance = { ...l, devices: { ...l.devices, ...access } };
            const files = lxdAccessFiles(l.user);
            const how = vm ? "with the SSH keys in its cloud-init.user-data" : "push the SSH keys";
            return {
                user: l.user,
                // A VM boots a whole kernel and runs cloud-init before sshd.
                lxd: { instance, files, delivery: vm ? "cloud-init" : "push", waitFor: { command: SSHD_READY, timeoutSeconds: vm ? 300 : 120 } },
                steps: [
                    {
                        name: stepResourceName(name, "instance"),
                        component,
                        dependsOn: [],
                        run: `LXD: create ${l.type} ${l.instance} from image ${l.image} with config ${JSON.stringify(l.config)} and devices ${JSON.stringify(instance.devices)}, ${how}, start it and wait for sshd`,
                    },
                ],
                files,
            };
        },
    });
}
