/**
 * The one plan of a Concourse web host: reaching it (for an LXD instance, with the web and TSA
 * ports published on the LXD server), and the web's files and steps. ConcourseWeb builds its
 * resources from it and the offline render writes it out. Pure.
 */
import { z } from "zod";
import { webSettingsSchema } from "../settings/web-settings";
import { fileResourceName, stepResourceName } from "../host/steps";
import { onTransport, Transport } from "../host/transport";
import { lxdProxyDevice } from "../lxd/devices";
import type { LxdDevices } from "../lxd/types";
import { hostScriptPath } from "../host/scripts";
import { admissionPrefix, ConcourseWebSettings, renderConcourseWeb, renderWorkerAdmission, WebDatabase, webKeysTarget } from "../render/concourse-web";
import { AccessShape, HostAccessPlan, planHostAccess, PlannedStep } from "./host-access";
import { componentSteps, PlannedFile } from "./host-plan";
import { placeOnce } from "./place-files";
import type { lxdWebTransportSchema } from "../settings/transport-schema";
import type { SshHostShape } from "../settings/worker-spec";

/** An SSH web host: its address, where it is known as plain text (for the default external URL and TSA). */
export interface SshWebShape extends SshHostShape {
    host?: string;
}

export interface WebSpec {
    /** The web's name: every resource of its host is named from it. */
    name: string;
    transport: Transport<SshWebShape, z.output<typeof lxdWebTransportSchema>>;
    version: string;
    binary: ConcourseWebSettings["binary"];
    settings: z.infer<typeof webSettingsSchema>;
    postgres: WebDatabase;
    /** The web has a certificate and key (their contents come at `up`): it serves HTTPS on settings.tlsPort. */
    tls: boolean;
}

export interface WebPlan {
    name: string;
    transport: "ssh" | "lxd";
    access: HostAccessPlan;
    settings: ConcourseWebSettings;
    /** How a worker reaches the TSA, where the plan knows: the SSH host, or an LXD instance's published port on its server. */
    tsaForWorkers?: { host: string; port: number };
    steps: PlannedStep[];
    files: PlannedFile[];
    /** What the preview, the up and the offline render say loudly (a web reachable from the network over plain HTTP). */
    warnings: string[];
}

/** Proxy devices that publish the web's ports on the LXD server (the HTTPS port when the web has a certificate). */
function publishedPorts(lxd: z.output<typeof lxdWebTransportSchema>, web: { port: number; tsaPort: number }): LxdDevices {
    const devices: LxdDevices = {};
    if (lxd.publish.web !== undefined)
        devices.web = lxdProxyDevice({ address: lxd.sshAddress, port: lxd.publish.web }, { address: "127.0.0.1", port: web.port }, "host");
    if (lxd.publish.tsa !== undefined)
        devices.tsa = lxdProxyDevice({ address: lxd.sshAddress, port: lxd.publish.tsa }, { address: "127.0.0.1", port: web.tsaPort }, "host");
    return devices;
}

function urlHost(address: string): string {
    return address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
}

const LOOPBACK = /^(127\.|::1$|localhost$)/;

/** The loud warning for a web that the network reaches over plain HTTP (at `address`), or none. */
function plainHttpWarning(spec: WebSpec, address: string, externalUrl: string): string[] {
    if (spec.tls || LOOPBACK.test(address)) return [];
    return [
        `web ${spec.name} serves plain HTTP on ${address} (${externalUrl}): the main team's password, which every pulumi up's registration check ` +
            "and every fly login send, crosses the network in clear. Give the web a certificate (web.tls: certificateSecret and keySecret), " +
            "or keep it on loopback (bindIp: 127.0.0.1)",
    ];
}

