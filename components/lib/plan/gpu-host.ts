/**
 * GpuHost's own part of a host's plan: the LXD instance it creates (with the files pushed in
 * before the first start and the sshd proxy device), the discovery it runs, and the check of
 * the declared inventory. The GpuHost component and planHost both take it from here.
 */
import { sha256Text } from "../file-hash";
import { asRoot, HostFile, stepResourceName } from "../host/steps";
import { readHostScript } from "../host/scripts";
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
    /** Devices besides the sshd proxy (GPUs, datasets). */
    devices: LxdDevices;
    sshAddress: string;
    sshPort: number;
    user: string;
}

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

export interface GpuHostPlan {
    /** Login user on the host. */
    user: string;
    /** Discovery: the command run over SSH, with the script on its stdin. */
    discover: { command: string; script: string };
    /** The instance, its files and how to know it is up (LXD transport only). */
    lxd?: { instance: LxdInstancePlanInput & { devices: LxdDevices }; files: HostFile[]; waitFor: LxdWaitFor };
    steps: PlannedStep[];
    files: HostFile[];
}

export const DISCOVER_SCRIPT = "discover-gpus.sh";
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

/** `name` is GpuHost's own name (a worker's is `<host>-host`). */
export function planGpuHost(name: string, transport: Transport<SshHostShape, LxdInstancePlanInput>): GpuHostPlan {
    const script = readHostScript(DISCOVER_SCRIPT);
    const steps: PlannedStep[] = [];
    const reachable: string[] = [];
    let lxd: GpuHostPlan["lxd"];
    const user = onTransport(transport, {
        ssh: (ssh) => ssh.user,
        lxd: (l) => {
            const instance = { ...l, devices: { ...l.devices, sshd: lxdSshProxyDevice({ address: l.sshAddress, port: l.sshPort }) } };
            lxd = { instance, files: lxdAccessFiles(l.user), waitFor: { command: SSHD_READY, timeoutSeconds: 120 } };
            const step = stepResourceName(name, "instance");
            steps.push({ name: step, component: "GpuHost", dependsOn: [], run: `LXD: create ${l.type} ${l.instance} from image ${l.image} with config ${JSON.stringify(l.config)} and devices ${JSON.stringify(instance.devices)}, push the SSH keys, start it and wait for sshd` });
            reachable.push(step);
            return l.user;
        },
    });
    const command = asRoot(user, "bash -s");
    const discover = stepResourceName(name, "discover");
    steps.push({ name: discover, component: "GpuHost", dependsOn: reachable, run: `${command} (stdin: host/${DISCOVER_SCRIPT}, sha256 ${sha256Text(script)})` });
    steps.push({ name: stepResourceName(name, "inventory"), component: "GpuHost", dependsOn: [discover], run: "compare the discovered inventory with the declared one (in the program)" });
    return { user, discover: { command, script }, lxd, steps, files: lxd?.files ?? [] };
}
