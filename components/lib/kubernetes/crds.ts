/**
 * The project's two custom resource definitions, with real OpenAPI schemas the API server
 * enforces: Tenancy (the cluster's tenants: each one's namespace and GPU ceiling, the
 * RuntimeClasses their pods may use) and GpuLease (cluster-scoped: one GPU of one node held for one job, granted only after the
 * GPU's firmware check passed). Pure.
 */
import type { KubeObject } from "./kube-object";

export const CRD_GROUP = "gpu-workers.dev";
export const CRD_VERSION = "v1alpha1";
export const CRD_API_VERSION = `${CRD_GROUP}/${CRD_VERSION}`;

const DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
const DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

type Schema = Record<string, unknown>;
const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const int = (extra: Schema = {}): Schema => ({ type: "integer", format: "int32", ...extra });

function crd(kind: string, plural: string, spec: Schema, status: Schema, columns: { name: string; path: string; type: string }[]): KubeObject {
    return {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: `${plural}.${CRD_GROUP}` },
        spec: {
            group: CRD_GROUP,
            scope: "Cluster",
            names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
            versions: [
                {
                    name: CRD_VERSION,
                    served: true,
                    storage: true,
                    subresources: { status: {} },
                    additionalPrinterColumns: columns.map((c) => ({ name: c.name, type: c.type, jsonPath: c.path })),
                    schema: {
                        openAPIV3Schema: {
                            type: "object",
                            required: ["spec"],
                            properties: {
                                apiVersion: str(),
                                kind: str(),
                                metadata: { type: "object" },
                                spec,
                                status,
                            },
                        },
                    },
                },
            ],
        },
    };
}

/** The cluster's tenants: one object (named after the cluster's config), each tenant with its namespace, and what their pods may use. */
export function tenancyCrd(): KubeObject {
    return crd(
        "Tenancy",
        "tenancies",
        {
            type: "object",
            description: "The tenants of the cluster: each runs in its own namespace, where a CiliumNetworkPolicy lets traffic only inside it.",
            required: ["tenants", "runtimeClasses"],
            properties: {
                tenants: {
                    type: "array",
                    items: {
                        type: "object",
                        required: ["name", "namespace"],
                        properties: {
                            name: str({ pattern: DNS_LABEL, maxLength: 63 }),
                            namespace: str({ description: "The tenant's namespace.", pattern: DNS_LABEL, maxLength: 63 }),
                            maxGpus: int({ description: "GPUs the tenant may hold at once (GpuLeases); absent: no ceiling.", minimum: 0 }),
                        },
                    },
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                },
                runtimeClasses: {
                    type: "array",
                    description: "The RuntimeClasses the tenants' pods may name.",
                    items: str({ pattern: DNS_SUBDOMAIN, maxLength: 253 }),
                    "x-kubernetes-list-type": "set",
                },
            },
        },
        {
            type: "object",
            properties: {
                leasedGpus: {
                    type: "object",
                    description: "GPUs each tenant holds now, by tenant name.",
                    additionalProperties: int({ minimum: 0 }),
                },
            },
        },
        [{ name: "Runtime classes", path: ".spec.runtimeClasses", type: "string" }],
    );
}

/**
 * One GPU held for one job: cluster-scoped, since a GPU belongs to a node and not to a tenant.
 * A job waits for phase Granted, which the lease reaches only after the GPU's firmware check
 * (the expected VBIOS and InfoROM, where given) passed on the node.
 */
export function gpuLeaseCrd(): KubeObject {
    return crd(
        "GpuLease",
        "gpuleases",
        {
            type: "object",
            required: ["node", "gpu", "holder"],
            properties: {
                node: str({ description: "The node the GPU is in.", pattern: DNS_SUBDOMAIN, maxLength: 253 }),
                gpu: {
                    type: "object",
                    description: "The GPU: its index on the node, and its UUID where known (a lease for another UUID at that index is refused).",
                    required: ["index"],
                    properties: {
                        index: int({ minimum: 0 }),
                        uuid: str({ pattern: "^(GPU|MIG)-[0-9a-fA-F-]+$" }),
                    },
                },
                holder: {
                    type: "object",
                    description: "The job the GPU is held for.",
                    required: ["tenant", "job"],
                    properties: {
                        tenant: str({ pattern: DNS_LABEL, maxLength: 63, description: "The tenant's Tenancy." }),
                        job: str({ pattern: DNS_SUBDOMAIN, maxLength: 253, description: "The Job in the tenant's namespace." }),
                    },
                },
                firmwareCheck: {
                    type: "object",
                    description: "What the GPU's firmware must be before the lease is granted; absent: the check only reads and records it.",
                    properties: {
                        vbiosVersion: str({ pattern: "^[0-9A-Fa-f.]+$" }),
                        inforomVersion: str({ pattern: "^[0-9A-Za-z.]+$" }),
                    },
                },
            },
        },
        {
            type: "object",
            properties: {
                phase: str({ enum: ["Pending", "Checking", "Granted", "Refused", "Released"] }),
                firmware: {
                    type: "object",
                    properties: { vbiosVersion: str(), inforomVersion: str(), checkedAt: str({ format: "date-time" }), passed: { type: "boolean" } },
                },
                message: str(),
            },
        },
        [
            { name: "Node", path: ".spec.node", type: "string" },
            { name: "GPU", path: ".spec.gpu.index", type: "integer" },
            { name: "Tenant", path: ".spec.holder.tenant", type: "string" },
            { name: "Phase", path: ".status.phase", type: "string" },
        ],
    );
}
