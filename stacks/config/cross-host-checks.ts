/**
 * The checks across the hosts of the stack: names, machines, renames and LXD ports used once
 * (each host's GPU plan: stacks/checks/).
 */
import type { ParsedHost } from "./host-config";

/** Checks across hosts, on whatever parsed (a host with other problems included). */
export function crossHostProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const seen = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        if (!entry) return;
        const first = seen.get(entry.name);
        if (first !== undefined) problems.push(`hosts[${i}].name: ${entry.name} is already used by hosts[${first}]`);
        else seen.set(entry.name, i);
    });
    problems.push(...sameMachineProblems(hosts), ...renameProblems(hosts));
    const ports = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        const lxd = entry?.transport.lxd;
        if (!lxd) return;
        const key = `${lxd.server.socket ?? lxd.server.url ?? "local"} ${lxd.sshAddress}:${lxd.sshPort}`;
        const first = ports.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].transport.lxd.sshPort: ${lxd.sshPort} is already used by hosts[${first}] on the same LXD server`);
        else ports.set(key, i);
    });
    return problems;
}

/**
 * Two hosts of the stack on one machine (the same SSH address and port, or the same LXD instance)
 * would each write the other's worker over, and records on the host would keep either's delete
 * from undoing anything: refused before anything runs. (The web may share a worker's machine.)
 */
function sameMachineProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const seen = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        if (!entry) return;
        const { ssh, lxd } = entry.transport;
        const [key, what] = ssh
            ? [`ssh ${ssh.host.toLowerCase()}:${ssh.port}`, `transport.ssh.host: ${ssh.host}:${ssh.port}`]
            : [`lxd ${lxd.server.url ?? lxd.server.socket ?? "local"} ${lxd.instance}`, `transport.lxd.instance: ${lxd.instance}`];
        const first = seen.get(key);
        if (first !== undefined) problems.push(`hosts[${i}].${what} is the machine of hosts[${first}] too: one machine is one host of the stack`);
        else seen.set(key, i);
    });
    return problems;
}

/** A rename names a host that is gone from the stack (not this one's own name, nor another's now). */
function renameProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const names = new Map(hosts.flatMap(({ entry }, i) => (entry ? [[entry.name, i] as const] : [])));
    const claimed = new Map<string, number>();
    hosts.forEach(({ entry }, i) => {
        const old = entry?.renamedFrom;
        if (!old) return;
        const at = names.get(old);
        if (at === i) problems.push(`hosts[${i}].renamedFrom: ${old} is this host's name already (drop renamedFrom once the renamed stack is up)`);
        else if (at !== undefined)
            problems.push(`hosts[${i}].renamedFrom: ${old} is the name of hosts[${at}]; a host renamed from it must be gone from the stack`);
        const first = claimed.get(old);
        if (first !== undefined) problems.push(`hosts[${i}].renamedFrom: hosts[${first}] was renamed from ${old} too`);
        else claimed.set(old, i);
    });
    return problems;
}
