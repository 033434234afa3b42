/**
 * The GPU hosts as Kubernetes nodes, through @pulumi/kubernetes: the objects planCluster makes
 * (components/lib/kubernetes/objects.ts, pure, the same the offline render writes), each created
 * through its own resource with a provider for the given kubeconfig, so that every one shows in
 * `pulumi preview --diff`. The nodes themselves are the kubelets': their labels are applied with
 * a field manager of their own (server-side apply), and taken away again on delete.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { GpuNodeTerms, KubeObject, planCluster, PlannedObject } from "../../lib/kubernetes/objects";
import { kubernetesSettingsSchema } from "../../lib/kubernetes/settings";
import type { KubernetesSettingsInput } from "../../lib/kubernetes/settings.generated";
import { WORKER_DEFAULTS } from "../../lib/settings/settings";

/**
 * KubernetesGpuNodes' arguments: the cluster, its GPU nodes, and the settings of
 * kubernetesSettingsSchema (components/lib/kubernetes/settings.ts: each field's doc and
 * default are written there, once, and reach each field here as its JSDoc through
 * KubernetesSettingsInput, which the build writes from the schema).
 */
export interface KubernetesGpuNodesArgs extends KubernetesSettingsInput {
    /** The cluster's kubeconfig (its text). Pass a secret. */
    kubeconfig: pulumi.Input<string>;
    /** The GPU hosts that are nodes of the cluster, each with its node name and GPU inventory. */
    nodes: GpuNodeTerms[];
    /** The CRI handler of the wrapper's runtime on the nodes (their ContainerdRuntime's runtimeName). Default: "gpu". */
    wrapperHandler?: string;
}

/** Bad arguments, every problem with its path. */
export class KubernetesGpuNodesArgsError extends Error {
    constructor(public readonly problems: string[]) {
        super(`KubernetesGpuNodes: ${problems.join("; ")}`);
        this.name = "KubernetesGpuNodesArgsError";
    }
}

/** The cluster's plan (plain objects) from the component's arguments: what the offline render writes for a cluster. */
export function kubernetesGpuNodesObjects(name: string, args: Omit<KubernetesGpuNodesArgs, "kubeconfig">): PlannedObject[] {
    const parsed = kubernetesSettingsSchema.safeParse({ runtimes: args.runtimes, devicePlugin: args.devicePlugin, tenants: args.tenants });
    if (!parsed.success) throw new KubernetesGpuNodesArgsError(parsed.error.issues.map((i) => `${i.path.join(".") || "(args)"}: ${i.message}`));
    const names = args.nodes.map((n) => n.nodeName);
    const twice = names.filter((n, i) => names.indexOf(n) !== i);
    if (twice.length > 0) throw new KubernetesGpuNodesArgsError([`nodes: ${[...new Set(twice)].join(", ")} named twice`]);
    const wrapperHandler = args.wrapperHandler ?? WORKER_DEFAULTS.containerd?.runtimeName;
    if (wrapperHandler === undefined) throw new Error("the settings schema gives no default for containerd.runtimeName");
    return planCluster({ name, nodes: args.nodes, wrapperHandler, ...parsed.data });
}

/** A planned object is the API's own shape, which the SDK's argument types describe field by field. */
function argsOf<T>(object: KubeObject): T {
    return object as unknown as T;
}

/** A resource's name in the stack: the component's, then the object's kind, namespace and name. */
function resourceName(component: string, o: KubeObject): string {
    return [component, o.kind.toLowerCase(), o.metadata.namespace, o.metadata.name].filter((p) => p !== undefined).join("-");
}

export class KubernetesGpuNodes extends pulumi.ComponentResource {
    /** Every object created (or, for a Node, labelled), by `Kind/namespace/name`. */
    public readonly objects: Record<string, pulumi.CustomResource>;
    /** The cluster's name: its Tenancy's. */
    public readonly clusterName: string;

    constructor(name: string, args: KubernetesGpuNodesArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:kubernetes:KubernetesGpuNodes", name, {}, opts);
        this.clusterName = name;
        const plan = kubernetesGpuNodesObjects(name, args);
        const provider = new k8s.Provider(`${name}-cluster`, { kubeconfig: args.kubeconfig, enableServerSideApply: true }, { parent: this });
        const made: Record<string, pulumi.CustomResource> = {};
        for (const planned of plan) {
            const o: pulumi.CustomResourceOptions = { parent: this, provider, dependsOn: planned.dependsOn.map((k) => made[k]) };
            made[planned.key] = this.create(resourceName(name, planned.object), planned, o, `gpu-workers-${name}`);
        }
        this.objects = made;
        this.registerOutputs({ objects: Object.keys(made) });
    }

    private create(name: string, { object, patch }: PlannedObject, o: pulumi.CustomResourceOptions, fieldManager: string): pulumi.CustomResource {
        switch (object.kind) {
            case "Node":
                if (!patch) break;
                // The kubelet owns the Node: only our labels are ours, under our own field manager; no force, so a label another manager holds is a conflict to see, not to take.
                return new k8s.core.v1.NodePatch(name, { metadata: { ...object.metadata, annotations: { "pulumi.com/patchFieldManager": fieldManager } } }, o);
            case "RuntimeClass":
                // The handler is immutable: a change replaces the class, and its fixed name means the old one goes first.
                return new k8s.node.v1.RuntimeClass(name, argsOf<k8s.node.v1.RuntimeClassArgs>(object), {
                    ...o,
                    replaceOnChanges: ["handler"],
                    deleteBeforeReplace: true,
                });
            case "DaemonSet":
                return new k8s.apps.v1.DaemonSet(name, argsOf<k8s.apps.v1.DaemonSetArgs>(object), o);
            case "CustomResourceDefinition":
                return new k8s.apiextensions.v1.CustomResourceDefinition(name, argsOf<k8s.apiextensions.v1.CustomResourceDefinitionArgs>(object), o);
            case "Namespace":
                return new k8s.core.v1.Namespace(name, argsOf<k8s.core.v1.NamespaceArgs>(object), o);
            default:
                return new k8s.apiextensions.CustomResource(name, argsOf<k8s.apiextensions.CustomResourceArgs>(object), o);
        }
        throw new Error(`${object.kind} ${object.metadata.name}: not planned as a patch`);
    }
}
