/**
 * A Kubernetes cluster's settings besides its nodes and kubeconfig: the runtimes its GPU nodes
 * offer, NVIDIA's device plugin, and the tenants. Their zod schema is KubernetesGpuNodes' own
 * contract, which the stack config (`gpu-workers:kubernetes`) extends; each field's doc and
 * default are written here only. Pure.
 */
import { z } from "zod";
import { RUNTIME_OFFERS } from "./objects";
import { nonNegativeInt } from "../settings/settings";

/** A DNS label (RFC 1123), as Kubernetes names namespaces and nodes' parts. */
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** A DNS subdomain (RFC 1123), as Kubernetes names nodes. */
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Namespaces of Kubernetes itself: a tenant by such a name would take over, or delete, the cluster's own. */
const RESERVED_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

export const nodeName = z
    .string({ error: "expected a node name" })
    .regex(DNS_SUBDOMAIN, { error: "expected a Kubernetes node name: lower-case letters, digits, - and . (a DNS subdomain), e.g. gpu-a.lab" });

/**
 * An image by registry path and a tag or digest: never the implicit `latest`, which would let the
 * nodes run whatever the registry serves that day.
 */
export const imageReference = z
    .string({ error: "expected an image reference" })
    .regex(
        /^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]{1,5})?(\/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64}|:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64})$/,
        { error: "expected an image with a tag or a digest, e.g. nvcr.io/nvidia/k8s-device-plugin:v0.17.1 (lower-case path, no implicit latest)" },
    );

export const tenantSchema = z.strictObject({
    name: z
        .string({ error: "expected a tenant name" })
        .regex(DNS_LABEL, { error: "expected a DNS label (lower-case letters, digits and -, at most 63), e.g. team-a: it names the tenant's namespace" })
        .refine((n) => !RESERVED_NAMESPACES.includes(n) && !n.startsWith("kube-"), {
            error: `names a namespace of Kubernetes itself (${RESERVED_NAMESPACES.join(", ")}, kube-*), which the tenant would take over and a removal would delete`,
        })
        .meta({ description: "the tenant's name and its namespace's (a DNS label; not `default` nor `kube-*`)" }),
    maxGpus: nonNegativeInt.optional().meta({ description: "GPUs the tenant may hold at once (GpuLeases); no ceiling when absent" }),
});

export const kubernetesSettingsSchema = z.strictObject({
    runtimes: z
        .array(z.enum(RUNTIME_OFFERS, { error: `expected one of ${RUNTIME_OFFERS.join(", ")}` }))
        .min(1, { error: "offer at least one runtime" })
        .refine((r) => new Set(r).size === r.length, { error: "a runtime is named twice" })
        .default(["wrapper"])
        .meta({
            description:
                "the runtimes the GPU nodes offer, each as a RuntimeClass: `wrapper` (class `gpu-workers`, handler `containerd.runtimeName`: the runc wrapper, so pods get the datasets and the plan's GPU environment) and `kata-qemu-nvidia-gpu` (Kata's GPU VMs; every node needs `containerd.kata`)",
        }),
    devicePlugin: z
        .strictObject({
            image: imageReference.meta({ description: "NVIDIA's device plugin image, by tag or digest (e.g. `nvcr.io/nvidia/k8s-device-plugin:v0.17.1`)" }),
            awaitRollout: z.boolean({ error: "expected true or false" }).default(true).meta({
                description: "`up` waits until it runs on every GPU node; false for a cluster whose nodes have not joined yet",
            }),
        })
        .meta({ description: "the CDI device plugin (a DaemonSet in `kube-system` on the GPU nodes only)" }),
    tenants: z
        .array(tenantSchema)
        .default([])
        .superRefine((tenants, ctx) => {
            const seen = new Set<string>();
            tenants.forEach((t, i) => {
                if (seen.has(t.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `${t.name} is named twice` });
                seen.add(t.name);
            });
        })
        .meta({
            description: "`{name, maxGpus}` each: a Namespace and a CiliumNetworkPolicy that allows traffic only inside it, listed in the cluster's Tenancy",
        }),
});

export type KubernetesSettings = z.infer<typeof kubernetesSettingsSchema>;
