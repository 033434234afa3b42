/**
 * One plan per host: the offline render and the resource graph under Pulumi mocks are built
 * from planHost, so for every inventory fixture and both transports they name the same
 * steps and the same files. Also the rule for a path placed twice.
 */
import * as assert from "assert";
import { linkOf } from "../../components/lib/plan/chain";
import * as pulumi from "@pulumi/pulumi";
import { ConcourseWorker } from "../../components/chain/concourse-worker";
import { FabricServiceVm } from "../../components/chain/fabric-service-vm";
import { SERVICE_VM_DEFAULTS } from "../../components/lib/plan/board-plan";
import { fileResourceName } from "../../components/lib/host/steps";
import { renderFabricServiceVm } from "../../components/lib/fabric/service-vm";
import { GpuWorker } from "../../components/chain/gpu-worker";
import { renderConcourseWorker } from "../../components/lib/links/concourse-worker/render";
import { HostPlan } from "../../components/lib/plan/host-plan";
import { parseStackConfig } from "../../stacks/checks/stack";
import { workerArgs } from "../../stacks/args/component-args";
import { planStack, renderPlan } from "../../stacks/render/offline-render";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { fileSetContents, isFileResourceName, recordGraph, settle } from "../support/pulumi-graph";
import { GpuInventoryInput } from "../../components/lib/gpu/inventory";
import { SharedGpuBoard } from "../../components/chain/shared-gpu-board";
import { parseStack } from "../../stacks/checks/stack";
import { boardArgs } from "../../stacks/args/board-args";
import { renderBoardPlan, renderWebPlan } from "../../stacks/render/offline-render";
import { ConcourseWeb } from "../../components/chain/concourse-web";
import { webArgs } from "../../stacks/args/component-args";
import { exampleStack } from "../fixtures/stacks/boards";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const DYNAMIC = "pulumi-nodejs:dynamic/gpu-workers:";
const STEP_TYPES = ["command:remote:Command", "pulumi-nodejs:dynamic/lxd:Instance", `${DYNAMIC}InventoryCheck`, `${DYNAMIC}CdiSpecCheck`];

const FIXTURES: Record<string, GpuInventoryInput> = { "no-gpu": NO_GPU, rtx: RTX_A500_LAPTOP, hgx: HGX_H100_8X, amd: AMD_PHOENIX, mig: A100_MIG };

function lxdTransport(name: string, port: number) {
    return { transport: { lxd: { instance: name, image: "gpu-workers/debian-12", sshPort: port, datasetSource: "/data" } } };
}

async function graphOf(host: ReturnType<typeof parseStackConfig>[number]) {
    const g = recordGraph();
    new GpuWorker(
        host.name,
        workerArgs(host, () => pulumi.secret("key"), process.cwd()),
    );
    await settle(g);
    const stepNames = g.resources.filter((r) => STEP_TYPES.includes(r.type) && !isFileResourceName(r.name)).map((r) => r.name);
    const fileNames = g.fileResources().map((r) => r.name);
    const instance = g.resources.find((r) => r.type === "pulumi-nodejs:dynamic/lxd:Instance");
    // The instance's files are a secret input: the value sits inside the secret's wrapper.
    const files = instance?.inputs.files as { value: { path: string }[] } | undefined;
    return { stepNames, fileNames, instanceFiles: files ? files.value.map((f) => f.path) : [] };
}

/** Sorted, each once: a file set's name stands for each of its files in a manifest. */
const sorted = (xs: string[]) => [...new Set(xs)].sort();

/** The host's plan through the stack's own mapping, as the offline render makes it. */
function planOf(host: ReturnType<typeof parseStackConfig>[number]): HostPlan {
    return planStack({ hosts: [host] }, process.cwd()).hosts[0];
}

