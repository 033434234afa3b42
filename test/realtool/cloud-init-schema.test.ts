/**
 * Every cloud-init user-data the program renders passes cloud-init's own schema check
 * (`cloud-init schema --config-file`, cloud-init 22.4 as in Debian 12): the service VM's seed
 * (fabricmanager and its partitions) and a worker VM's SSH access. A control shows the check
 * refusing what cloud-init would not take.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { planHostAccess } from "../../components/lib/plan/host-access";
import { renderAccessUserData } from "../../components/lib/render/lxd-access";
import { renderServiceVmUserData } from "../../components/lib/fabric/service-vm";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { parseStack } from "../../stacks/checks/stack";
import { exampleStack } from "../fixtures/stacks/boards";
import { ensureCommands } from "../support/tools";

describe("cloud-init user-data against cloud-init's schema", function () {
    this.timeout(120_000);
    let dir: string;
    const plan = () => parseStack(exampleStack()).plans.boards[0];

    before(() => {
        ensureCommands(["cloud-init"], ["cloud-init"]);
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-cloud-init-"));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    function schema(text: string): { status: number | null; out: string } {
        const file = path.join(dir, "user-data");
        fs.writeFileSync(file, text);
        const r = spawnSync("cloud-init", ["schema", "--config-file", file], { encoding: "utf8" });
        return { status: r.status, out: r.stdout + r.stderr };
    }

    it("the service VM's seed", () => {
        const r = schema(renderServiceVmUserData(plan().serviceVm.settings));
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /Valid cloud-config/);
    });

    it("a worker VM's SSH access (login key, pinned host key, sshd drop-in)", () => {
        const worker = plan().workers[0];
        const access = planHostAccess(worker.hostComponent, "GpuHost", worker.hostTransport);
        const login = generateOpensshKeyPair("login");
        const host = generateOpensshKeyPair("host");
        const generated: Record<string, string> = {
            "login-key.public": login.publicKeyOpenssh,
            "host-key.private": host.privateKeyOpenssh,
            "host-key.public": host.publicKeyOpenssh,
        };
        const r = schema(renderAccessUserData(access.lxd!.files.map((f) => ({ ...f, content: f.generated ? generated[f.generated] : f.content }))));
        assert.strictEqual(r.status, 0, r.out);
        assert.match(r.out, /Valid cloud-config/);
    });

    it("control: what cloud-init would not take is refused", () => {
        const r = schema("#cloud-config\nssh_genkeytypes: []\nwrite_files:\n  - permissions: 600\n");
        assert.notStrictEqual(r.status, 0);
        assert.match(r.out, /ssh_genkeytypes: \[\] is too short/);
        assert.match(r.out, /write_files\.0: 'path' is a required property/);
    });
});
