/**
 * The resource graph of whole workers under Pulumi mocks: types, names, parents and the
 * dependsOn order of the chain, for each kind of host the project supports.
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { GpuWorker } from "../../components/chain/gpu-worker";
import { parseStackConfig } from "../../stacks/checks/stack";
import { workerArgs } from "../../stacks/args/component-args";
import { A100_MIG, AMD_PHOENIX, HGX_H100_8X, NO_GPU, RTX_A500_LAPTOP, stackWith } from "../fixtures/stacks/inventories";
import { GraphRecorder, recordGraph, RecordedResource, settle } from "../support/pulumi-graph";
import { GpuInventoryInput } from "../../components/lib/gpu/inventory";
import { SharedGpuBoard } from "../../components/chain/shared-gpu-board";
import { parseStack } from "../../stacks/checks/stack";
import { boardArgs } from "../../stacks/args/board-args";
import { boardStack } from "../fixtures/stacks/boards";
import { serviceVmPaths } from "../../components/lib/fabric/service-vm";

const COMPONENT_TYPES = {
    worker: "gpu-workers:worker:GpuWorker",
    host: "gpu-workers:host:GpuHost",
    driver: "gpu-workers:driver:GpuDriver",
    toolkit: "gpu-workers:toolkit:ContainerToolkit",
    containerd: "gpu-workers:containerd:ContainerdRuntime",
    wrapper: "gpu-workers:wrapper:RuncWrapper",
    fabric: "gpu-workers:fabric:FabricManager",
    concourse: "gpu-workers:concourse:ConcourseWorker",
};

async function buildWorkers(...hosts: { name: string; inventory: GpuInventoryInput; extra?: Record<string, unknown> }[]): Promise<GraphRecorder> {
    const recorder = recordGraph();
    for (const host of parseStackConfig(stackWith(...hosts))) {
        new GpuWorker(
            host.name,
            workerArgs(host, () => pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----test"), process.cwd()),
        );
    }
    await settle(recorder);
    return recorder;
}

function componentsOf(g: GraphRecorder, host: string): Record<string, RecordedResource | undefined> {
    const find = (type: string) => g.ofType(type).find((r) => r.name.startsWith(`${host}-`) || r.name === host);
    return Object.fromEntries(Object.entries(COMPONENT_TYPES).map(([k, t]) => [k, find(t)]));
}

/** The children that act on the host (files and steps), not helpers such as generated keys. */
function childrenOf(g: GraphRecorder, parent: RecordedResource): RecordedResource[] {
    return g.resources.filter((r) => r.parent === parent.urn && r.type === "command:remote:Command");
}

/** A file in the program's own folders (/usr/local/lib/gpu-workers, /etc/gpu-workers), which no step writes. */
function placedInOwnFolder(r: RecordedResource): boolean {
    return /-file-(usr-local-lib-gpu-workers|etc-gpu-workers)-/.test(r.name) || (r.name.endsWith("-files") && !r.name.endsWith("-system-files"));
}

/**
 * Every child of `later` waits for every child of `earlier`, but for its files in the program's
 * own folders: those go on the host as soon as it is verified (while earlier steps run).
 */
function assertOrdered(g: GraphRecorder, earlier: RecordedResource, later: RecordedResource): void {
    const first = childrenOf(g, earlier);
    const second = childrenOf(g, later).filter((r) => !placedInOwnFolder(r));
    assert.ok(first.length > 0 && second.length > 0, `${earlier.name} and ${later.name} should have children`);
    for (const b of second) for (const a of first) assert.ok(g.dependsOn(b, a), `${b.name} should wait for ${a.name}`);
}

