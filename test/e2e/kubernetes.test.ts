/**
 * KubernetesGpuNodes through the real Pulumi engine and @pulumi/kubernetes's plugin against a
 * real control plane (etcd, kube-apiserver, kube-controller-manager on loopback:
 * test/support/control-plane.ts): up; a changed tenant list; a changed RuntimeClass handler
 * (immutable: replaced, never a failure); a second up that changes nothing; destroy that
 * leaves no object and no label of ours. Every custom resource is judged by its real CRD
 * (Cilium's from its Go module, ours from the component). The offline render of the example
 * stack passes `kubectl apply --dry-run=server` object by object, and the example stack's
 * preview shows exactly one Namespace and one CiliumNetworkPolicy created for a tenant added.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { EngineEvent, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { parseAllDocuments, parse } from "yaml";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { ControlPlane, ensureKubernetesTools, KUBERNETES_TOOLS_TIMEOUT_MS, startControlPlane } from "../support/control-plane";
import { ensureEngine, makeProject, makeTempDir, tempDirName } from "../support/engine";
import { renderExampleStack } from "../support/golden-stacks";
import { HGX_H100_8X, RTX_A500_LAPTOP } from "../fixtures/stacks/inventories";

const IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1";
const OUR_LABEL = "gpu-workers.dev/gpu-node";

function changes(result: { summary: { resourceChanges?: Record<string, number> } }): Record<string, number> {
    return Object.fromEntries(Object.entries(result.summary.resourceChanges ?? {}).filter(([, n]) => n > 0));
}

/** Each resource's planned operation in a preview, by `type name`. */
async function previewOps(stack: Stack): Promise<Map<string, string>> {
    const ops = new Map<string, string>();
    await stack.preview({
        diff: true,
        onEvent: (e: EngineEvent) => {
            const m = e.resourcePreEvent?.metadata;
            if (m) ops.set(`${m.type} ${m.urn.split("::").pop()}`, m.op);
        },
    });
    return ops;
}

