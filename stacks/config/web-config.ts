/**
 * Validates `gpu-workers:web` and what ties it to the hosts: the release it falls back to,
 * names and ports no host may share, and how each worker reaches the TSA. Every problem is
 * reported with its path.
 */
import { isPlainObject, mergeSettings, onTransport } from "../../components/program";
import { covered, Layer } from "./layer";
import { ParsedHost, wholeHost } from "./host-config";
import { BUILTIN_DEFAULTS, HostConfig, SshTransport } from "./schema";
import { WebConfig, webSchema } from "./web-schema";
import { issuesOf } from "./issues";

/** The stack's defaults for the release (`defaults.concourse.version` and `binary`). */
export interface ReleaseDefaults {
    version: string;
    binary?: unknown;
}

/** The release the stack's defaults give (the built-in one where they give none): the web's, unless it names its own. */
export function releaseDefaults(defaults: Layer): ReleaseDefaults {
    return mergeSettings(BUILTIN_DEFAULTS.concourse, defaults.settings.concourse) as ReleaseDefaults;
}

export function parseWeb(raw: unknown, release: ReleaseDefaults): { web?: WebConfig; problems: string[] } {
    if (!isPlainObject(raw)) return { problems: ["web: expected an object with name, transport and the web's settings"] };
    const withRelease = { ...raw, version: raw.version ?? release.version, binary: raw.binary ?? release.binary };
    const parsed = webSchema.safeParse(withRelease, { reportInput: true });
    if (!parsed.success) return { problems: issuesOf(parsed.error, "web") };
    if (parsed.data.binary === undefined) return { problems: ["web.binary: required (give {url, sha256} or {path} here or in defaults.concourse.binary)"] };
    return { web: parsed.data, problems: [] };
}

function serverOf(lxd: { server: { socket?: string; url?: string } }): string {
    return lxd.server.url ?? lxd.server.socket ?? "local";
}

/** Where the TSA is published when the web is an LXD instance: on its server, at sshAddress. */
function publishedTsa(web: WebConfig): { server: string; address: string; port: number } | undefined {
    return onTransport<SshTransport, NonNullable<WebConfig["transport"]["lxd"]>, ReturnType<typeof publishedTsa>>(web.transport, {
        ssh: () => undefined,
        lxd: (lxd) => (lxd.publish.tsa === undefined ? undefined : { server: serverOf(lxd), address: lxd.sshAddress, port: lxd.publish.tsa }),
    });
}

const LOOPBACK = /^(127\.|::1$|localhost$)/;

/** A host as parsed, with the setting paths already reported as bad (their stand-ins must not cause more problems). */
export interface CheckedHost {
    config?: HostConfig;
    /** Whether a path is at or under a setting already reported. */
    reported: (path: string) => boolean;
}

/** The hosts as the web's checks see them: whole when they parsed whole (shared boards are no workers; their workers take the web's TSA like any other). */
export function checkedHosts(hosts: ParsedHost[]): CheckedHost[] {
    return hosts.map((h) => ({ config: wholeHost(h), reported: (path: string) => covered(path, h.reported) }));
}

const SET_IT = "set it under defaults or on this host, or declare gpu-workers:web";

/** Problems between the web and the hosts: names, ports on one LXD server, reaching the TSA. */
export function webHostProblems(web: WebConfig | undefined, hosts: CheckedHost[]): string[] {
    const problems: string[] = [];
    hosts.forEach(({ config: host, reported }, i) => {
        if (!host?.concourse.binary) return;
        if (!web) {
            if (!host.concourse.tsaHost && !reported("concourse.tsaHost"))
                problems.push(`hosts[${i}].concourse.tsaHost: required to run the worker (the TSA's address as the worker reaches it) — ${SET_IT}`);
            if (!host.concourse.tsaPublicKey && !reported("concourse.tsaPublicKey"))
                problems.push(`hosts[${i}].concourse.tsaPublicKey: required to run the worker (the TSA's host key) — ${SET_IT}`);
            return;
        }
        if (host.name === web.name) problems.push(`hosts[${i}].name: ${host.name} is the web's name too`);
        if (web.renamedFrom !== undefined && web.renamedFrom === host.name)
            problems.push(`web.renamedFrom: ${host.name} is the name of hosts[${i}]; a web renamed from it must be gone from the stack`);
        if (host.renamedFrom !== undefined && host.renamedFrom === web.name) problems.push(`hosts[${i}].renamedFrom: ${web.name} is the web's name`);
        const tsa = publishedTsa(web);
        if (host.concourse.tsaHost) return;
        if (web.transport.ssh) return;
        if (!tsa) {
            problems.push(
                `hosts[${i}].concourse.tsaHost: required: the web publishes no TSA port (set web.transport.lxd.publish.tsa, or give the TSA's address here)`,
            );
        } else if ((host.transport.ssh || host.transport.lxd?.type === "virtual-machine") && LOOPBACK.test(tsa.address)) {
            const what = host.transport.ssh ? "this SSH host" : "a virtual machine (reached only through NAT)";
            problems.push(
                `hosts[${i}].concourse.tsaHost: required: the web's TSA is published on its LXD server's ${tsa.address}, which ${what} cannot reach; give the address it reaches the TSA on`,
            );
        }
    });
    if (web?.transport.lxd) {
        const lxd = web.transport.lxd;
        const taken = new Map<number, string>([[lxd.sshPort, "web.transport.lxd.sshPort"]]);
        for (const [what, p] of Object.entries(lxd.publish) as [string, number | undefined][]) {
            if (p === undefined) continue;
            if (taken.has(p)) problems.push(`web.transport.lxd.publish.${what}: ${p} is already used by ${taken.get(p)}`);
            else taken.set(p, `web.transport.lxd.publish.${what}`);
        }
        hosts.forEach(({ config: host }, i) => {
            const other = host?.transport.lxd;
            if (!other || serverOf(other) !== serverOf(lxd) || other.sshAddress !== lxd.sshAddress) return;
            if (taken.has(other.sshPort))
                problems.push(`hosts[${i}].transport.lxd.sshPort: ${other.sshPort} is already used by ${taken.get(other.sshPort)} on the same LXD server`);
            if (other.instance === lxd.instance) problems.push(`hosts[${i}].transport.lxd.instance: ${other.instance} is the web's instance too`);
        });
    }
    return problems;
}
