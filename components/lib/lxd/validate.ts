/**
 * Checks an LXD instance spec before anything is sent to LXD, so that preview already shows
 * what is wrong, named by instance and device. Pure: no I/O, no Pulumi import.
 * LXD stays the final judge (it validates again); this catches mistakes early and clearly.
 */
import { lxdConfigKeyProblem } from "./config-keys";
import type { LxdDevice, LxdInstanceSpec } from "./types";

/** The config keys LXD reads cloud-init user-data from (the second is the older name). */
export const USER_DATA_KEYS = ["cloud-init.user-data", "user.user-data"];

/** What Pulumi passes for a value not known yet during preview; such values are not checked. */
export const PULUMI_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export class LxdValidationError extends Error {
    constructor(public readonly problems: string[]) {
        super(problems.join("\n"));
        this.name = "LxdValidationError";
    }
}

/** Every device type LXD knows; anything else is refused up front. */
export const LXD_DEVICE_TYPES = ["none", "nic", "disk", "unix-char", "unix-block", "usb", "gpu", "infiniband", "proxy", "unix-hotplug", "tpm", "pci"] as const;

const GPU_COMMON_KEYS = ["type", "gputype", "vendorid", "productid", "id", "pci"];
const GPU_KEYS: Record<string, string[]> = {
    physical: [...GPU_COMMON_KEYS, "uid", "gid", "mode"],
    mig: [...GPU_COMMON_KEYS, "mig.uuid", "mig.gi", "mig.ci"],
    mdev: [...GPU_COMMON_KEYS, "mdev"],
    sriov: [...GPU_COMMON_KEYS],
};
const UNIX_KEYS = ["type", "source", "path", "major", "minor", "uid", "gid", "mode", "required"];
const DISK_KEYS = [
    "type",
    "path",
    "source",
    "pool",
    "readonly",
    "shift",
    "propagation",
    "recursive",
    "required",
    "size",
    "size.state",
    "limits.read",
    "limits.write",
    "limits.max",
    "raw.mount.options",
    "ceph.cluster_name",
    "ceph.user_name",
    "boot.priority",
    "io.cache",
    "io.bus",
];
const PROXY_KEYS = ["type", "listen", "connect", "bind", "uid", "gid", "mode", "nat", "proxy_protocol", "security.uid", "security.gid"];

