// Written by `npm run build` (cli/settings-types.ts) from kubernetesSettingsSchema, where each doc and default is written:
// edit them there. A unit test fails while this file differs from what the schema gives.
import type { z } from "zod";
import type { kubernetesSettingsSchema } from "./settings";

/**
 * The cluster's settings as KubernetesGpuNodesArgs takes them (kubernetesSettingsSchema's input), with each setting's doc from the schema.
 */
export interface KubernetesSettingsInput {
    /**
     * the runtimes the GPU nodes offer, each as a RuntimeClass: `wrapper` (class `gpu-workers`, handler `containerd.runtimeName`: the runc wrapper, so pods get the datasets and the plan's GPU environment) and `kata-qemu-nvidia-gpu` (Kata's GPU VMs; every node needs `containerd.kata`)
     *
     * Default: `[wrapper]`.
     */
    runtimes?: z.input<typeof kubernetesSettingsSchema>["runtimes"];
    /**
     * the CDI device plugin (a DaemonSet in `kube-system` on the GPU nodes only)
     */
    devicePlugin: {
        /**
         * NVIDIA's device plugin image, by tag or digest (e.g. `nvcr.io/nvidia/k8s-device-plugin:v0.17.1`)
         */
        image: z.input<typeof kubernetesSettingsSchema>["devicePlugin"]["image"];
        /**
         * `up` waits until it runs on every GPU node; false for a cluster whose nodes have not joined yet
         *
         * Default: `true`.
         */
        awaitRollout?: z.input<typeof kubernetesSettingsSchema>["devicePlugin"]["awaitRollout"];
    };
    /**
     * `{name, maxGpus}` each: a Namespace and a CiliumNetworkPolicy that allows traffic only inside it, listed in the cluster's Tenancy
     *
     * Default: `[]`.
     */
    tenants?: z.input<typeof kubernetesSettingsSchema>["tenants"];
}

/** The interface is the schema's input exactly, its groups and every field's type: tsc fails here otherwise. */
export type KubernetesSettingsInputCheck = [
    IsTrue<Same<KubernetesSettingsInput, z.input<typeof kubernetesSettingsSchema>>>,
    IsTrue<Same<keyof KubernetesSettingsInput, keyof z.input<typeof kubernetesSettingsSchema>>>,
];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type IsTrue<T extends true> = T;
