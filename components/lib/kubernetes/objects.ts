/**
 * The Kubernetes side of the GPU hosts, as plain objects: the RuntimeClasses of the runtimes the
 * nodes offer, each GPU node's labels (from the one GPU plan), NVIDIA's device plugin as a
 * DaemonSet on those nodes only, the Tenancy and GpuLease CRDs, the cluster's Tenancy, and per
 * tenant a Namespace and a CiliumNetworkPolicy that lets traffic only inside it. The component
 * (KubernetesGpuNodes) creates exactly these, and the offline render writes them as YAML. Pure.
 */
import type { GpuInventory } from "../gpu/inventory";
import { GpuSelection, migStrategy, planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { KATA_GPU_RUNTIME } from "../links/containerd/render";
import { CRD_API_VERSION, gpuLeaseCrd, tenancyCrd } from "./crds";
import type { KubeObject } from "./kube-object";
import { GPU_NODE_LABEL, gpuNodeLabels } from "./node-labels";

export type { KubeObject };

/** The runtimes a cluster can offer its pods: the runc wrapper (the worker's datasets and GPU environment) and Kata's GPU VMs. */
export const RUNTIME_OFFERS = ["wrapper", KATA_GPU_RUNTIME.handler] as const;
export type RuntimeOffer = (typeof RUNTIME_OFFERS)[number];

/** The RuntimeClass of each runtime: pods name it in `runtimeClassName`. */
export const RUNTIME_CLASS_NAMES: Readonly<Record<RuntimeOffer, string>> = { wrapper: "gpu-workers", [KATA_GPU_RUNTIME.handler]: KATA_GPU_RUNTIME.handler };

export const DEVICE_PLUGIN_NAME = "gpu-workers-device-plugin";
export const DEVICE_PLUGIN_NAMESPACE = "kube-system";
/** The CiliumNetworkPolicy in each tenant's namespace. */
export const TENANT_POLICY_NAME = "tenant-isolation";
export const TENANT_LABEL = "gpu-workers.dev/tenant";
const MANAGED_BY = { "app.kubernetes.io/managed-by": "gpu-workers" };

/** One GPU node: its Kubernetes name and the GPU plan's inputs (as the host's worker has them). */
export interface GpuNodeTerms {
    /** The Node's name in the cluster (the kubelet's `--hostname-override`, else the host name). */
    nodeName: string;
    /** The host's declared GPU inventory. */
    inventory: GpuInventory;
    /** The GPUs the node's pods get through the wrapper: "all" or indices. Default: "all". */
    selection?: GpuSelection;
    /** The driver pin ("preinstalled" or a version): a pinned version gives the driver label. Default: "preinstalled". */
    driverVersion?: string;
}

export interface TenantTerms {
    /** DNS label: the tenant's name and its namespace's. */
    name: string;
    /** GPUs the tenant may hold at once (GpuLeases); absent: no ceiling. */
    maxGpus?: number;
}

/** What a cluster is given: its GPU nodes, the runtimes they offer, the device plugin and the tenants. */
export interface ClusterTerms {
    /** The cluster's name in the stack: names its Tenancy. */
    name: string;
    nodes: GpuNodeTerms[];
    /** Runtimes every node offers (its containerd has their entries). */
    runtimes: RuntimeOffer[];
    /** The CRI handler of the wrapper's runtime on the nodes (containerd.runtimeName). */
    wrapperHandler: string;
    devicePlugin: {
        /** The device plugin's image, by tag or digest. */
        image: string;
        /** Wait for it to run on every GPU node during `up`. */
        awaitRollout: boolean;
    };
    tenants: TenantTerms[];
}

/** An object of the cluster's plan, with the keys of the objects it must come after. */
export interface PlannedObject {
    /** `Kind/name` or `Kind/namespace/name`: unique in the plan. */
    key: string;
    object: KubeObject;
    /** A Node's labels are applied to a Node the kubelet owns (server-side apply), never created or deleted. */
    patch?: true;
    dependsOn: string[];
}

export function objectKey(o: KubeObject): string {
    return [o.kind, o.metadata.namespace, o.metadata.name].filter((p) => p !== undefined).join("/");
}

function runtimeClass(offer: RuntimeOffer, wrapperHandler: string): KubeObject {
    return {
        apiVersion: "node.k8s.io/v1",
        kind: "RuntimeClass",
        metadata: { name: RUNTIME_CLASS_NAMES[offer], labels: { ...MANAGED_BY } },
        handler: offer === "wrapper" ? wrapperHandler : KATA_GPU_RUNTIME.handler,
        // Kata runs each pod in a VM: its fixed cost is the pod's too (kata-deploy's figures).
        ...(offer === "wrapper" ? {} : { overhead: { podFixed: { memory: "160Mi", cpu: "250m" } } }),
        // Only our GPU nodes have these handlers: the scheduler puts such pods nowhere else.
        scheduling: { nodeSelector: { [GPU_NODE_LABEL]: "true" } },
    };
}

/** The node's GPU plan, as its worker's (fabricmanager is the host's business, not the cluster's). */
function gpuPlanOf(node: GpuNodeTerms): WorkerGpuPlan {
    return planWorkerGpus(node.inventory, { selection: node.selection ?? "all", cdi: true, fabricManager: { mode: "off", partitions: [] }, extraTags: [] });
}

function nodeLabels(node: GpuNodeTerms): KubeObject {
    return { apiVersion: "v1", kind: "Node", metadata: { name: node.nodeName, labels: gpuNodeLabels(node.inventory, gpuPlanOf(node), node.driverVersion) } };
}

/** The MIG strategy the device plugin takes: the nodes' own where they agree, else mixed (which serves whole GPUs too). */
function clusterMigStrategy(nodes: GpuNodeTerms[]): string {
    const strategies = new Set(nodes.filter((n) => n.inventory.vendor === "nvidia").map((n) => migStrategy(gpuPlanOf(n).selected)));
    return strategies.size === 1 ? [...strategies][0] : strategies.size === 0 ? "none" : "mixed";
}

/**
 * NVIDIA's device plugin on our NVIDIA nodes only: it announces their GPUs to the kubelet and
 * writes their CDI spec, which containerd's CDI support reads (cdi-cri). Under the wrapper's
 * RuntimeClass, where offered, it sees exactly the GPUs the host's plan selects.
 */
function devicePlugin(c: ClusterTerms): KubeObject {
    const labels = { "app.kubernetes.io/name": DEVICE_PLUGIN_NAME };
    return {
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: {
            name: DEVICE_PLUGIN_NAME,
            namespace: DEVICE_PLUGIN_NAMESPACE,
            labels: { ...labels, ...MANAGED_BY },
            ...(c.devicePlugin.awaitRollout ? {} : { annotations: { "pulumi.com/skipAwait": "true" } }),
        },
        spec: {
            selector: { matchLabels: labels },
            updateStrategy: { type: "RollingUpdate" },
            template: {
                metadata: { labels },
                spec: {
                    nodeSelector: { [GPU_NODE_LABEL]: "true", "nvidia.com/gpu.present": "true" },
                    ...(c.runtimes.includes("wrapper") ? { runtimeClassName: RUNTIME_CLASS_NAMES.wrapper } : {}),
                    priorityClassName: "system-node-critical",
                    tolerations: [
                        { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" },
                        { key: "CriticalAddonsOnly", operator: "Exists" },
                    ],
                    containers: [
                        {
                            name: "device-plugin",
                            image: c.devicePlugin.image,
                            env: [
                                { name: "DEVICE_LIST_STRATEGY", value: "cdi-cri" },
                                { name: "DEVICE_ID_STRATEGY", value: "index" },
                                { name: "MIG_STRATEGY", value: clusterMigStrategy(c.nodes) },
                                { name: "FAIL_ON_INIT_ERROR", value: "true" },
                            ],
                            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
                            volumeMounts: [
                                { name: "device-plugins", mountPath: "/var/lib/kubelet/device-plugins" },
                                { name: "cdi-specs", mountPath: "/var/run/cdi" },
                            ],
                        },
                    ],
                    volumes: [
                        { name: "device-plugins", hostPath: { path: "/var/lib/kubelet/device-plugins", type: "Directory" } },
                        { name: "cdi-specs", hostPath: { path: "/var/run/cdi", type: "DirectoryOrCreate" } },
                    ],
                },
            },
        },
    };
}

/**
 * Pod Security Admission on a tenant's namespace: the baseline profile enforced (no privileged
 * pod, no host namespaces, paths or ports, no added capabilities beyond the default set: what
 * would reach past the runc wrapper's datasets and GPU selection), the restricted one warned
 * and audited (GPU images often run as root, which it refuses). The GPU DaemonSet runs elsewhere.
 */
const TENANT_POD_SECURITY = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/audit-version": "latest",
};

function tenantNamespace(t: TenantTerms): KubeObject {
    return { apiVersion: "v1", kind: "Namespace", metadata: { name: t.name, labels: { [TENANT_LABEL]: t.name, ...TENANT_POD_SECURITY, ...MANAGED_BY } } };
}

/** Traffic only inside the tenant's namespace, both ways: every pod of it is selected, and only its own namespace's pods are peers. */
function tenantPolicy(t: TenantTerms): KubeObject {
    const ownNamespace = [{ matchLabels: { "k8s:io.kubernetes.pod.namespace": t.name } }];
    return {
        apiVersion: "cilium.io/v2",
        kind: "CiliumNetworkPolicy",
        metadata: { name: TENANT_POLICY_NAME, namespace: t.name, labels: { [TENANT_LABEL]: t.name, ...MANAGED_BY } },
        spec: { endpointSelector: {}, ingress: [{ fromEndpoints: ownNamespace }], egress: [{ toEndpoints: ownNamespace }] },
    };
}

function tenancy(c: ClusterTerms): KubeObject {
    return {
        apiVersion: CRD_API_VERSION,
        kind: "Tenancy",
        metadata: { name: c.name, labels: { ...MANAGED_BY } },
        spec: {
            tenants: c.tenants.map((t) => ({ name: t.name, namespace: t.name, ...(t.maxGpus !== undefined ? { maxGpus: t.maxGpus } : {}) })),
            runtimeClasses: c.runtimes.map((r) => RUNTIME_CLASS_NAMES[r]),
        },
    };
}

/** Every object of the cluster, each after what it needs (a custom resource after its CRD, a namespace's objects after it). */
export function planCluster(c: ClusterTerms): PlannedObject[] {
    const out: PlannedObject[] = [];
    const add = (object: KubeObject, dependsOn: KubeObject[] = [], patch = false): KubeObject => {
        out.push({ key: objectKey(object), object, dependsOn: dependsOn.map(objectKey), ...(patch ? { patch: true as const } : {}) });
        return object;
    };
    const classes = c.runtimes.map((r) => add(runtimeClass(r, c.wrapperHandler)));
    for (const node of c.nodes) add(nodeLabels(node), [], true);
    add(devicePlugin(c), classes);
    const tenancyDefinition = add(tenancyCrd());
    add(gpuLeaseCrd());
    add(tenancy(c), [tenancyDefinition, ...classes]);
    for (const t of c.tenants) add(tenantPolicy(t), [add(tenantNamespace(t))]);
    return out;
}