/** `vendor.tld/class=name`, as CDI names a device (nvidia.com/gpu=0, nvidia.com/gpu=all, amd.com/gpu=0). */
const CDI_ID = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+\/[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?=[A-Za-z0-9_.:-]+$/;
const DRM_CARD_ID = /^[0-9]+$/;
const PCI_ADDRESS = /^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/;
const PCI_ID = /^[0-9a-fA-F]{4}$/;
const MIG_UUID = /^(MIG-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const OCTAL_MODE = /^0?[0-7]{3}$/;
const UINT = /^[0-9]+$/;
const BOOL = /^(true|false)$/;
/** The instance names LXD takes. */
export const LXD_INSTANCE_NAME = /^[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const PORTS = /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/;
const HOST = /^([0-9]{1,3}(\.[0-9]{1,3}){3}|\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$/;

export function isCdiId(id: string): boolean {
    return CDI_ID.test(id);
}

function known(value: unknown): boolean {
    return value !== undefined && value !== PULUMI_UNKNOWN;
}

function unknownKeys(device: LxdDevice, allowed: string[]): string[] {
    return Object.keys(device).filter((k) => !allowed.includes(k));
}

/** A mode that lets every user open the node defeats group-based access. */
function worldAccessible(mode: string): boolean {
    return (parseInt(mode, 8) & 0o007) !== 0;
}

function modeProblems(device: LxdDevice): string[] {
    const mode = device.mode;
    if (!known(mode)) return [];
    if (!OCTAL_MODE.test(mode)) return [`mode "${mode}" is not an octal mode such as 0660`];
    if (worldAccessible(mode)) return [`mode "${mode}" opens the device to everyone; grant access with gid and mode 0660`];
    return [];
}

function idProblems(device: LxdDevice, keys: string[]): string[] {
    return keys.filter((k) => known(device[k]) && !UINT.test(device[k])).map((k) => `${k} "${device[k]}" is not a non-negative integer`);
}

function boolProblems(device: LxdDevice, keys: string[]): string[] {
    return keys.filter((k) => known(device[k]) && !BOOL.test(device[k])).map((k) => `${k} "${device[k]}" must be true or false`);
}

function gpuProblems(d: LxdDevice): string[] {
    const problems: string[] = [];
    const gputype = d.gputype ?? "physical";
    if (!known(gputype)) return problems;
    const allowed = GPU_KEYS[gputype];
    if (!allowed) return [`gputype "${gputype}" is not one of ${Object.keys(GPU_KEYS).join(", ")}`];
    const extra = unknownKeys(d, allowed);
    if (extra.length > 0)
        problems.push(
            `${extra.join(", ")} ${extra.length > 1 ? "are not keys" : "is not a key"} of a ${gputype} gpu device (allowed: ${allowed.filter((k) => k !== "type").join(", ")})`,
        );
    if (known(d.id)) {
        const cdi = !DRM_CARD_ID.test(d.id);
        if (cdi && !isCdiId(d.id)) problems.push(`id "${d.id}" is not a CDI id (expected vendor.com/class=name)`);
        else if (cdi && gputype !== "physical") problems.push(`id "${d.id}" is a CDI id, which only gputype physical takes`);
    }
    if (known(d.pci) && !PCI_ADDRESS.test(d.pci)) problems.push(`pci "${d.pci}" is not a PCI address such as 0000:18:00.0`);
    for (const k of ["vendorid", "productid"]) {
        if (known(d[k]) && !PCI_ID.test(d[k])) problems.push(`${k} "${d[k]}" is not a 4-digit hex PCI id such as 10de`);
    }
    if (gputype === "mig") {
        const hasUuid = d["mig.uuid"] !== undefined;
        const hasGiCi = d["mig.gi"] !== undefined && d["mig.ci"] !== undefined;
        if (!hasUuid && !hasGiCi) problems.push("a mig gpu needs mig.uuid, or both mig.gi and mig.ci");
        if (hasUuid && (d["mig.gi"] !== undefined || d["mig.ci"] !== undefined)) problems.push("give mig.uuid or mig.gi+mig.ci, not both");
        if (known(d["mig.uuid"]) && !MIG_UUID.test(d["mig.uuid"])) problems.push(`mig.uuid "${d["mig.uuid"]}" is not a MIG UUID such as MIG-2f4e8d3c-...`);
        problems.push(...idProblems(d, ["mig.gi", "mig.ci"]));
    }
    if (gputype === "mdev" && d.mdev === undefined) problems.push("an mdev gpu needs mdev (the mediated device profile)");
    problems.push(...idProblems(d, ["uid", "gid"]), ...modeProblems(d));
    return problems;
}

function unixProblems(d: LxdDevice): string[] {
    const problems: string[] = [];
    const extra = unknownKeys(d, UNIX_KEYS);
    if (extra.length > 0) problems.push(`unknown key${extra.length > 1 ? "s" : ""} ${extra.join(", ")} (allowed: ${UNIX_KEYS.slice(1).join(", ")})`);
    if (d.source === undefined && d.path === undefined) problems.push("needs source (the host node) or path");
    for (const k of ["source", "path"]) {
        if (known(d[k]) && !d[k].startsWith("/")) problems.push(`${k} "${d[k]}" is not an absolute path`);
    }
    // LXD takes the host node from source, or from path when source is absent; it must be in /dev.
    const hostNode = d.source ?? d.path;
    if (known(hostNode) && hostNode.startsWith("/") && !hostNode.startsWith("/dev/"))
        problems.push(`${d.source !== undefined ? "source" : "path"} "${hostNode}" is not a device node under /dev (LXD takes host nodes from /dev only)`);
    problems.push(...idProblems(d, ["uid", "gid", "major", "minor"]), ...boolProblems(d, ["required"]), ...modeProblems(d));
    return problems;
}

function diskProblems(d: LxdDevice): string[] {
    const problems: string[] = [];
    const extra = unknownKeys(d, DISK_KEYS);
    if (extra.length > 0) problems.push(`unknown key${extra.length > 1 ? "s" : ""} ${extra.join(", ")} (allowed: ${DISK_KEYS.slice(1).join(", ")})`);
    if (d.path === undefined) problems.push("needs path (where it appears inside the instance)");
    else if (known(d.path) && !d.path.startsWith("/")) problems.push(`path "${d.path}" is not an absolute path`);
    if (d.source === undefined && d.pool === undefined) problems.push("needs source (a host folder) or pool");
    problems.push(...boolProblems(d, ["readonly", "shift", "recursive", "required"]));
    return problems;
}

function proxyAddressProblem(key: string, value: string): string | undefined {
    if (!known(value)) return undefined;
    const unix = /^unix:(@.+|\/.+)$/.exec(value);
    if (unix) return undefined;
    const m = /^(tcp|udp):(.+):([^:\]]+)$/.exec(value);
    if (!m || !HOST.test(m[2]) || !PORTS.test(m[3])) {
        return `${key} "${value}" is not tcp:<address>:<port>, udp:<address>:<port> or unix:<path> (e.g. tcp:127.0.0.1:2201)`;
    }
    const ports = m[3].split(/[,-]/).map(Number);
    if (ports.some((p) => p < 1 || p > 65535)) return `${key} "${value}" has a port outside 1-65535`;
    return undefined;
}

/** LXD's rules for a proxy in NAT mode (lxd/device/proxy.go): host-bound, tcp or udp on both sides, one IP family, no wildcard listen. */
function natProblems(d: LxdDevice): string[] {
    if (!known(d.listen) || !known(d.connect)) return [];
    const problems: string[] = [];
    if (known(d.bind) && d.bind !== "host") problems.push("a NAT proxy must be bound to the host (bind=host)");
    const side = (v: string) => /^(tcp|udp):(.+):[^:\]]+$/.exec(v);
    const listen = side(d.listen);
    const connect = side(d.connect);
    if (!listen || !connect || listen[1] !== connect[1]) {
        problems.push(`a NAT proxy forwards tcp to tcp or udp to udp (listen "${d.listen}", connect "${d.connect}")`);
        return problems;
    }
    const ip = (host: string) => host.replace(/^\[|\]$/g, "");
    if (["0.0.0.0", "::"].includes(ip(listen[2])))
        problems.push(`listen "${d.listen}": a NAT proxy cannot listen on a wildcard address (give the host's own address)`);
    const v6 = (host: string) => ip(host).includes(":");
    if (v6(listen[2]) !== v6(connect[2])) problems.push("a NAT proxy cannot mix IPv4 and IPv6 between listen and connect");
    if (!/^[0-9.]+$|:/.test(ip(connect[2]))) problems.push(`connect "${d.connect}": a NAT proxy connects to the instance's static IP address, not a name`);
    return problems;
}

function proxyProblems(d: LxdDevice, type: string | undefined): string[] {
    const problems: string[] = [];
    const nat = d.nat === "true";
    if (type === "virtual-machine" && d.nat !== PULUMI_UNKNOWN && !nat)
        problems.push("a virtual machine's proxy must use NAT (nat=true), the only proxy mode LXD has for VMs; it needs a nic with a static ipv4.address");
    const extra = unknownKeys(d, PROXY_KEYS);
    if (extra.length > 0) problems.push(`unknown key${extra.length > 1 ? "s" : ""} ${extra.join(", ")} (allowed: ${PROXY_KEYS.slice(1).join(", ")})`);
    for (const k of ["listen", "connect"]) {
        if (d[k] === undefined) problems.push(`needs ${k}`);
        else {
            const p = proxyAddressProblem(k, d[k]);
            if (p) problems.push(p);
        }
    }
    if (known(d.bind) && !["host", "instance"].includes(d.bind)) problems.push(`bind "${d.bind}" must be host or instance`);
    problems.push(...boolProblems(d, ["nat", "proxy_protocol"]));
    if (nat && problems.length === 0) problems.push(...natProblems(d));
    return problems;
}

/** Problems of one device, without the instance prefix ("device gpu0: ..."); `type` is the instance's type where known. */
export function lxdDeviceProblems(deviceName: string, device: unknown, type?: string): string[] {
    const at = `device ${deviceName}`;
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(deviceName)) return [`${at}: name must be letters, digits, _ . - (no / or spaces)`];
    if (device === PULUMI_UNKNOWN) return [];
    if (typeof device !== "object" || device === null || Array.isArray(device)) return [`${at}: expected a map of keys to values`];
    const d = device as LxdDevice;
    const notStrings = Object.entries(d)
        .filter(([, v]) => typeof v !== "string")
        .map(([k]) => k);
    if (notStrings.length > 0) return [`${at}: ${notStrings.join(", ")} must be strings (LXD device values are strings)`];
    if (!known(d.type)) return d.type === undefined ? [`${at}: needs a type (one of ${LXD_DEVICE_TYPES.join(", ")})`] : [];
    if (!(LXD_DEVICE_TYPES as readonly string[]).includes(d.type))
        return [`${at}: unknown device type "${d.type}" (expected one of ${LXD_DEVICE_TYPES.join(", ")})`];
    let problems: string[] = [];
    switch (d.type) {
        case "gpu":
            problems = gpuProblems(d);
            break;
        case "unix-char":
        case "unix-block":
            problems = unixProblems(d);
            break;
        case "disk":
            problems = diskProblems(d);
            break;
        case "proxy":
            problems = proxyProblems(d, type);
            break;
        case "nic":
            if (d.nictype === undefined && d.network === undefined) problems = ["a nic needs nictype or network"];
            break;
        case "none":
            if (Object.keys(d).length > 1) problems = ["a none device (it hides a profile's device of that name) takes no other keys"];
            break;
        default:
            break; // LXD checks the rest
    }
    return problems.map((p) => `${at}: ${p}`);
}

function serverProblems(server: unknown): string[] {
    if (!known(server)) return []; // not known until up (a preview of a new stack)
    if (typeof server !== "object" || server === null) return ["server: expected {socket} or {url, clientCert, clientKey}"];
    const s = server as Record<string, unknown>;
    const problems: string[] = [];
    if (s.socket !== undefined && s.url !== undefined) problems.push("server: give either socket or url, not both");
    if (known(s.socket) && (typeof s.socket !== "string" || !s.socket.startsWith("/")))
        problems.push(`server: socket "${String(s.socket)}" is not an absolute path`);
    if (known(s.url)) {
        if (typeof s.url !== "string" || !/^https:\/\/[^/\s]+\/?$/.test(s.url)) problems.push(`server: url "${String(s.url)}" is not https://host:port`);
        if (s.clientCert === undefined || s.clientKey === undefined)
            problems.push("server: an https url needs clientCert and clientKey (a certificate the server trusts)");
    } else if (s.url === undefined && (s.clientCert !== undefined || s.clientKey !== undefined || s.serverCert !== undefined)) {
        problems.push("server: clientCert, clientKey and serverCert are for an https url only");
    }
    for (const k of ["clientCert", "serverCert"]) {
        if (known(s[k]) && (typeof s[k] !== "string" || !s[k].includes("-----BEGIN CERTIFICATE-----"))) problems.push(`server: ${k} is not a PEM certificate`);
    }
    if (known(s.clientKey) && (typeof s.clientKey !== "string" || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(s.clientKey)))
        problems.push("server: clientKey is not a PEM private key");
    return problems;
}

function fileProblems(files: unknown): string[] {
    if (!known(files)) return [];
    if (!Array.isArray(files)) return ["files: expected a list of {path, content, mode?, uid?, gid?}"];
    const problems: string[] = [];
    files.forEach((f, i) => {
        if (f === PULUMI_UNKNOWN) return;
        const at = `files[${i}]`;
        if (typeof f !== "object" || f === null) {
            problems.push(`${at}: expected {path, content}`);
            return;
        }
        const file = f as Record<string, unknown>;
        if (known(file.path) && (typeof file.path !== "string" || !file.path.startsWith("/") || file.path.split("/").includes(".."))) {
            problems.push(`${at}: path "${String(file.path)}" is not an absolute path without ..`);
        }
        if (file.path === undefined) problems.push(`${at}: needs path`);
        if (file.content === undefined) problems.push(`${at}: needs content`);
        else if (known(file.content) && typeof file.content !== "string") problems.push(`${at}: content must be a string`);
        if (known(file.mode) && (typeof file.mode !== "string" || !/^0?[0-7]{3,4}$/.test(file.mode)))
            problems.push(`${at}: mode "${String(file.mode)}" is not an octal mode such as 0600`);
        for (const k of ["uid", "gid"]) {
            if (known(file[k]) && !(Number.isInteger(file[k]) && (file[k] as number) >= 0)) problems.push(`${at}: ${k} must be a non-negative integer`);
        }
    });
    return problems;
}

/** Every problem of an instance spec, each prefixed "lxd instance <name>: ". Empty when valid. */
export function lxdInstanceProblems(spec: Partial<LxdInstanceSpec>): string[] {
    const name = typeof spec.name === "string" ? spec.name : "(unnamed)";
    const problems: string[] = [];
    if (spec.name === undefined) problems.push("needs a name");
    else if (known(spec.name) && (typeof spec.name !== "string" || !LXD_INSTANCE_NAME.test(spec.name))) {
        problems.push(`name "${String(spec.name)}" must be 1-63 letters, digits and dashes, start with a letter and not end with a dash`);
    }
    if (known(spec.image)) {
        if (typeof spec.image !== "string" || spec.image.trim() === "") problems.push("image is empty (expected an image alias or fingerprint on the server)");
        else if (/\s/.test(spec.image)) problems.push(`image "${spec.image}" contains spaces`);
        else if (spec.image.includes(":"))
            problems.push(`image "${spec.image}" names a remote; import the image on the server and give its alias or fingerprint`);
    } else if (spec.image === undefined) problems.push("image is empty (expected an image alias or fingerprint on the server)");
    if (known(spec.type) && spec.type !== "container" && spec.type !== "virtual-machine")
        problems.push(`type "${String(spec.type)}" must be container or virtual-machine`);
    if (known(spec.profiles)) {
        if (!Array.isArray(spec.profiles)) problems.push("profiles: expected a list of profile names");
        else
            spec.profiles.forEach((p, i) => {
                if (known(p) && (typeof p !== "string" || !/^[^/\s]+$/.test(p))) problems.push(`profiles[${i}]: "${String(p)}" is not a profile name`);
            });
    }
    if (known(spec.config)) {
        if (typeof spec.config !== "object" || spec.config === null) problems.push("config: expected a map of config keys to strings");
        else
            for (const [k, v] of Object.entries(spec.config)) {
                const problem = lxdConfigKeyProblem(k);
                if (problem) problems.push(`config: ${problem}`);
                if (known(v) && typeof v !== "string") problems.push(`config: ${k} must be a string (LXD config values are strings)`);
            }
    }
    if (known(spec.devices)) {
        if (typeof spec.devices !== "object" || spec.devices === null) problems.push("devices: expected a map of device names to devices");
        else
            for (const [deviceName, device] of Object.entries(spec.devices))
                problems.push(...lxdDeviceProblems(deviceName, device, known(spec.type) ? spec.type : undefined));
    }
    if (known(spec.userData)) {
        if (typeof spec.userData !== "string" || !/^#(cloud-config|!)/.test(spec.userData))
            problems.push("userData: expected cloud-init user-data (a document starting #cloud-config, or a script starting #!)");
        if (known(spec.config) && spec.config && USER_DATA_KEYS.some((k) => k in spec.config!))
            problems.push(
                `config: ${USER_DATA_KEYS.filter((k) => k in spec.config!).join(", ")} and userData both give the user-data; give it once, as userData (kept secret)`,
            );
    }
    problems.push(...fileProblems(spec.files));
    if (spec.type === "virtual-machine" && Array.isArray(spec.files) && spec.files.length > 0) {
        problems.push(
            "files: a virtual machine cannot take files before its first start (its agent is not running yet); give them through the image or cloud-init",
        );
    }
    if (known(spec.waitFor)) {
        const w = spec.waitFor as unknown as Record<string, unknown>;
        if (!Array.isArray(w.command) || w.command.length === 0 || w.command.some((c) => typeof c !== "string"))
            problems.push("waitFor: command must be a non-empty list of strings");
        if (w.timeoutSeconds !== undefined && !(typeof w.timeoutSeconds === "number" && w.timeoutSeconds > 0))
            problems.push("waitFor: timeoutSeconds must be a positive number");
    }
    problems.push(...serverProblems(spec.server));
    return problems.map((p) => `lxd instance ${name}: ${p}`);
}

/** Throws LxdValidationError listing every problem of the spec. */
export function validateLxdInstance(spec: Partial<LxdInstanceSpec>): void {
    const problems = lxdInstanceProblems(spec);
    if (problems.length > 0) throw new LxdValidationError(problems);
}
