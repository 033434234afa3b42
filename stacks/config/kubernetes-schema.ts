/**
 * `gpu-workers:kubernetes`: the Kubernetes clusters the stack's GPU hosts are nodes of. Each
 * cluster takes KubernetesGpuNodes' own settings (the runtimes offered, the device plugin, the
 * tenants) and, here, its kubeconfig by secret name and its nodes by host name. Unknown keys are errors.
 */
import { z } from "zod";
import { kubernetesSettingsSchema, nodeName } from "../../components/program";
import { hostName, secretRef } from "./schema";

export const clusterNodeSchema = z.strictObject({
    host: hostName.meta({ description: "a host of `gpu-workers:hosts`" }),
    nodeName: nodeName.optional().meta({ defaultText: "the host's name", description: "its Node's name in the cluster" }),
});

export const clusterSchema = z.strictObject({
    name: hostName.meta({
        description: "DNS label; names the cluster's resources, its Tenancy and its file in the offline render (`_kubernetes/<name>.yaml`)",
    }),
    kubeconfigSecret: secretRef.meta({ description: "secret config key holding the cluster's kubeconfig (`pulumi config set --secret`)" }),
    nodes: z.array(clusterNodeSchema).min(1, { error: "name at least one host that is a node of the cluster" }).meta({
        description:
            "`{host, nodeName}` each: the hosts (of `gpu-workers:hosts`) that are its GPU nodes, labelled from their GPU plan; `nodeName` defaults to the host's name",
    }),
    ...kubernetesSettingsSchema.shape,
});

export const kubernetesSchema = z.strictObject({
    clusters: z.array(clusterSchema).min(1, { error: "name at least one cluster, or leave gpu-workers:kubernetes out" }),
});

export type ClusterConfig = z.infer<typeof clusterSchema>;
export type KubernetesConfig = z.infer<typeof kubernetesSchema>;