export function planWebHost(spec: WebSpec): WebPlan {
    const s = spec.settings;
    const scheme = spec.tls ? "https" : "http";
    // With a certificate the users' port is the HTTPS one; the plain port stays for the API on the host.
    const usersPort = spec.tls ? s.tlsPort : s.port;
    const derived = onTransport(spec.transport, {
        ssh: (ssh) => {
            const bindIp = s.bindIp ?? "0.0.0.0";
            return {
                bindIp,
                exposed: bindIp,
                url: ssh.host !== undefined ? `${scheme}://${urlHost(ssh.host)}:${usersPort}` : undefined,
                tsa: ssh.host !== undefined ? { host: ssh.host, port: s.tsaPort } : undefined,
            };
        },
        lxd: (lxd) => {
            const bindIp = s.bindIp ?? "127.0.0.1";
            return {
                bindIp,
                // Published on the LXD server, the web is as reachable as that address.
                exposed: lxd.publish.web !== undefined ? lxd.sshAddress : bindIp,
                url: lxd.publish.web !== undefined ? `${scheme}://${urlHost(lxd.sshAddress)}:${lxd.publish.web}` : undefined,
                tsa: lxd.publish.tsa !== undefined ? { host: lxd.sshAddress, port: lxd.publish.tsa } : undefined,
            };
        },
    });
    const externalUrl = s.externalUrl ?? derived.url;
    if (externalUrl === undefined)
        throw new Error(
            `web ${spec.name}: externalUrl is required (the web's address is not known as text: give externalUrl, or publish.web for an LXD instance)`,
        );
    if (spec.tls && !externalUrl.startsWith("https://"))
        throw new Error(
            `web ${spec.name}: externalUrl must be an https:// URL when the web has a certificate (Concourse refuses TLS otherwise), not ${externalUrl}`,
        );
    const settings: ConcourseWebSettings = {
        version: spec.version,
        binary: spec.binary,
        externalUrl,
        bindIp: derived.bindIp,
        port: s.port,
        tsaPort: s.tsaPort,
        postgres: spec.postgres,
        mainTeamUser: s.mainTeamUser,
        keepDatabase: s.keepDatabase,
        ...(spec.tls ? { tls: { port: s.tlsPort } } : {}),
    };
    const access = planHostAccess(
        spec.name,
        "ConcourseWeb",
        onTransport<SshWebShape, z.output<typeof lxdWebTransportSchema>, AccessShape>(spec.transport, {
            ssh: (ssh) => ({ ssh: { user: ssh.user } }),
            lxd: ({ publish, ...lxd }) => ({ lxd: { ...lxd, devices: publishedPorts({ ...lxd, publish }, { port: usersPort, tsaPort: s.tsaPort }) } }),
        }),
    );
    const rendered = renderConcourseWeb(settings);
    const { placed } = placeOnce(spec.name, [
        { owner: "ConcourseWeb access", files: access.files },
        { owner: "ConcourseWeb", files: rendered.files },
    ]);
    const instance = stepResourceName(spec.name, "instance");
    return {
        name: spec.name,
        transport: spec.transport.ssh ? "ssh" : "lxd",
        access,
        settings,
        tsaForWorkers: derived.tsa,
        steps: [
            ...access.steps,
            ...componentSteps(
                spec.name,
                "ConcourseWeb",
                rendered,
                access.steps.map((st) => st.name),
            ),
        ],
        files: placed.map(({ owner, ...file }) => ({
            ...file,
            component: "ConcourseWeb",
            // The access files go in with the instance it creates, before the first start.
            resource: owner === "ConcourseWeb" ? fileResourceName(spec.name, file) : instance,
        })),
        warnings: plainHttpWarning(spec, derived.exposed, externalUrl),
    };
}

/**
 * What a worker places and runs on the web's host to be admitted (ConcourseWorker creates it,
 * named from its own component `component`; the web placed the script): the web's plan shows
 * it beside the web's own files and steps.
 */
export function planWorkerAdmission(web: WebPlan, component: string, worker: string): { files: PlannedFile[]; steps: PlannedStep[] } {
    const prefix = admissionPrefix(component);
    const rendered = renderWorkerAdmission(worker, webKeysTarget(web.settings));
    const script = hostScriptPath("concourse-web.sh");
    return {
        files: rendered.files.filter((f) => f.path !== script).map((f) => ({ ...f, component: "ConcourseWorker", resource: fileResourceName(prefix, f) })),
        steps: componentSteps(prefix, "ConcourseWorker", rendered, [stepResourceName(web.name, "concourse-web")]),
    };
}
