/**
 * `gpu-workers:kubernetes`: the example stack's cluster parses, and hostile or careless values
 * are refused with their paths, all at once, as every other setting.
 */
import * as assert from "assert";
import * as path from "path";
import { readStackFile } from "../../cli/render";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { parseStack } from "../../stacks/checks/stack";
import { RawStackConfig } from "../../stacks/config/stack";
import { HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";

const IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1";

function withCluster(cluster: Record<string, unknown>, hostExtra: Record<string, unknown> = {}): RawStackConfig {
    const raw: RawStackConfig = stackWith(
        { name: "gpu-a", inventory: HGX_H100_8X, extra: hostExtra },
        { name: "gpu-b", inventory: RTX_A500_LAPTOP, extra: hostExtra },
        { name: "cpu-c", inventory: NO_GPU },
    );
    raw.kubernetes = {
        clusters: [{ name: "lab", kubeconfigSecret: "lab-kubeconfig", nodes: [{ host: "gpu-a" }], devicePlugin: { image: IMAGE }, ...cluster }],
    };
    return raw;
}

describe("stack config: gpu-workers:kubernetes", () => {
    it("the example stack's cluster: its nodes, runtimes, device plugin and tenants, with defaults", () => {
        const stack = parseStack(readStackFile(path.join(PACKAGE_ROOT, "examples", "stacks"), "k8s"));
        const [lab] = stack.kubernetes!.clusters;
        assert.strictEqual(lab.name, "lab");
        assert.deepStrictEqual(lab.nodes, [{ host: "gpu-k1", nodeName: "gpu-k1.lab.example.com" }, { host: "gpu-k2" }]);
        assert.deepStrictEqual(lab.runtimes, ["wrapper", "kata-qemu-nvidia-gpu"]);
        assert.deepStrictEqual(lab.devicePlugin, { image: IMAGE, awaitRollout: true });
        assert.deepStrictEqual(lab.tenants, [{ name: "team-a", maxGpus: 2 }, { name: "team-b" }]);
        assert.ok(stack.hosts.every((h) => h.containerd.kata));
    });

    it("defaults: the wrapper's runtime only, no tenants; a stack without it has no clusters", () => {
        const [lab] = parseStack(withCluster({})).kubernetes!.clusters;
        assert.deepStrictEqual(lab.runtimes, ["wrapper"]);
        assert.deepStrictEqual(lab.tenants, []);
        const plain = withCluster({});
        delete plain.kubernetes;
        assert.strictEqual(parseStack(plain).kubernetes, undefined);
    });

    it("refuses hostile and careless values, each with its path, all at once", () => {
        const problems = problemsOf(
            withCluster({
                name: "Lab_1",
                kubeconfigSecret: "$(cat /etc/shadow)",
                nodes: [{ host: "gpu-a", nodeName: "gpu-a/../x" }, { host: "nowhere" }],
                runtimes: ["wrapper", "runsc"],
                devicePlugin: { image: "nvcr.io/nvidia/k8s-device-plugin", awaitRollout: "yes" },
                tenants: [{ name: "kube-system" }, { name: "Team A" }, { name: "team-a", maxGpus: -1 }, { name: "default" }],
                colour: "red",
            }),
        );
        assert.deepStrictEqual(problems.sort(), [
            "kubernetes.clusters[0].devicePlugin.awaitRollout: expected true or false",
            "kubernetes.clusters[0].devicePlugin.image: expected an image with a tag or a digest, e.g. nvcr.io/nvidia/k8s-device-plugin:v0.17.1 (lower-case path, no implicit latest)",
            "kubernetes.clusters[0].kubeconfigSecret: expected the name of a secret config key, e.g. gpu-a-ssh-key",
            "kubernetes.clusters[0].name: expected lower-case letters, digits and dashes (a DNS label), e.g. gpu-a",
            "kubernetes.clusters[0].nodes[0].nodeName: expected a Kubernetes node name: lower-case letters, digits, - and . (a DNS subdomain), e.g. gpu-a.lab",
            "kubernetes.clusters[0].runtimes[1]: expected one of wrapper, kata-qemu-nvidia-gpu",
            "kubernetes.clusters[0].tenants[0].name: names a namespace of Kubernetes itself (default, kube-system, kube-public, kube-node-lease, kube-*), which the tenant would take over and a removal would delete",
            "kubernetes.clusters[0].tenants[1].name: expected a DNS label (lower-case letters, digits and -, at most 63), e.g. team-a: it names the tenant's namespace",
            "kubernetes.clusters[0].tenants[2].maxGpus: expected a non-negative integer",
            "kubernetes.clusters[0].tenants[3].name: names a namespace of Kubernetes itself (default, kube-system, kube-public, kube-node-lease, kube-*), which the tenant would take over and a removal would delete",
            "kubernetes.clusters[0]: unknown key colour",
        ]);
    });

    it("refuses an image that could carry more than a name (spaces, quotes, uppercase, a second reference)", () => {
        for (const image of ["nvcr.io/nvidia/plugin:v1 --privileged", 'x:1"', "NVCR.io/x:1", "x:1@sha256:abc", "-x:1", "x:", "x@sha256:" + "0".repeat(63)]) {
            assert.deepStrictEqual(
                problemsOf(withCluster({ devicePlugin: { image } })).map((p) => p.split(":")[0]),
                ["kubernetes.clusters[0].devicePlugin.image"],
                image,
            );
        }
        for (const image of [
            "registry.local:5000/team/plugin:v0.17.1",
            "plugin@sha256:" + "a".repeat(64),
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.1@sha256:" + "b".repeat(64),
        ]) {
            assert.deepStrictEqual(problemsOf(withCluster({ devicePlugin: { image } })), [], image);
        }
    });

    it("refuses a tenant named twice, a runtime offered twice, and no nodes", () => {
        assert.deepStrictEqual(problemsOf(withCluster({ tenants: [{ name: "team-a" }, { name: "team-b" }, { name: "team-a" }] })), [
            "kubernetes.clusters[0].tenants[2].name: team-a is named twice",
        ]);
        assert.deepStrictEqual(problemsOf(withCluster({ runtimes: ["wrapper", "wrapper"] })), ["kubernetes.clusters[0].runtimes: a runtime is named twice"]);
        assert.deepStrictEqual(problemsOf(withCluster({ nodes: [] })), ["kubernetes.clusters[0].nodes: name at least one host that is a node of the cluster"]);
    });

    it("ties the nodes to the hosts: known hosts, one cluster each, distinct node names, one wrapper handler, Kata where offered", () => {
        const raw = withCluster({
            runtimes: ["wrapper", "kata-qemu-nvidia-gpu"],
            nodes: [{ host: "gpu-a" }, { host: "gpu-b", nodeName: "gpu-a" }, { host: "ghost" }],
        });
        (raw.hosts as Record<string, unknown>[])[1].containerd = { runtimeName: "nvidia-gpu", kata: true };
        (raw.kubernetes as { clusters: Record<string, unknown>[] }).clusters.push({
            name: "lab",
            kubeconfigSecret: "other",
            nodes: [{ host: "gpu-a" }],
            devicePlugin: { image: IMAGE },
        });
        assert.deepStrictEqual(problemsOf(raw).sort(), [
            "kubernetes.clusters[0].nodes: one RuntimeClass (gpu-workers) names one handler, but these nodes' containerd.runtimeName differ: gpu-a gpu, gpu-b nvidia-gpu",
            "kubernetes.clusters[0].nodes[0].host: cluster lab offers kata-qemu-nvidia-gpu, but gpu-a has no Kata runtime in containerd: set containerd.kata: true on it (or in defaults)",
            "kubernetes.clusters[0].nodes[1].nodeName: gpu-a is the name of another node of cluster lab",
            "kubernetes.clusters[0].nodes[2].host: ghost is no host of gpu-workers:hosts",
            "kubernetes.clusters[1].name: lab is named twice",
            "kubernetes.clusters[1].nodes[0].host: gpu-a is already a node of cluster lab",
        ]);
    });

    it("gpu-workers:kubernetes is a key of the project's namespace; its secret is let be, a typo of it is refused", () => {
        const raw = withCluster({});
        raw.keys = [
            { name: "kubernetes", structured: true },
            { name: "lab-kubeconfig", structured: false },
            { name: "kubernets", structured: true },
        ];
        assert.deepStrictEqual(problemsOf(raw), [
            "gpu-workers:kubernets: unknown key (did you mean gpu-workers:kubernetes?); the project reads gpu-workers:defaults, gpu-workers:hosts, gpu-workers:web, gpu-workers:allowNoHosts, gpu-workers:kubernetes, gpu-workers:hostSteps, gpu-workers:fleet, gpu-workers:fleetMember, and the secret keys that settings name (privateKeySecret, passwordSecret, ...)",
        ]);
        raw.keys = [];
        raw.kubernetes = [];
        assert.deepStrictEqual(problemsOf(raw), ["kubernetes: expected an object with clusters: [...]"]);
    });
});