/** Node objects as a kubelet would have registered them (no kubelet runs here), with a label of the kubelet's own. */
function registerNodes(plane: ControlPlane, dir: string, names: string[]): void {
    const file = path.join(dir, "nodes.json");
    const items = names.map((name) => ({ apiVersion: "v1", kind: "Node", metadata: { name, labels: { "kubernetes.io/hostname": name } } }));
    fs.writeFileSync(file, JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    plane.kubectl("create", "-f", file);
}

const labelsOf = (plane: ControlPlane, node: string): Record<string, string> =>
    (JSON.parse(plane.kubectl("get", "node", node, "-o", "json")) as { metadata: { labels: Record<string, string> } }).metadata.labels;

describe("end to end: KubernetesGpuNodes against a real control plane", function () {
    this.timeout(600_000);
    const root = tempDirName("gw-e2e-k8s-");
    let plane: ControlPlane;
    let env: Record<string, string>;

    before(async function () {
        this.timeout(KUBERNETES_TOOLS_TIMEOUT_MS);
        makeTempDir(root);
        const tools = ensureKubernetesTools();
        env = ensureEngine(path.join(root, "state"));
        // The engine finds pulumi-resource-kubernetes on PATH; nothing is downloaded.
        process.env.PATH = `${tools.bin}:${process.env.PATH}`;
        plane = await startControlPlane(path.join(root, "control-plane"));
        await plane.installCrds(tools.ciliumNetworkPolicyCrd);
        registerNodes(plane, root, ["gpu-a", "gpu-b.lab", "gpu-k1.lab.example.com", "gpu-k2"]);
    });

    after(async () => {
        await plane?.stop();
        fs.rmSync(root, { recursive: true, force: true });
    });

    describe("the component alone, in a consumer's program", () => {
        let stack: Stack;
        const args = (tenants: string[], wrapperHandler = "gpu") => ({
            nodes: [
                { nodeName: "gpu-a", inventory: HGX_H100_8X, selection: [0, 1] },
                { nodeName: "gpu-b.lab", inventory: RTX_A500_LAPTOP },
            ],
            wrapperHandler,
            runtimes: ["wrapper", "kata-qemu-nvidia-gpu"],
            // No kubelet runs here: the plugin's pods are never ready, so up must not wait for them.
            devicePlugin: { image: IMAGE, awaitRollout: false },
            tenants: tenants.map((name) => ({ name })),
        });
        const configure = (a: ReturnType<typeof args>) => stack.setConfig("args", { value: JSON.stringify(a) });

        before(async () => {
            const project = path.join(root, "consumer");
            fs.mkdirSync(project, { recursive: true });
            fs.writeFileSync(
                path.join(project, "Pulumi.yaml"),
                ["name: k8s-consumer", "runtime:", "  name: nodejs", "  options:", "    typescript: false", "main: index.js", ""].join("\n"),
            );
            fs.writeFileSync(
                path.join(project, "index.js"),
                [
                    'const pulumi = require("@pulumi/pulumi");',
                    `const { KubernetesGpuNodes, inventorySchema } = require(${JSON.stringify(path.join(PACKAGE_ROOT, "dist", "components"))});`,
                    "const config = new pulumi.Config();",
                    'const args = JSON.parse(config.require("args"));',
                    "const nodes = args.nodes.map((n) => ({ ...n, inventory: inventorySchema.parse(n.inventory) }));",
                    'const cluster = new KubernetesGpuNodes("lab", { ...args, nodes, kubeconfig: config.requireSecret("kubeconfig") });',
                    "exports.objects = Object.keys(cluster.objects);",
                    "",
                ].join("\n"),
            );
            fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules"), path.join(project, "node_modules"));
            stack = await LocalWorkspace.createOrSelectStack({ stackName: "consumer", workDir: project }, { envVars: env });
            await stack.setConfig("kubeconfig", { value: plane.kubeconfig.text, secret: true });
        });

        it("up: the RuntimeClasses, the nodes' labels (the Node left the kubelet's), the device plugin, the CRDs, the Tenancy, each tenant's Namespace and policy", async () => {
            await configure(args(["team-a", "team-b"]));
            const up = await stack.up();
            assert.strictEqual(up.summary.result, "succeeded");
            assert.strictEqual(plane.kubectl("get", "runtimeclass", "gpu-workers", "-o", "jsonpath={.handler}"), "gpu");
            assert.strictEqual(plane.kubectl("get", "runtimeclass", "kata-qemu-nvidia-gpu", "-o", "jsonpath={.handler}"), "kata-qemu-nvidia-gpu");
            const a = labelsOf(plane, "gpu-a");
            assert.strictEqual(a[OUR_LABEL], "true");
            assert.strictEqual(a["nvidia.com/gpu.count"], "2");
            assert.strictEqual(a["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
            assert.strictEqual(a["nvidia.com/gpu.family"], "hopper");
            assert.strictEqual(a["kubernetes.io/hostname"], "gpu-a", "the kubelet's own label is left alone");
            assert.strictEqual(labelsOf(plane, "gpu-b.lab")["nvidia.com/gpu.family"], "ampere");
            // Our labels are held by our own field manager; the Node's other fields are not ours.
            const managed = JSON.parse(plane.kubectl("get", "node", "gpu-a", "--show-managed-fields", "-o", "json")) as {
                metadata: { managedFields: { manager: string; operation: string; fieldsV1: { "f:metadata"?: { "f:labels"?: Record<string, unknown> } } }[] };
            };
            const ours = managed.metadata.managedFields.filter((f) => f.manager === "gpu-workers-lab");
            assert.strictEqual(ours.length, 1, JSON.stringify(managed.metadata.managedFields.map((f) => f.manager)));
            assert.strictEqual(ours[0].operation, "Apply");
            assert.ok(Object.keys(ours[0].fieldsV1["f:metadata"]?.["f:labels"] ?? {}).includes(`f:${OUR_LABEL}`));
            assert.ok(!Object.keys(ours[0].fieldsV1["f:metadata"]?.["f:labels"] ?? {}).includes("f:kubernetes.io/hostname"));

            const ds = JSON.parse(plane.kubectl("get", "daemonset", "-n", "kube-system", "gpu-workers-device-plugin", "-o", "json")) as {
                spec: { template: { spec: { nodeSelector: Record<string, string>; runtimeClassName: string } } };
            };
            assert.deepStrictEqual(ds.spec.template.spec.nodeSelector, { [OUR_LABEL]: "true", "nvidia.com/gpu.present": "true" });
            assert.strictEqual(ds.spec.template.spec.runtimeClassName, "gpu-workers");
            for (const crd of ["tenancies.gpu-workers.dev", "gpuleases.gpu-workers.dev"])
                assert.match(plane.kubectl("get", "crd", crd, "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}"), /^True$/);
            assert.strictEqual(plane.kubectl("get", "tenancy", "lab", "-o", "jsonpath={.spec.tenants[*].name}"), "team-a team-b");
            for (const tenant of ["team-a", "team-b"]) {
                assert.strictEqual(plane.kubectl("get", "namespace", tenant, "-o", "jsonpath={.status.phase}"), "Active");
                assert.match(plane.kubectl("get", "ciliumnetworkpolicy", "-n", tenant, "tenant-isolation", "-o", "name"), /tenant-isolation/);
            }
        });

        it("a second up changes nothing", async () => {
            const again = await stack.up();
            assert.deepStrictEqual(Object.keys(changes(again)), ["same"], JSON.stringify(again.summary.resourceChanges));
        });

        it("the GpuLease CRD's schema is the API server's to enforce: a lease is accepted, a malformed one refused", () => {
            const lease = (spec: unknown) => {
                const file = path.join(root, "lease.json");
                fs.writeFileSync(file, JSON.stringify({ apiVersion: "gpu-workers.dev/v1alpha1", kind: "GpuLease", metadata: { name: "job-1-gpu-0" }, spec }));
                return plane.kubectl("apply", "--dry-run=server", "-f", file);
            };
            const good = {
                node: "gpu-a",
                gpu: { index: 0, uuid: "GPU-8a1f0c3e-52b4-1e7d-9c2a-3b6f1d0e4a77" },
                holder: { tenant: "team-a", job: "train-1" },
                firmwareCheck: { vbiosVersion: "96.00.74.00.01" },
            };
            assert.match(lease(good), /gpulease\.gpu-workers\.dev\/job-1-gpu-0 created \(server dry run\)/);
            assert.throws(() => lease({ ...good, gpu: { index: -1 } }), /spec\.gpu\.index/);
            assert.throws(() => lease({ node: "gpu-a", gpu: { index: 0 } }), /spec\.holder: Required value/);
            assert.throws(() => lease({ ...good, holder: { tenant: "Team A", job: "x" } }), /spec\.holder\.tenant/);
            // The Tenancy too: a tenant's namespace that is no DNS label is refused.
            const file = path.join(root, "tenancy.json");
            fs.writeFileSync(
                file,
                JSON.stringify({
                    apiVersion: "gpu-workers.dev/v1alpha1",
                    kind: "Tenancy",
                    metadata: { name: "bad" },
                    spec: { tenants: [{ name: "x", namespace: "X_Y" }], runtimeClasses: [] },
                }),
            );
            assert.throws(() => plane.kubectl("apply", "--dry-run=server", "-f", file), /spec\.tenants\[0\]\.namespace/);
        });

        it("a tenant's namespace is the API server's Pod Security to guard: a privileged pod is refused, a plain one admitted", () => {
            const pod = (name: string, securityContext: Record<string, unknown>) => {
                const file = path.join(root, `${name}.json`);
                const container = { name: "c", image: "busybox", securityContext };
                fs.writeFileSync(
                    file,
                    JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace: "team-a" }, spec: { containers: [container] } }),
                );
                return plane.kubectl("apply", "--dry-run=server", "-f", file);
            };
            assert.throws(() => pod("root-of-host", { privileged: true }), /violates PodSecurity "baseline:latest": privileged/);
            assert.throws(() => pod("raw-net", { capabilities: { add: ["NET_ADMIN"] } }), /violates PodSecurity "baseline:latest".*non-default capabilities/);
            assert.match(pod("plain", {}), /pod\/plain created \(server dry run\)/);
        });

        it("a changed tenant list: the one added gets its Namespace and policy, the one removed loses them", async () => {
            await configure(args(["team-a", "team-c"]));
            const up = await stack.up();
            const c = changes(up);
            assert.strictEqual(c.create, 2, JSON.stringify(c));
            assert.strictEqual(c.delete, 2, JSON.stringify(c));
            assert.strictEqual(c.update, 1, JSON.stringify(c));
            assert.strictEqual(plane.kubectl("get", "namespace", "team-b", "--ignore-not-found", "-o", "name").trim(), "");
            assert.match(plane.kubectl("get", "ciliumnetworkpolicy", "-n", "team-c", "tenant-isolation", "-o", "name"), /tenant-isolation/);
            assert.strictEqual(plane.kubectl("get", "tenancy", "lab", "-o", "jsonpath={.spec.tenants[*].name}"), "team-a team-c");
        });

        it("a changed handler (immutable in Kubernetes) replaces the RuntimeClass instead of failing", async () => {
            await configure(args(["team-a", "team-c"], "nvidia-gpu"));
            const up = await stack.up();
            assert.strictEqual(up.summary.result, "succeeded");
            assert.strictEqual(changes(up).replace, 1, JSON.stringify(up.summary.resourceChanges));
            assert.strictEqual(plane.kubectl("get", "runtimeclass", "gpu-workers", "-o", "jsonpath={.handler}"), "nvidia-gpu");
            const again = await stack.up();
            assert.deepStrictEqual(Object.keys(changes(again)), ["same"], JSON.stringify(again.summary.resourceChanges));
        });

        it("destroy leaves no object of ours and no label of ours; the Nodes stay the kubelet's", async () => {
            await stack.destroy();
            const none = (...args: string[]) =>
                assert.strictEqual(plane.kubectl("get", ...args, "--ignore-not-found", "-o", "name").trim(), "", args.join(" "));
            none("runtimeclass", "gpu-workers");
            none("runtimeclass", "kata-qemu-nvidia-gpu");
            none("daemonset", "-n", "kube-system", "gpu-workers-device-plugin");
            none("crd", "tenancies.gpu-workers.dev");
            none("crd", "gpuleases.gpu-workers.dev");
            none("namespace", "team-a");
            none("namespace", "team-c");
            assert.strictEqual(plane.kubectl("get", "ciliumnetworkpolicies", "-A", "-o", "name").trim(), "");
            for (const node of ["gpu-a", "gpu-b.lab"]) assert.deepStrictEqual(labelsOf(plane, node), { "kubernetes.io/hostname": node });
        });
    });

    describe("the example stack (examples/stacks/Pulumi.k8s.yaml)", () => {
        const exampleConfig = () =>
            (parse(fs.readFileSync(path.join(PACKAGE_ROOT, "examples", "stacks", "Pulumi.k8s.yaml"), "utf8")) as { config: Record<string, unknown> }).config;

        it("its offline render: kubectl apply --dry-run=server accepts every object", async () => {
            const out = path.join(root, "render");
            renderExampleStack("k8s", out);
            const file = path.join(out, "_kubernetes", "lab.yaml");
            const objects = parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
            // What a dry run cannot make for the objects after it: the CRDs and the namespaces, made for real first (from the render too).
            const prerequisites = path.join(root, "prerequisites.json");
            fs.writeFileSync(
                prerequisites,
                JSON.stringify({ apiVersion: "v1", kind: "List", items: objects.filter((o) => ["CustomResourceDefinition", "Namespace"].includes(o.kind)) }),
            );
            assert.deepStrictEqual(await plane.installCrds(prerequisites), [
                "customresourcedefinition.apiextensions.k8s.io/tenancies.gpu-workers.dev",
                "customresourcedefinition.apiextensions.k8s.io/gpuleases.gpu-workers.dev",
            ]);
            const result = plane.kubectl("apply", "--dry-run=server", "-f", file);
            const accepted = result.trim().split("\n");
            assert.strictEqual(accepted.length, objects.length, result);
            for (const line of accepted) assert.match(line, /\(server dry run\)$/, line);
            plane.kubectl("delete", "-f", prerequisites, "--wait=true", "--timeout=120s");
        });

        it("its preview shows every object; with one tenant added, exactly one Namespace and one CiliumNetworkPolicy created", async () => {
            const config = exampleConfig();
            const kubernetes = config["gpu-workers:kubernetes"] as { clusters: { devicePlugin: Record<string, unknown>; tenants: { name: string }[] }[] };
            kubernetes.clusters[0].devicePlugin.awaitRollout = false; // no kubelet here
            const hosts = JSON.parse(JSON.stringify(config["gpu-workers:hosts"]).replace(/10\.0\.0\.3/g, "192.0.2.3")) as unknown[]; // TEST-NET: nothing answers
            const project = makeProject(path.join(root, "project"));
            const stack = await LocalWorkspace.createOrSelectStack({ stackName: "k8s", workDir: project }, { envVars: env });
            const set = () =>
                stack.setAllConfig({
                    "gpu-workers:defaults": { value: JSON.stringify(config["gpu-workers:defaults"]) },
                    "gpu-workers:hosts": { value: JSON.stringify(hosts) },
                    "gpu-workers:kubernetes": { value: JSON.stringify(kubernetes) },
                    "gpu-workers:hostSteps": { value: "builtin" },
                    "gpu-workers:gpu-k1-ssh-key": { value: generateOpensshKeyPair("gpu-k1").privateKeyOpenssh, secret: true },
                    "gpu-workers:gpu-k2-ssh-key": { value: generateOpensshKeyPair("gpu-k2").privateKeyOpenssh, secret: true },
                    "gpu-workers:lab-kubeconfig": { value: plane.kubeconfig.text, secret: true },
                });
            await set();
            const first = await previewOps(stack);
            const k8s = [...first].filter(([key]) => key.startsWith("kubernetes:"));
            // Every object of the render is a resource of the preview.
            const rendered = parseAllDocuments(fs.readFileSync(path.join(root, "render", "_kubernetes", "lab.yaml"), "utf8")).map(
                (d) => d.toJS() as { kind: string },
            );
            assert.strictEqual(k8s.length, rendered.length, k8s.map(([k]) => k).join("\n"));
            assert.ok(k8s.every(([, op]) => op === "create"));

            // The cluster's objects up, alone (the hosts are unreachable): the provider, the component and its children.
            const targets: string[] = [];
            await stack.preview({
                onEvent: (e) => {
                    const m = e.resourcePreEvent?.metadata;
                    if (
                        m &&
                        (m.type.startsWith("kubernetes:") || m.type === "pulumi:providers:kubernetes" || m.type === "gpu-workers:kubernetes:KubernetesGpuNodes")
                    )
                        targets.push(m.urn);
                },
            });
            const up = await stack.up({ target: targets });
            assert.strictEqual(up.summary.result, "succeeded");

            kubernetes.clusters[0].tenants.push({ name: "team-c" });
            await set();
            const added = [...(await previewOps(stack))].filter(([key]) => key.startsWith("kubernetes:"));
            const created = added.filter(([, op]) => op === "create").map(([key]) => key);
            assert.deepStrictEqual(created.sort(), [
                "kubernetes:cilium.io/v2:CiliumNetworkPolicy lab-ciliumnetworkpolicy-team-c-tenant-isolation",
                "kubernetes:core/v1:Namespace lab-namespace-team-c",
            ]);
            assert.deepStrictEqual(
                added.filter(([, op]) => op !== "same" && op !== "create").map(([key, op]) => `${op} ${key}`),
                ["update kubernetes:gpu-workers.dev/v1alpha1:Tenancy lab-tenancy-lab"],
                "the Tenancy lists the new tenant; nothing else changes",
            );
            await stack.destroy();
        });
    });
});
