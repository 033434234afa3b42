/**
 * Validates `gpu-workers:kubernetes` and what ties it to the hosts: each node is a host of the
 * stack that is a worker on its own, a node of one cluster only, under a name no other node of
 * the cluster has; the nodes of a cluster agree on the wrapper's handler, and have Kata's
 * runtime where the cluster offers it. Every problem is reported with its path.
 */
import { isPlainObject, RUNTIME_CLASS_NAMES } from "../../components/program";
import { isBoard, ParsedHost } from "./host-config";
import { issuesOf } from "./issues";
import { KubernetesConfig, kubernetesSchema } from "./kubernetes-schema";
import type { Settings } from "./schema";

/** A host as the Kubernetes config sees it: its name and settings where they parsed, and whether it is a worker on its own. */
export interface NodeCandidate {
    name?: string;
    settings?: Settings;
    /** A shared board or a board's worker: not a node here (its GPUs are its partition's, planned with the board). */
    onBoard: boolean;
}

/** The hosts of the stack as candidates for nodes: their names as given (a host with other problems included). */
export function nodeCandidates(raw: unknown[], hosts: ParsedHost[]): NodeCandidate[] {
    return hosts.map((h, i) => {
        const entry = raw[i];
        return {
            name: isPlainObject(entry) && typeof entry.name === "string" ? entry.name : undefined,
            settings: h.settings,
            onBoard: h.boardWorker || isBoard(h.settings),
        };
    });
}

export function parseKubernetes(raw: unknown, hosts: NodeCandidate[]): { kubernetes?: KubernetesConfig; problems: string[] } {
    if (!isPlainObject(raw)) return { problems: ["kubernetes: expected an object with clusters: [...]"] };
    const parsed = kubernetesSchema.safeParse(raw, { reportInput: true });
    if (!parsed.success) return { problems: issuesOf(parsed.error, "kubernetes") };
    const problems: string[] = [];
    const clusterOf = new Map<string, string>();
    const clusterNames = new Set<string>();
    parsed.data.clusters.forEach((cluster, c) => {
        const at = `kubernetes.clusters[${c}]`;
        if (clusterNames.has(cluster.name)) problems.push(`${at}.name: ${cluster.name} is named twice`);
        clusterNames.add(cluster.name);
        const nodeNames = new Set<string>();
        const handlers = new Map<string, string>();
        cluster.nodes.forEach((node, n) => {
            const here = `${at}.nodes[${n}]`;
            const host = hosts.find((h) => h.name === node.host);
            if (!host) {
                problems.push(`${here}.host: ${node.host} is no host of gpu-workers:hosts`);
                return;
            }
            if (host.onBoard) {
                problems.push(`${here}.host: ${node.host} is a shared board or one of its workers, which cannot be a node here`);
                return;
            }
            const other = clusterOf.get(node.host);
            if (other !== undefined) problems.push(`${here}.host: ${node.host} is already a node of cluster ${other}`);
            clusterOf.set(node.host, cluster.name);
            const name = node.nodeName ?? node.host;
            if (nodeNames.has(name)) problems.push(`${here}.nodeName: ${name} is the name of another node of cluster ${cluster.name}`);
            nodeNames.add(name);
            if (!host.settings) return; // its own problems are reported with the host
            handlers.set(node.host, host.settings.containerd.runtimeName);
            if (cluster.runtimes.includes("kata-qemu-nvidia-gpu") && !host.settings.containerd.kata)
                problems.push(
                    `${here}.host: cluster ${cluster.name} offers kata-qemu-nvidia-gpu, but ${node.host} has no Kata runtime in containerd: set containerd.kata: true on it (or in defaults)`,
                );
        });
        if (cluster.runtimes.includes("wrapper") && new Set(handlers.values()).size > 1)
            problems.push(
                `${at}.nodes: one RuntimeClass (${RUNTIME_CLASS_NAMES.wrapper}) names one handler, but these nodes' containerd.runtimeName differ: ${[...handlers].map(([h, r]) => `${h} ${r}`).join(", ")}`,
            );
    });
    return problems.length > 0 ? { problems } : { kubernetes: parsed.data, problems };
}