describe("one plan per host: offline render = resource graph", function () {
    this.timeout(60000);

    for (const [kind, inventory] of Object.entries(FIXTURES)) {
        for (const transport of ["ssh", "lxd"] as const) {
            it(`${kind} over ${transport}: the same steps and files`, async () => {
                const name = `${kind}-${transport}`;
                const extra = transport === "lxd" ? lxdTransport(name, 2400) : {};
                const [host] = parseStackConfig(stackWith({ name, inventory, extra }));
                const { manifest } = renderPlan(planOf(host));
                const graph = await graphOf(host);
                assert.deepStrictEqual(sorted(graph.stepNames), sorted(manifest.steps.map((s) => s.name)), "steps");
                assert.strictEqual(graph.stepNames.length, manifest.steps.length, "no step twice");
                const instance = `${name}-host-instance`;
                assert.deepStrictEqual(
                    sorted(graph.fileNames),
                    sorted(manifest.files.filter((f) => f.resource !== instance).map((f) => f.resource)),
                    "file resources",
                );
                assert.deepStrictEqual(
                    sorted(graph.instanceFiles),
                    sorted(manifest.files.filter((f) => f.resource === instance).map((f) => f.path)),
                    "files pushed into the instance",
                );
            });
        }
    }

    it("a shared board (the example HGX stack): the board's and every worker VM's steps and files", async () => {
        const [board] = parseStack(exampleStack()).boards;
        const rendered = renderBoardPlan(planStack({ hosts: [], boards: [board] }, process.cwd()).boards[0]);
        const g = recordGraph();
        new SharedGpuBoard(
            board.name,
            boardArgs(board, () => pulumi.secret("key"), process.cwd()),
        );
        await settle(g);
        const manifests = rendered.map((r) => r.manifest);
        assert.deepStrictEqual(
            manifests.map((m) => m.host),
            ["hgx-a", "hgx-a-w1", "hgx-a-w2"],
        );
        const stepNames = g.resources.filter((r) => STEP_TYPES.includes(r.type) && !isFileResourceName(r.name)).map((r) => r.name);
        const fileNames = g.fileResources().map((r) => r.name);
        const instances = new Set(manifests.map((m) => `${m.host}-host-instance`));
        assert.deepStrictEqual(sorted(stepNames), sorted(manifests.flatMap((m) => m.steps.map((s) => s.name))), "steps");
        assert.deepStrictEqual(
            sorted(fileNames),
            sorted(manifests.flatMap((m) => m.files.filter((f) => !instances.has(f.resource)).map((f) => f.resource))),
            "file resources",
        );
        // A VM takes its access files in cloud-init user-data, not as pushed files.
        for (const m of manifests.slice(1)) {
            const instance = g.byName(`${m.host}-host-instance`);
            assert.strictEqual(instance.inputs.files, undefined, `${m.host}: no file push`);
            const userData = String((instance.inputs.userData as { value: string }).value);
            for (const f of m.files.filter((x) => x.resource === instance.name))
                assert.ok(userData.includes(`path: ${f.path}`), `${m.host}: ${f.path} in the user-data`);
        }
    });

    it("a stack with a web: the web's and every worker's steps and files, each worker's admission on the web's host included", async () => {
        const raw = stackWith({ name: "w-ssh", inventory: NO_GPU });
        const stack = parseStack({
            defaults: { concourse: { binary: raw.defaults.concourse.binary } },
            web: { name: "ci", transport: { lxd: { instance: "ci", image: "gpu-workers/debian-12", sshPort: 2200, publish: { web: 8080, tsa: 2222 } } } },
            hosts: [
                { ...raw.hosts[0], vendor: "none", concourse: { tsaHost: "10.0.0.1" } },
                { name: "w-lxd", vendor: "none", ...lxdTransport("w-lxd", 2401) },
            ],
        });
        const plans = planStack(stack, process.cwd());
        const manifests = [renderWebPlan(plans.web!), ...plans.hosts.map(renderPlan)].map((r) => r.manifest);
        const secret = () => pulumi.secret("key");
        const g = recordGraph();
        const web = new ConcourseWeb(stack.web!.name, webArgs(stack.web!, secret, process.cwd()));
        for (const host of stack.hosts) new GpuWorker(host.name, workerArgs(host, secret, process.cwd(), { config: stack.web!, forWorkers: web.forWorkers() }));
        await settle(g);
        const types = [...STEP_TYPES, `${DYNAMIC}WorkerRegistration`];
        const stepNames = g.resources.filter((r) => types.includes(r.type) && !isFileResourceName(r.name)).map((r) => r.name);
        const fileNames = g.fileResources().map((r) => r.name);
        const instances = new Set(manifests.map((m) => `${m.host}-host-instance`).concat(["ci-instance"]));
        assert.deepStrictEqual(sorted(stepNames), sorted(manifests.flatMap((m) => m.steps.map((st) => st.name))), "steps");
        assert.deepStrictEqual(
            sorted(fileNames),
            sorted(manifests.flatMap((m) => m.files.filter((f) => !instances.has(f.resource)).map((f) => f.resource))),
            "file resources",
        );
        for (const worker of ["w-ssh", "w-lxd"]) {
            // The admission runs on the web's host, and the worker's steps wait for it.
            const admission = g.byName(`${worker}-concourse-admission-tsa-admission`);
            assert.strictEqual((admission.inputs.connection as { value: { port: number } }).value.port, 2200, `${worker}: admitted on the web's host`);
            assert.ok(g.dependsOn(g.byName(`${worker}-concourse-concourse-worker`), admission), `${worker}: the worker step waits for its admission`);
        }
    });

    it("a path two components place identically is placed once, by the first", async () => {
        const [host] = parseStackConfig(stackWith({ name: "w", inventory: NO_GPU }));
        const plan: HostPlan = planOf(host);
        const installer = "/usr/local/lib/gpu-workers/install-runc-wrapper.sh";
        assert.deepStrictEqual(
            plan.files.filter((f) => f.path === installer).map((f) => f.component),
            ["RuncWrapper"],
        );
        const concourse = plan.links.find((l) => l.component === "ConcourseWorker")!;
        const ownership = "/usr/local/lib/gpu-workers/ownership.sh";
        const ownOfWorker = ["/usr/local/lib/gpu-workers/concourse-install.sh", "/usr/local/lib/gpu-workers/concourse-worker.sh"];
        assert.deepStrictEqual(
            concourse.placedEarlier,
            [ownership, installer, ...ownOfWorker],
            "the worker runs the installer the wrapper placed and the helper the first component placed; its own scripts are in the worker's set",
        );
        assert.deepStrictEqual(
            plan.files.filter((f) => ownOfWorker.includes(f.path)).map((f) => [f.component, f.resource]),
            ownOfWorker.map(() => ["ConcourseWorker", "w-files"]),
            "a file of the program's own folders is still its component's, placed by the worker's set",
        );
        assert.deepStrictEqual(
            plan.files.filter((f) => f.path === ownership).map((f) => f.component),
            ["ContainerdRuntime"],
        );
        const g = recordGraph();
        new GpuWorker(
            host.name,
            workerArgs(host, () => pulumi.secret("key"), process.cwd()),
        );
        await settle(g);
        const set = g.placed(installer).resource;
        assert.strictEqual(set.name, "w-files");
        // Listed whole in a preview (which shortens a created resource's stdin to its first lines), and other paths make a new set.
        assert.deepStrictEqual(
            (set.inputs.triggers as unknown[]).slice(1),
            [...fileSetContents(String(set.inputs.stdin)).keys()],
            "a set's paths are its triggers",
        );
        assert.throws(() => g.placed(installer, "w-concourse-"), /no resource places/, "the worker does not place it again");
    });

    it("FabricServiceVm on its own, in a user's terms: image, NVSwitches and partitions; the VM's size, URI and wait from SERVICE_VM_DEFAULTS", async () => {
        const g = recordGraph();
        const given = { image: "/var/lib/gpu-workers/fabric.qcow2", nvswitchPci: ["0000:09:00.0", "0000:0a:00.0"], partitions: [1, 2] };
        new FabricServiceVm("board-fabric", {
            connection: { host: "10.0.0.1", port: 22, user: "root", privateKey: "k", hostKey: HOST_KEY },
            ...given,
        });
        await settle(g);
        const expected = renderFabricServiceVm({ name: "board-fabric", ...SERVICE_VM_DEFAULTS, memoryControllerPci: [], ...given });
        const domain = expected.files.find((f) => f.path.endsWith(".xml"))!;
        const placed = g.placed(domain.path);
        assert.strictEqual(placed.resource.name, fileResourceName("board-fabric", domain));
        assert.strictEqual(placed.content, domain.content, "the domain has the default size and name");
        assert.match(domain.content, new RegExp(`<memory unit="MiB">${SERVICE_VM_DEFAULTS.memoryMiB}</memory>`));
    });

    it("on its own, a component places everything it runs", async () => {
        const g = recordGraph();
        const [host] = parseStackConfig(stackWith({ name: "solo", inventory: NO_GPU }));
        const settings = linkOf(planOf(host).links, "ConcourseWorker")!.settings;
        const rendered = renderConcourseWorker(settings);
        // In a user's terms: the containerd config is the component's own, the runc swap a yes or no.
        const { containerdConfig: _ownConfig, wrapRunc, ...terms } = settings;
        new ConcourseWorker("solo-concourse", {
            connection: { host: "10.0.0.1", port: 22, user: "root", privateKey: "k", hostKey: HOST_KEY },
            ...terms,
            wrapRunc: wrapRunc !== undefined,
            tsaPublicKey: settings.tsaPublicKey!,
        });
        await settle(g);
        for (const file of rendered.files) assert.ok(g.placed(file.path, "solo-concourse-"), `${file.path} is placed`);
        assert.strictEqual(
            g.placed("/usr/local/lib/gpu-workers/install-runc-wrapper.sh").content,
            rendered.files.find((f) => f.path.endsWith("install-runc-wrapper.sh"))!.content,
        );
    });
});
