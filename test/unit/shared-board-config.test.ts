/**
 * Shared boards in the stack config: a host with fabricManager.mode service-vm is a board,
 * hosts with board: {name, gpus | partition} are its worker VMs. The example HGX stack parses
 * and plans partitions 1 and 2; impossible requests and misplaced keys are refused with their
 * paths, all at once.
 */
import * as assert from "assert";
import { parseStack } from "../../stacks/checks/stack";
import { boardHost, boardStack, boardWorker, exampleStack } from "../fixtures/stacks/boards";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const SHAPES = "8; 4+4; 4+2+2; 4+2+1+1; 4+1+1+1+1; 2+2+2+2; 2+2+2+1+1; 2+2+1+1+1+1; 2+1+1+1+1+1+1; 1+1+1+1+1+1+1+1";

describe("shared boards in the stack config", () => {
    it("the example HGX stack: one board, two worker VMs of four GPUs on partitions 1 and 2", () => {
        const stack = parseStack(exampleStack());
        assert.deepStrictEqual(stack.hosts, [], "no host is a worker on its own");
        assert.strictEqual(stack.boards.length, 1);
        const [board] = stack.boards;
        assert.deepStrictEqual(
            board.workers.map((w) => [w.name, w.board]),
            [
                ["hgx-a-w1", { name: "hgx-a", gpus: 4 }],
                ["hgx-a-w2", { name: "hgx-a", gpus: 4 }],
            ],
        );
        const plan = stack.plans.boards[0];
        assert.deepStrictEqual(
            plan.partitions.map((p) => [p.worker, p.partition.id, p.partition.modules]),
            [
                ["hgx-a-w1", 1, [1, 2, 3, 4]],
                ["hgx-a-w2", 2, [5, 6, 7, 8]],
            ],
        );
        assert.deepStrictEqual(
            plan.workers.map((w) => w.gpu.tags.filter((t) => /^gpu-(count|fabric-partition|devices)=/.test(t))),
            [
                ["gpu-count=4", "gpu-devices=0,1,2,3", "gpu-fabric-partition=1"],
                ["gpu-count=4", "gpu-devices=0,1,2,3", "gpu-fabric-partition=2"],
            ],
        );
        // Each worker's LXD VM gets its partition's GPUs by the board's PCI addresses, as modules 1-4 and 5-8 sit there.
        const gpus = (i: number) =>
            Object.values(plan.workers[i].hostTransport.lxd!.devices)
                .filter((d) => d.type === "gpu")
                .map((d) => d.pci);
        assert.deepStrictEqual(gpus(0), ["0000:0d:00.0", "0000:0e:00.0", "0000:0f:00.0", "0000:10:00.0"]);
        assert.deepStrictEqual(gpus(1), ["0000:11:00.0", "0000:12:00.0", "0000:13:00.0", "0000:14:00.0"]);
        // The same ids in the GPU plan: CDI ids as nvidia-ctk names them inside the VM.
        assert.deepStrictEqual(plan.workers[0].gpu.cdiDevices, ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=2", "nvidia.com/gpu=3"]);
    });

    it("refuses three workers of three GPUs, listing the shapes the board allows", () => {
        assert.deepStrictEqual(problemsOf(boardStack([{ gpus: 3 }, { gpus: 3 }, { gpus: 3 }])), [
            "hosts[0] (board hgx): no partitions of the HGX H100 8-GPU table that share no GPU give these workers (hgx-w1 3 GPUs, hgx-w2 3 GPUs, hgx-w3 3 GPUs): " +
                `its partitions have 8, 4, 2 or 1 GPUs, and the shapes possible on this board are ${SHAPES} (the workers' sizes must be part of one)`,
        ]);
    });

    it("one of four and two of two; a partition by id; a clash between ids, named on the worker", () => {
        const plan = parseStack(boardStack([{ gpus: 2 }, { gpus: 4 }, { partition: 6 }])).plans.boards[0];
        assert.deepStrictEqual(
            plan.partitions.map((p) => p.partition.id),
            [5, 1, 6],
        );
        assert.deepStrictEqual(problemsOf(boardStack([{ partition: 1 }, { partition: 3 }])), [
            "hosts[2].board: partition 3 shares GPUs (modules 1, 3) with partition 1 of hgx-w1: active partitions cannot share a GPU",
        ]);
    });

    it("a board without NVSwitches has no fabric to partition, and the stack says so plainly", () => {
        const raw = boardStack([{ gpus: 1 }], { nvswitches: 0 });
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0] (board hgx): the board declares no NVSwitch (nvswitches: 0): it has no NVLink fabric to partition, so there is nothing for a fabricmanager service VM to do; give each worker its GPUs by selection instead",
        ]);
    });

    it("says what does not belong on a board or on a board's worker, every problem at once, each at its path", () => {
        const raw = boardStack([{ gpus: 4 }, { gpus: 4 }], { concourse: { tags: ["x"] } });
        const board = raw.hosts[0];
        board.fabricManager = { mode: "service-vm", partitions: [1] };
        Object.assign(raw.hosts[1], { vendor: "nvidia", selection: [0], fabricManager: { mode: "off" } });
        (raw.hosts[2] as { transport: { lxd: Record<string, unknown> } }).transport.lxd.type = "container";
        raw.hosts.push(boardWorker("stray", "nowhere", { gpus: 1 }, 5), boardWorker("stray2", "plain", {}, 6), {
            name: "plain",
            transport: { ssh: { host: "10.0.0.9", privateKeySecret: "k", hostKey: HOST_KEY } },
            vendor: "none",
            fabric: { nvswitchPci: [] },
        });
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0].concourse: a shared board is no worker itself; give worker settings to its workers (or under defaults)",
            "hosts[0].fabricManager.partitions: a board's partitions come from its workers (board: {name, gpus} or {name, partition} on each)",
            "hosts[1].vendor: a board's worker takes its GPUs from its partition; declare the GPUs on the board",
            "hosts[1].selection: a board's worker gets every GPU of its partition",
            "hosts[1].fabricManager: a board's worker runs no fabricmanager (the board's service VM does)",
            "hosts[2].transport.lxd.network: only for a virtual-machine (a container is reached through a plain proxy)",
            "hosts[2].transport.lxd.address: only for a virtual-machine (a container is reached through a plain proxy)",
            "hosts[4].board: give gpus (how many) or partition (an id of the board's table)",
            "hosts[5].fabric: nvswitchPci: only for a shared board (fabricManager.mode: service-vm); a host that runs fabricmanager itself takes only partitionTable",
            "hosts[3].board.name: there is no host nowhere",
        ]);
    });

    it("a board is reached over SSH, needs its fabric, and is used by a worker", () => {
        const lonely = boardHost("lonely");
        delete lonely.fabric;
        lonely.transport = { lxd: { instance: "lonely", image: "x", sshPort: 2299 } };
        assert.deepStrictEqual(problemsOf({ defaults: boardStack([]).defaults, hosts: [lonely] }), [
            "hosts[0].transport: a shared board is reached over SSH (its libvirt runs the fabricmanager service VM; its workers are LXD VMs)",
            "hosts[0].fabric: required for fabricManager.mode service-vm (the partition table, the NVSwitches' PCI addresses and the service VM)",
            "hosts[0]: no worker uses board lonely (give a worker board: {name: lonely, gpus: N})",
        ]);
    });

    it("a worker VM needs its network and a NAT-able address; a board's worker must be a VM", () => {
        const raw = boardStack([{ gpus: 8 }]);
        const lxd = (raw.hosts[1] as { transport: { lxd: Record<string, unknown> } }).transport.lxd;
        delete lxd.network;
        lxd.sshAddress = "0.0.0.0";
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[1].transport.lxd.network: required for a virtual-machine: LXD forwards sshd to a VM only through NAT to a static address on a managed network",
            "hosts[1].transport.lxd.sshAddress: a virtual machine's sshd is forwarded through NAT, which cannot listen on a wildcard address: give the LXD server's own address",
        ]);
    });

    it("a declared partition table, and a board GPU without a module id", () => {
        const custom = boardStack([{ gpus: 2 }, { gpus: 2 }], {});
        (custom.hosts[0] as { fabric: Record<string, unknown> }).fabric.partitionTable = [
            { id: 20, modules: [1, 2] },
            { id: 21, modules: [3, 4] },
            { id: 22, modules: [1, 2, 3, 4] },
        ];
        assert.deepStrictEqual(
            parseStack(custom).plans.boards[0].partitions.map((p) => p.partition.id),
            [20, 21],
        );
        (custom.hosts[0] as { fabric: Record<string, unknown> }).fabric.partitionTable = "hgx-b200";
        assert.match(problemsOf(custom)[0], /^hosts\[0\]\.fabric\.partitionTable: expected a built-in table \(hgx-h100-8gpu\) or a list of \{id, modules\}$/);
        const noModule = boardStack([{ gpus: 4 }]);
        delete (noModule.hosts[0] as { gpus: Record<string, unknown>[] }).gpus[2].moduleId;
        assert.deepStrictEqual(problemsOf(noModule), [
            "hosts[0] (board hgx): GPU 2 has no moduleId: fabric partitions name GPUs by module id (npm run discover reads them from nvidia-smi -q)",
        ]);
    });
});
