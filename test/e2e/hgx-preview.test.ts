/**
 * The example HGX stack (examples/stacks/Pulumi.hgx.yaml: a board shared by two worker VMs)
 * previewed through the real Pulumi engine with every host unreachable (the board's address
 * and its LXD are on TEST-NET, where nothing answers): everything is known before a host is
 * reached, and the preview shows the service VM's domain, the vfio step, the worker VMs and
 * their tags. No LXD daemon and no port of this machine is used.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PULUMI_UNKNOWN } from "../../components/lib/lxd/validate";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { ensureEngine, makeProject, makeStack, makeTempDir, tempDirName } from "../support/engine";
import { fileSetContents } from "../support/pulumi-graph";
import { clientCertificate } from "../support/pki";
import { renderExampleStack } from "../support/golden-stacks";
import { ensureCommands } from "../support/tools";
import { exampleStack } from "../fixtures/stacks/boards";

/** The example with its addresses moved to TEST-NET-1 (RFC 5737): nothing can answer there. */
function unreachable(hosts: Record<string, unknown>[]): Record<string, unknown>[] {
    return JSON.parse(JSON.stringify(hosts).replace(/10\.0\.0\.20/g, "192.0.2.20"));
}

describe("end to end: the example HGX stack previews with its hosts unreachable", function () {
    this.timeout(600_000);
    const root = tempDirName("gw-e2e-hgx-");
    before(() => makeTempDir(root));
    after(() => fs.rmSync(root, { recursive: true, force: true }));

    it("shows the service VM's domain, the vfio step, the worker VMs and their tags", async () => {
        const env = ensureEngine(path.join(root, "state"));
        const project = makeProject(path.join(root, "project"));
        ensureCommands(["openssl"], ["openssl"]);
        const { cert, key } = clientCertificate(path.join(root, "client"), "gpu-workers-e2e");
        const example = exampleStack();
        renderExampleStack("hgx", path.join(root, "render"));
        const stack = await makeStack(project, "hgx", env, {
            defaults: example.defaults,
            hosts: unreachable(example.hosts),
            secrets: { "hgx-a-ssh-key": generateOpensshKeyPair("hgx-a").privateKeyOpenssh, "hgx-a-lxd-cert": cert, "hgx-a-lxd-key": key },
        });
        // The engine's events carry every input in full; the terminal view shortens long ones.
        const inputs = new Map<string, Record<string, unknown>>();
        const preview = await stack.preview({
            diff: true,
            onEvent: (e) => {
                const m = e.resourcePreEvent?.metadata;
                if (m?.new?.inputs) inputs.set(m.urn.split("::").pop()!, m.new.inputs);
            },
        });
        const out = preview.stdout;
        const input = (name: string) => {
            const got = inputs.get(name);
            assert.ok(got, `the preview plans ${name}`);
            return got;
        };
        // Every command on the board's own machine (there before the up) is known before it is reached. The worker VMs
        // are made by this up: their commands name the machine (its instance UUID, in their owner ids), unknown until it exists.
        const boardCommands = [...inputs].filter(([name, i]) => name.startsWith("hgx-a-") && !/^hgx-a-w\d/.test(name) && "create" in i);
        for (const planned of ["hgx-a-host-discover", "hgx-a-fabric-vm-nvswitch-vfio", "hgx-a-fabric-vm-service-vm", "hgx-a-fabric-vm-files"])
            assert.ok(
                boardCommands.some(([name]) => name === planned),
                `the preview plans ${planned}`,
            );
        const unknown = boardCommands.filter(([, i]) => typeof i.create !== "string" || i.create === PULUMI_UNKNOWN).map(([name]) => name);
        assert.deepStrictEqual(unknown, [], "every command on the board's machine is known before the host is reached");
        // The service VM's domain: exactly the four NVSwitches and the memory controller, as the render has it.
        assert.ok(out.includes("hgx-a-fabric-vm-files") && out.includes("==> /usr/local/lib/gpu-workers/"), "the terminal preview shows the board's file set");
        const placed = fileSetContents(String(input("hgx-a-fabric-vm-files").stdin));
        const domain = placed.get("/etc/gpu-workers/fabric-vm/hgx-a-fabric/domain.xml") ?? "";
        assert.strictEqual(
            domain,
            fs.readFileSync(path.join(root, "render", "hgx-a", "etc/gpu-workers/fabric-vm/hgx-a-fabric/domain.xml"), "utf8"),
            "the domain the offline render writes",
        );
        assert.strictEqual((domain.match(/<hostdev mode="subsystem" type="pci" managed="no">/g) ?? []).length, 5);
        for (const bus of ["0x09", "0x0a", "0x0b", "0x0c"])
            assert.ok(domain.includes(`<address domain="0x0000" bus="${bus}" slot="0x00" function="0x0"/>`), `NVSwitch ${bus}`);
        assert.ok(domain.includes(`<address domain="0x0000" bus="0x03" slot="0x00" function="0x1"/>`), "the memory controller");
        assert.match(
            placed.get("/etc/gpu-workers/fabric-vm/hgx-a-fabric/seed/user-data") ?? "",
            /^ {6}FABRIC_MODE=1$/m,
            "the seed runs fabricmanager in shared NVSwitch mode",
        );
        // The vfio step and the service VM step.
        const vfio =
            "/usr/local/lib/gpu-workers/nvswitch-vfio.sh ensure --nvswitch 0000:09:00.0 --nvswitch 0000:0a:00.0 --nvswitch 0000:0b:00.0 --nvswitch 0000:0c:00.0 --memory-controller 0000:03:00.1";
        // The step's own command, as a line of the remote command (after the lines that drain stdin and name the files it needs).
        assert.ok(String(input("hgx-a-fabric-vm-nvswitch-vfio").create).split("\n").includes(vfio), "the vfio step's command");
        assert.ok(
            out.includes("nvswitch-vfio.sh ensure --nvswitch 0000:09:00.0 --nvswitch 0000:0a:00.0"),
            "the terminal preview shows the vfio step (long values shortened)",
        );
        assert.match(out, /fabric-service-vm\.sh ensure --name hgx-a-fabric --uri qemu:\/\/\/system/);
        // The worker VMs, each with its partition's GPUs.
        for (const [worker, gpus] of [
            ["hgx-a-w1", ["0000:0d:00.0", "0000:0e:00.0", "0000:0f:00.0", "0000:10:00.0"]],
            ["hgx-a-w2", ["0000:11:00.0", "0000:12:00.0", "0000:13:00.0", "0000:14:00.0"]],
        ] as const) {
            const vm = input(`${worker}-host-instance`);
            assert.strictEqual(vm.type, "virtual-machine");
            assert.deepStrictEqual(
                Object.values(vm.devices as Record<string, Record<string, string>>)
                    .filter((d) => d.type === "gpu")
                    .map((d) => d.pci),
                gpus,
            );
            assert.ok(out.includes(`${worker}-host-instance`));
        }
        assert.match(out, /type\s*: "virtual-machine"/);
        // Their tags, from the one GPU plan, in the stack's outputs.
        for (const tag of ["gpu-fabric-partition=1", "gpu-fabric-partition=2", "gpu-count=4", "gpu-model=h100-80gb-hbm3", "hgx"]) {
            assert.ok(out.includes(`"${tag}"`), `preview shows tag ${tag}`);
        }
        assert.doesNotMatch(out, /BEGIN (OPENSSH|EC) PRIVATE KEY/, "no key in the preview");
        await stack.workspace.removeStack("hgx");
    });
});