describe("worker resource graph (Pulumi mocks)", function () {
    this.timeout(30000);

    it("no GPU: no driver, toolkit or fabricmanager; containerd -> wrapper -> concourse", async () => {
        const g = await buildWorkers({ name: "cpu-a", inventory: NO_GPU });
        const c = componentsOf(g, "cpu-a");
        assert.ok(c.worker && c.host && c.containerd && c.wrapper && c.concourse);
        assert.strictEqual(c.driver, undefined);
        assert.strictEqual(c.toolkit, undefined);
        assert.strictEqual(c.fabric, undefined);
        for (const k of ["host", "containerd", "wrapper", "concourse"]) assert.strictEqual(c[k]!.parent, c.worker.urn, `${k} is a child of the worker`);
        assertOrdered(g, c.host, c.containerd);
        assertOrdered(g, c.containerd, c.wrapper);
        assertOrdered(g, c.wrapper, c.concourse);
    });

    it("RTX A500 laptop: the full NVIDIA chain in order, tags on the unit", async () => {
        const g = await buildWorkers({ name: "laptop", inventory: RTX_A500_LAPTOP });
        const c = componentsOf(g, "laptop");
        assertOrdered(g, c.host!, c.driver!);
        assertOrdered(g, c.driver!, c.toolkit!);
        assertOrdered(g, c.toolkit!, c.containerd!);
        assertOrdered(g, c.containerd!, c.wrapper!);
        assertOrdered(g, c.wrapper!, c.concourse!);
        assert.strictEqual(c.fabric, undefined);
        assert.ok(
            g.dependsOn(g.byName("laptop-driver-gpu-driver"), g.byName("laptop-host-inventory")),
            "nothing touches the host before its inventory is verified",
        );
        assert.ok(g.dependsOn(g.byName("laptop-host-inventory"), g.byName("laptop-host-discover")));
        // Off the critical path: the wrapper's own script, in the worker's one set of the program's own files, waits for the verified host, not for the containerd steps; its step waits for both.
        const script = g.placed("/usr/local/lib/gpu-workers/install-runc-wrapper.sh").resource;
        assert.strictEqual(script.name, "laptop-files");
        for (const before of ["laptop-host-inventory", "laptop-drift"]) assert.ok(g.dependsOn(script, g.byName(before)), `the script waits for ${before}`);
        assert.ok(!g.dependsOn(script, g.byName("laptop-containerd-containerd-runtime")), "the script does not wait for the containerd step");
        assert.ok(g.dependsOn(g.byName("laptop-runc-wrapper-runc-wrapper"), g.byName("laptop-containerd-containerd-runtime")));
        assert.ok(g.dependsOn(g.byName("laptop-runc-wrapper-runc-wrapper"), script));
        const unit = g.placed("/etc/systemd/system/concourse-worker.service", "laptop-concourse-").content;
        assert.match(unit, /--tag=gpu-devices=0/);
        assert.match(unit, /--tag=gpu-model=rtx-a500-laptop-gpu/);
    });

    it("8x H100 HGX with NVSwitches: fabricmanager after the driver, before the worker", async () => {
        const g = await buildWorkers({ name: "hgx", inventory: HGX_H100_8X });
        const c = componentsOf(g, "hgx");
        assert.ok(c.fabric, "fabricmanager is created where NVSwitches are declared");
        assert.strictEqual(c.fabric.parent, c.worker!.urn);
        assertOrdered(g, c.driver!, c.fabric);
        assertOrdered(g, c.fabric, c.concourse!);
        const cfg = g.placed("/usr/share/nvidia/nvswitch/fabricmanager.cfg", "hgx-fabric-manager-").content;
        assert.match(cfg, /^FABRIC_MODE=0$/m);
    });

    it("AMD Phoenix gfx1103: the wrapper config carries the HSA override and kfd", async () => {
        const g = await buildWorkers({ name: "apu", inventory: AMD_PHOENIX });
        const c = componentsOf(g, "apu");
        assert.ok(c.driver && c.toolkit && c.wrapper);
        const config = g.placed("/etc/gpu-workers/runc-wrapper.json", "apu-");
        assert.strictEqual(
            config.resource.parent,
            c.worker!.urn,
            "the wrapper config, in the program's own folder, is placed by the worker's set of those files",
        );
        assert.ok(g.dependsOn(g.byName("apu-runc-wrapper-runc-wrapper"), config.resource), "the wrapper's step waits for it");
        const body = JSON.parse(config.content) as unknown;
        assert.strictEqual(JSON.stringify(body).includes("HSA_OVERRIDE_GFX_VERSION"), true);
        assert.ok(JSON.stringify(body).includes("/dev/kfd"));
    });

    it("A100 with MIG: the CDI step checks the MIG devices", async () => {
        const g = await buildWorkers({ name: "mig", inventory: A100_MIG });
        const cdi = g.byName("mig-toolkit-cdi-spec");
        assert.match(String(cdi.inputs.create), /nvidia\.com\/gpu=0:0 nvidia\.com\/gpu=0:1 nvidia\.com\/gpu=0:2\n/);
        const check = g.byName("mig-toolkit-cdi-spec-check");
        assert.strictEqual(check.type, "pulumi-nodejs:dynamic/gpu-workers:CdiSpecCheck");
        assert.ok(g.dependsOn(check, cdi), "the generated spec is validated after it is generated");
        assert.strictEqual(check.inputs.path, "/etc/cdi/nvidia.yaml");
    });

    it("two hosts in one stack: no name collides, each chain stays on its host", async () => {
        const g = await buildWorkers({ name: "gpu-a", inventory: RTX_A500_LAPTOP }, { name: "gpu-b", inventory: HGX_H100_8X });
        const keys = g.resources.map((r) => `${r.type}::${r.name}`);
        assert.strictEqual(new Set(keys).size, keys.length, "every type+name is unique");
        const a = componentsOf(g, "gpu-a");
        const b = componentsOf(g, "gpu-b");
        assert.ok(!g.dependsOn(childrenOf(g, b.concourse!)[0], childrenOf(g, a.wrapper!)[0]), "hosts converge independently");
        assert.ok(a.fabric === undefined && b.fabric !== undefined);
    });

    it("a shared board: vfio step, then the service VM, then each worker VM (its partition active first)", async () => {
        const g = recordGraph();
        const [board] = parseStack(boardStack([{ gpus: 4 }, { gpus: 2 }, { gpus: 2 }])).boards;
        new SharedGpuBoard(
            board.name,
            boardArgs(board, () => pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----test"), process.cwd()),
        );
        await settle(g);
        const top = g.byName("hgx");
        assert.strictEqual(top.type, "gpu-workers:board:SharedGpuBoard");
        const vm = g.byName("hgx-fabric-vm");
        assert.strictEqual(vm.type, "gpu-workers:fabric:FabricServiceVm");
        assert.strictEqual(vm.parent, top.urn);
        const inventory = g.byName("hgx-host-inventory");
        const vfio = g.byName("hgx-fabric-vm-nvswitch-vfio");
        const serviceVm = g.byName("hgx-fabric-vm-service-vm");
        assert.ok(g.dependsOn(vfio, inventory), "the board is checked before its NVSwitches move");
        assert.ok(g.dependsOn(serviceVm, vfio), "the VM starts with its functions on vfio-pci");
        assert.ok(g.dependsOn(serviceVm, g.placed(serviceVmPaths("hgx-fabric").domainXml).resource));
        for (const [worker, partition, pci] of [
            ["hgx-w1", 1, "0000:18:00.0"],
            ["hgx-w2", 5, "0000:ba:00.0"],
            ["hgx-w3", 6, "0000:9a:00.0"],
        ] as const) {
            const w = g.byName(worker);
            assert.strictEqual(w.type, COMPONENT_TYPES.worker);
            assert.strictEqual(w.parent, top.urn);
            const instance = g.byName(`${worker}-host-instance`);
            assert.strictEqual(instance.inputs.type, "virtual-machine");
            assert.ok(g.dependsOn(instance, serviceVm), `${worker}'s VM waits for the service VM (partition ${partition} active)`);
            const devices = instance.inputs.devices as Record<string, Record<string, string>>;
            assert.strictEqual(devices.gpu0.pci, pci, `${worker}: the first GPU of partition ${partition}`);
            assert.strictEqual(devices.sshd.nat, "true");
            assert.ok(!("nvidia.runtime" in (instance.inputs.config as object)), "a VM has its own driver");
            assert.match(
                g.placed("/etc/systemd/system/concourse-worker.service", `${worker}-concourse-`).content,
                new RegExp(`--tag=gpu-fabric-partition=${partition}`),
            );
        }
        assert.strictEqual(g.ofType(COMPONENT_TYPES.fabric).length, 0, "no worker runs fabricmanager itself");
    });

    it("the worker key is generated and stays secret", async () => {
        const g = await buildWorkers({ name: "k", inventory: NO_GPU });
        assert.strictEqual(
            g.ofType("pulumi-nodejs:dynamic/gpu-workers:GeneratedSecret").filter((r) => r.name === "k-concourse-key" && r.inputs.kind === "rsa-private-key")
                .length,
            1,
            "an RSA key: Concourse reads no other",
        );
        const keyFile = g.byName("k-concourse-file-etc-concourse-worker_key");
        const stdin = keyFile.inputs.stdin as { [k: string]: unknown };
        assert.strictEqual(stdin?.[pulumi.runtime.specialSigKey], pulumi.runtime.specialSecretSig, "the key file's content is sent as a secret");
    });
});
