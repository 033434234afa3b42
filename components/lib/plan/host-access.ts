/**
 * How the program reaches a host, as a plan: over SSH as it is, or through an LXD instance the
 * same `up` creates (with the files pushed in before its first start and the sshd proxy
 * device). GpuHost and ConcourseWeb both start from it. Pure.
 */
import { HostFile, stepResourceName } from "../host/steps";
import { onTransport, Transport } from "../host/transport";
import { lxdSshProxyDevice } from "../lxd/devices";
import type { LxdDevices, LxdInstanceType, LxdWaitFor } from "../lxd/types";
import { authorizedKeysPath, LXD_SSHD_DROP_IN, renderSshdDropIn } from "../render/lxd-access";
import type { SshHostShape } from "./worker-spec";

/** The instance a host's LXD transport creates, as planning knows it (no server secrets). */
export interface LxdInstancePlanInput {
    instance: string;
    image: string;
    type: LxdInstanceType;
    profiles: string[];
    config: Record<string, string>;
    /** Devices besides the sshd proxy (GPUs, datasets, published ports). */
    devices: LxdDevices;
    sshAddress: string;
    sshPort: number;
    user: string;
}

export type AccessShape = Transport<SshHostShape, LxdInstancePlanInput>;

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
    /** The instance, its files and how to know it is up (LXD transport only). */
    lxd?: { instance: LxdInstancePlanInput; files: HostFile[]; waitFor: LxdWaitFor };
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
            const instance = { ...l, devices: { ...l.devices, sshd: lxdSshProxyDevice({ address: l.sshAddress, port: l.sshPort }) } };
            const files = lxdAccessFiles(l.user);
            return {
                user: l.user,
                lxd: { instance, files, waitFor: { command: SSHD_READY, timeoutSeconds: 120 } },
                steps: [{ name: stepResourceName(name, "instance"), component, dependsOn: [], run: `LXD: create ${l.type} ${l.instance} from image ${l.image} with config ${JSON.stringify(l.config)} and devices ${JSON.stringify(instance.devices)}, push the SSH keys, start it and wait for sshd` }],
                files,
            };
        },
    });
}
