/**
 * The test control plane (test/support/control-plane.ts) is real: kubectl talks to it, the
 * controller manager finishes a namespace's deletion, Cilium's own CRD judges policies, the
 * Pulumi engine drives @pulumi/kubernetes against it through the plugin the bootstrap built, and
 * stop() leaves no process behind. The pattern to copy for tests of the Kubernetes component.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { ControlPlane, ensureKubernetesTools, KUBERNETES_TOOLS_TIMEOUT_MS, startControlPlane } from "../support/control-plane";
import { ensureEngine } from "../support/engine";
import { makeScratch, scratchName } from "../support/scratch";

/** Processes whose command line names `dir` (each daemon's arguments name its folder). */
function processesNaming(dir: string): string[] {
    const found: string[] = [];
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
            const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
            if (cmdline.includes(dir)) found.push(`${pid}: ${cmdline.slice(0, 120)}`);
        } catch {
            /* gone meanwhile */
        }
    }
    return found;
}

/** A tenant's policy as the Kubernetes component makes them: traffic only inside its namespace. */
function tenantPolicy(namespace: string, endpointSelector: unknown = {}): string {
    const inside = [{ matchLabels: { "k8s:io.kubernetes.pod.namespace": namespace } }];
    return JSON.stringify({
        apiVersion: "cilium.io/v2",
        kind: "CiliumNetworkPolicy",
        metadata: { name: "tenant-only", namespace },
        spec: { endpointSelector, ingress: [{ fromEndpoints: inside }], egress: [{ toEndpoints: inside }] },
    });
}

describe("the test Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager built from Go modules)", function () {
    this.timeout(120_000);
    const root = scratchName("gw-k8s-");
    const dir = path.join(root, "control-plane");
    let plane: ControlPlane | undefined;

    before(async function () {
        this.timeout(KUBERNETES_TOOLS_TIMEOUT_MS);
        makeScratch(root);
        ensureKubernetesTools();
        const started = Date.now();
        plane = await startControlPlane(dir);
        assert.ok(Date.now() - started < 60_000, "the control plane starts within a minute");
    });

    after(async () => {
        await plane?.stop();
        fs.rmSync(root, { recursive: true, force: true });
    });

    it("answers kubectl with the version it was built at, on 127.0.0.1 only", () => {
        const version = JSON.parse(plane!.kubectl("version", "-o", "json")) as { serverVersion: { gitVersion: string } };
        assert.match(version.serverVersion.gitVersion, /^v1\.\d+\.\d+$/);
        assert.match(plane!.server, /^https:\/\/127\.0\.0\.1:\d+$/);
        assert.match(plane!.kubectl("get", "namespace", "default", "-o", "name"), /^namespace\/default$/m);
    });

    it("creates a namespace and finishes deleting it (the controller manager empties it)", () => {
        plane!.kubectl("create", "namespace", "harness-ns");
        plane!.kubectl("create", "configmap", "left-inside", "-n", "harness-ns", "--from-literal=a=b");
        plane!.kubectl("delete", "namespace", "harness-ns", "--wait=true", "--timeout=90s");
        assert.strictEqual(plane!.kubectl("get", "namespace", "harness-ns", "--ignore-not-found", "-o", "name").trim(), "");
    });

    it("takes Cilium's real CiliumNetworkPolicy CRD, and it accepts a tenant's policy and refuses a malformed one", async () => {
        const crd = plane!.tools.ciliumNetworkPolicyCrd;
        assert.match(plane!.kubectl("apply", "--dry-run=server", "-f", crd), /ciliumnetworkpolicies\.cilium\.io .*\(server dry run\)/);
        assert.deepStrictEqual(await plane!.installCrds(crd), ["customresourcedefinition.apiextensions.k8s.io/ciliumnetworkpolicies.cilium.io"]);
        plane!.kubectl("create", "namespace", "tenant-a");

        const apply = (manifest: string) => {
            const file = path.join(root, "policy.json");
            fs.writeFileSync(file, manifest);
            return plane!.kubectl("apply", "--dry-run=server", "-f", file);
        };
        assert.match(apply(tenantPolicy("tenant-a")), /ciliumnetworkpolicy\.cilium\.io\/tenant-only created \(server dry run\)/);
        assert.throws(() => apply(tenantPolicy("tenant-a", "everything")), /spec\.endpointSelector.*must be of type object/);
    });

    it("serves @pulumi/kubernetes through the real engine and the plugin built beside it (a Namespace up and destroyed)", async function () {
        this.timeout(600_000);
        const tools = ensureKubernetesTools();
        const env = ensureEngine(path.join(root, "state"));
        // The engine finds pulumi-resource-kubernetes on PATH (nothing is downloaded).
        process.env.PATH = `${tools.bin}:${process.env.PATH}`;

        // A tiny program: an explicit Provider from the kubeconfig (a secret), and a Namespace.
        const project = path.join(root, "project");
        fs.mkdirSync(project, { recursive: true });
        fs.writeFileSync(
            path.join(project, "Pulumi.yaml"),
            ["name: k8s-harness", "runtime:", "  name: nodejs", "  options:", "    typescript: false", "main: index.js", ""].join("\n"),
        );
        fs.writeFileSync(
            path.join(project, "index.js"),
            [
                'const pulumi = require("@pulumi/pulumi");',
                'const k8s = require("@pulumi/kubernetes");',
                "const config = new pulumi.Config();",
                'const provider = new k8s.Provider("cluster", { kubeconfig: config.requireSecret("kubeconfig") });',
                'const ns = new k8s.core.v1.Namespace("tenant", { metadata: { name: config.require("namespace") } }, { provider });',
                "exports.namespace = ns.metadata.name;",
                "",
            ].join("\n"),
        );
        fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules"), path.join(project, "node_modules"));

        const stack = await LocalWorkspace.createOrSelectStack({ stackName: "harness", workDir: project }, { envVars: env });
        await stack.setConfig("kubeconfig", { value: plane!.kubeconfig.text, secret: true });
        await stack.setConfig("namespace", { value: "from-pulumi" });
        const up = await stack.up();
        assert.strictEqual(up.outputs.namespace.value, "from-pulumi");
        assert.match(plane!.kubectl("get", "namespace", "from-pulumi", "-o", "jsonpath={.status.phase}"), /^Active$/);
        assert.strictEqual((await stack.preview()).changeSummary.same, 3, "a second run changes nothing (stack, provider, namespace)");

        await stack.destroy();
        assert.strictEqual(plane!.kubectl("get", "namespace", "from-pulumi", "--ignore-not-found", "-o", "name").trim(), "");
    });

    it("stop() ends every daemon it started, and nothing else is left naming its folder", async () => {
        assert.ok(processesNaming(dir).length >= 3, `etcd, kube-apiserver and kube-controller-manager run: ${processesNaming(dir).join("; ")}`);
        await plane!.stop();
        plane = undefined;
        assert.deepStrictEqual(processesNaming(dir), []);
    });
});
