/**
 * The Kubernetes objects as pure data (planCluster): GPU Feature Discovery's labels from the one
 * GPU plan, the device plugin on our GPU nodes only, a RuntimeClass per runtime, the tenants'
 * namespaces and policies; the offline render's YAML is exactly those objects. Under mocks, the
 * component's shape: an explicit provider, the handler's change replacing its class, the Node
 * patched rather than owned. (The real API server judges them in test/e2e/kubernetes.test.ts.)
 */
import * as assert from "assert";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { readStackFile } from "../../cli/render";
import { KubernetesGpuNodes, kubernetesGpuNodesObjects, KubernetesGpuNodesArgs } from "../../components/chain/kubernetes-gpu-nodes";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { labelValue } from "../../components/lib/kubernetes/node-labels";
import { KubeObject } from "../../components/lib/kubernetes/objects";
import { parseStack } from "../../stacks/checks/stack";
import { renderClusters } from "../../stacks/render/offline-render";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";
import { recordGraph, settle } from "../support/pulumi-graph";

const IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1";
const args = (extra: Partial<KubernetesGpuNodesArgs> = {}): Omit<KubernetesGpuNodesArgs, "kubeconfig"> => ({
    nodes: [
        { nodeName: "gpu-a", inventory: inventorySchema.parse(HGX_H100_8X), selection: [0, 1, 2, 3] },
        { nodeName: "gpu-b.lab", inventory: inventorySchema.parse(RTX_A500_LAPTOP), driverVersion: "570.86.15" },
        { nodeName: "apu", inventory: inventorySchema.parse(AMD_PHOENIX) },
    ],
    runtimes: ["wrapper", "kata-qemu-nvidia-gpu"],
    devicePlugin: { image: IMAGE },
    tenants: [{ name: "team-a", maxGpus: 4 }, { name: "team-b" }],
    ...extra,
});
const find = (objects: KubeObject[], kind: string, name: string, namespace?: string): KubeObject => {
    const o = objects.find((x) => x.kind === kind && x.metadata.name === name && x.metadata.namespace === namespace);
    assert.ok(o, `no ${kind} ${namespace ?? ""}/${name}`);
    return o;
};
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe("Kubernetes objects (pure)", () => {
    const planned = kubernetesGpuNodesObjects("lab", args());
    const objects = planned.map((p) => p.object);

    it("labels each node from its GPU plan in GPU Feature Discovery's keys, and marks it ours", () => {
        assert.deepStrictEqual(find(objects, "Node", "gpu-a").metadata.labels, {
            "gpu-workers.dev/gpu-node": "true",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": "4",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.family": "hopper",
            "nvidia.com/gpu.compute.major": "9",
            "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/cuda.driver.major": "550",
            "nvidia.com/cuda.runtime.major": "12",
            "nvidia.com/cuda.runtime.minor": "4",
            "nvidia.com/mig.strategy": "none",
        });
        // A pin to another branch gives the driver's major, and drops the CUDA version that was the old driver's.
        const pinned = find(objects, "Node", "gpu-b.lab").metadata.labels!;
        assert.strictEqual(pinned["nvidia.com/cuda.driver.major"], "570");
        assert.strictEqual(pinned["nvidia.com/cuda.runtime.major"], undefined);
        assert.strictEqual(pinned["nvidia.com/gpu.family"], "ampere");
        // No NVIDIA labels on an AMD node: NVIDIA's device plugin and GFD's keys are not its.
        assert.deepStrictEqual(find(objects, "Node", "apu").metadata.labels, { "gpu-workers.dev/gpu-node": "true" });
        const mig = kubernetesGpuNodesObjects("lab", args({ nodes: [{ nodeName: "m", inventory: inventorySchema.parse(A100_MIG) }] })).map((p) => p.object);
        assert.strictEqual(find(mig, "Node", "m").metadata.labels!["nvidia.com/mig.strategy"], "mixed");
        for (const o of objects.filter((x) => x.kind === "Node")) for (const v of Object.values(o.metadata.labels!)) assert.match(v, LABEL_VALUE);
        assert.strictEqual(labelValue("  NVIDIA GeForce RTX 4090 (rev a1) "), "NVIDIA-GeForce-RTX-4090-rev-a1");
        assert.strictEqual(labelValue("x".repeat(80) + "-"), "x".repeat(63));
    });

    it("a Node is patched (its labels), never created: it is the kubelet's", () => {
        assert.deepStrictEqual(
            planned.filter((p) => p.object.kind === "Node").map((p) => p.patch),
            [true, true, true],
        );
        assert.ok(planned.filter((p) => p.object.kind !== "Node").every((p) => p.patch === undefined));
    });

    it("a RuntimeClass per runtime offered, on our GPU nodes only: the wrapper's handler as the nodes name it, Kata's with its VM overhead", () => {
        const wrapper = find(objects, "RuntimeClass", "gpu-workers");
        assert.strictEqual(wrapper.handler, "gpu");
        assert.deepStrictEqual(wrapper.scheduling, { nodeSelector: { "gpu-workers.dev/gpu-node": "true" } });
        const kata = find(objects, "RuntimeClass", "kata-qemu-nvidia-gpu");
        assert.strictEqual(kata.handler, "kata-qemu-nvidia-gpu");
        assert.ok((kata.overhead as { podFixed: Record<string, string> }).podFixed.memory);
        const renamed = kubernetesGpuNodesObjects("lab", args({ wrapperHandler: "nvidia-gpu", runtimes: ["wrapper"] })).map((p) => p.object);
        assert.strictEqual(find(renamed, "RuntimeClass", "gpu-workers").handler, "nvidia-gpu");
        assert.strictEqual(renamed.filter((o) => o.kind === "RuntimeClass").length, 1);
    });

    it("the device plugin: in kube-system, only on our NVIDIA GPU nodes, under the wrapper's class, CDI through CRI", () => {
        const ds = find(objects, "DaemonSet", "gpu-workers-device-plugin", "kube-system");
        type Pod = { nodeSelector: Record<string, string>; runtimeClassName?: string; containers: { image: string; env: { name: string; value: string }[] }[] };
        const pod = (ds.spec as { template: { spec: Pod } }).template.spec;
        assert.deepStrictEqual(pod.nodeSelector, { "gpu-workers.dev/gpu-node": "true", "nvidia.com/gpu.present": "true" });
        assert.strictEqual(pod.runtimeClassName, "gpu-workers");
        assert.strictEqual(pod.containers[0].image, IMAGE);
        const env = Object.fromEntries(pod.containers[0].env.map((e) => [e.name, e.value]));
        assert.strictEqual(env.DEVICE_LIST_STRATEGY, "cdi-cri");
        assert.strictEqual(env.MIG_STRATEGY, "none");
        assert.strictEqual(ds.metadata.annotations, undefined, "up waits for its rollout by default");
        const early = kubernetesGpuNodesObjects("lab", args({ devicePlugin: { image: IMAGE, awaitRollout: false } })).map((p) => p.object);
        assert.deepStrictEqual(find(early, "DaemonSet", "gpu-workers-device-plugin", "kube-system").metadata.annotations, { "pulumi.com/skipAwait": "true" });
    });

    it("per tenant a Namespace and a CiliumNetworkPolicy that lets traffic only inside it; one Tenancy lists them", () => {
        for (const tenant of ["team-a", "team-b"]) {
            assert.strictEqual(find(objects, "Namespace", tenant).metadata.labels!["gpu-workers.dev/tenant"], tenant);
            const labels = find(objects, "Namespace", tenant).metadata.labels!;
            assert.deepStrictEqual(
                [labels["pod-security.kubernetes.io/enforce"], labels["pod-security.kubernetes.io/warn"], labels["pod-security.kubernetes.io/audit"]],
                ["baseline", "restricted", "restricted"],
                "Pod Security Admission: baseline enforced, restricted warned and audited",
            );
            const own = [{ matchLabels: { "k8s:io.kubernetes.pod.namespace": tenant } }];
            assert.deepStrictEqual(find(objects, "CiliumNetworkPolicy", "tenant-isolation", tenant).spec, {
                endpointSelector: {},
                ingress: [{ fromEndpoints: own }],
                egress: [{ toEndpoints: own }],
            });
        }
        assert.deepStrictEqual(find(objects, "Tenancy", "lab").spec, {
            tenants: [
                { name: "team-a", namespace: "team-a", maxGpus: 4 },
                { name: "team-b", namespace: "team-b" },
            ],
            runtimeClasses: ["gpu-workers", "kata-qemu-nvidia-gpu"],
        });
    });

    it("each object comes after what it needs: a policy after its namespace, the Tenancy after its CRD, the plugin after its class", () => {
        const keys = planned.map((p) => p.key);
        assert.strictEqual(new Set(keys).size, keys.length, "keys are unique");
        planned.forEach((p, i) => {
            for (const d of p.dependsOn) assert.ok(keys.indexOf(d) >= 0 && keys.indexOf(d) < i, `${p.key} after ${d}`);
        });
        const deps = (key: string) => planned.find((p) => p.key === key)!.dependsOn;
        assert.deepStrictEqual(deps("CiliumNetworkPolicy/team-a/tenant-isolation"), ["Namespace/team-a"]);
        assert.ok(deps("Tenancy/lab").includes("CustomResourceDefinition/tenancies.gpu-workers.dev"));
        assert.ok(deps("DaemonSet/kube-system/gpu-workers-device-plugin").includes("RuntimeClass/gpu-workers"));
    });

    it("bad arguments of the component used alone are refused, naming each", () => {
        assert.throws(
            () => kubernetesGpuNodesObjects("lab", args({ tenants: [{ name: "x" }, { name: "x" }], devicePlugin: { image: "plugin" } })),
            /devicePlugin\.image: expected an image with a tag or a digest.*tenants\.1\.name: x is named twice/,
        );
        assert.throws(() => kubernetesGpuNodesObjects("lab", args({ nodes: [...args().nodes, args().nodes[0]] })), /nodes: gpu-a named twice/);
    });

    it("the offline render's YAML of the example stack is exactly the component's objects, one document each", () => {
        const [lab] = renderClusters(parseStack(readStackFile(path.join(PACKAGE_ROOT, "examples", "stacks"), "k8s")));
        const docs = parseAllDocuments(lab.yaml).map((d) => d.toJS() as KubeObject);
        assert.deepStrictEqual(docs, JSON.parse(JSON.stringify(lab.objects.map((o) => o.object))) as KubeObject[]);
        assert.deepStrictEqual(
            docs.filter((d) => d.kind === "Namespace").map((d) => d.metadata.name),
            ["team-a", "team-b"],
        );
    });
});

describe("KubernetesGpuNodes (under mocks: shape only)", () => {
    it("one explicit provider from the kubeconfig for every object; the handler replaces its class (old one first); the Node is a patch with our field manager", async () => {
        const recorder = recordGraph();
        new KubernetesGpuNodes("lab", { ...args(), kubeconfig: "apiVersion: v1\nkind: Config\n" });
        await settle(recorder);
        const [provider] = recorder.ofType("pulumi:providers:kubernetes");
        assert.ok(provider, "an explicit provider");
        assert.strictEqual(provider.inputs.enableServerSideApply, "true");
        const objects = recorder.resources.filter((r) => r.type.startsWith("kubernetes:"));
        assert.strictEqual(objects.length, kubernetesGpuNodesObjects("lab", args()).length);
        for (const r of objects) assert.ok(r.provider.startsWith(provider.urn), `${r.name} uses the explicit provider`);
        for (const rc of recorder.ofType("kubernetes:node.k8s.io/v1:RuntimeClass")) {
            assert.deepStrictEqual(rc.replaceOnChanges, ["handler"], rc.name);
            assert.strictEqual(rc.deleteBeforeReplace, true, rc.name);
        }
        const patches = recorder.ofType("kubernetes:core/v1:NodePatch");
        assert.strictEqual(patches.length, 3);
        for (const p of patches)
            assert.strictEqual((p.inputs.metadata as { annotations: Record<string, string> }).annotations["pulumi.com/patchFieldManager"], "gpu-workers-lab");
        assert.strictEqual(recorder.ofType("kubernetes:core/v1:Node").length, 0, "no Node is created");
        assert.strictEqual(recorder.ofType("kubernetes:cilium.io/v2:CiliumNetworkPolicy").length, 2);
    });
});
