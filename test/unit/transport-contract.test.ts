/**
 * One contract per transport: a component takes every LXD value it took before its transport had
 * a schema (the forms the LXD provider checks before it creates an instance), refuses the rest
 * when it reads its args, with the field's path; the stack's config takes some fields in
 * narrower forms.
 */
import * as assert from "assert";
import { webSpec } from "../../components/chain/concourse-web";
import { GpuWorkerArgsError, workerSpec } from "../../components/chain/gpu-worker";
import { inventorySchema } from "../../components/lib/gpu/inventory";
import { planHost } from "../../components/lib/plan/host-plan";
import { planWebHost } from "../../components/lib/plan/web-plan";
import { lxdTransportSchema } from "../../stacks/config/schema";
import { lxdWebTransportSchema } from "../../stacks/config/web-schema";
import { NO_GPU } from "../fixtures/stacks/inventories";

const server = { socket: "/var/lib/lxd/unix.socket" };
const release = { url: "https://downloads.example.test/concourse.tgz", sha256: "a".repeat(64) };
const inventory = inventorySchema.parse(NO_GPU);

/** The paths a parse refuses, joined as the stack reports them (a key it does not take, by its name). */
function refused(result: { success: boolean; error?: { issues: { path: PropertyKey[]; code: string; keys?: string[] }[] } }): string[] {
    if (result.success) return [];
    return result.error!.issues.flatMap((i) => (i.code === "unrecognized_keys" ? i.keys! : [i.path.map(String).join(".")]));
}

describe("the transport contract", () => {
    it("a worker's LXD instance may log in as another user and bear an upper-case name; the stack takes root and a DNS label", () => {
        const lxd = { server, instance: "Gpu-A", image: "debian-12", sshPort: 2201, user: "ubuntu" };
        const access = planHost(workerSpec("w", { transport: { lxd }, inventory })).hostTransport.lxd!;
        assert.deepStrictEqual({ instance: access.instance, user: access.user }, { instance: "Gpu-A", user: "ubuntu" });
        assert.deepStrictEqual(refused(lxdTransportSchema.safeParse({ ...lxd, server: {} })).sort(), ["instance", "user"]);
    });

    it("the web may be a virtual machine on a network of its own; the stack's web is a container", () => {
        const lxd = { server, instance: "ci", image: "debian-12", sshPort: 2200, type: "virtual-machine" as const, network: "lxdbr0", address: "10.10.0.5" };
        const plan = planWebHost(webSpec("ci", { transport: { lxd }, version: "8.2.5", binary: release, externalUrl: "http://10.10.0.5:8080" }));
        assert.strictEqual(plan.access.lxd!.delivery, "cloud-init");
        assert.deepStrictEqual(
            { network: plan.access.lxd!.instance.network, address: plan.access.lxd!.instance.address },
            { network: "lxdbr0", address: "10.10.0.5" },
        );
        assert.deepStrictEqual(refused(lxdWebTransportSchema.safeParse({ ...lxd, server: {} })).sort(), ["address", "network", "type"]);
    });

    it("a component refuses, with the field's path, what the LXD provider refused when it created the instance", () => {
        const worker = (lxd: object) => () =>
            workerSpec("w", { transport: { lxd: { server, instance: "w", image: "debian-12", sshPort: 2201, ...lxd } }, inventory });
        assert.throws(worker({ image: "images:debian/12" }), (e: Error) => e instanceof GpuWorkerArgsError && /transport\.lxd\.image: /.test(e.message));
        assert.throws(worker({ instance: "1w" }), /transport\.lxd\.instance: expected an LXD instance name/);
        assert.throws(worker({ profiles: ["a b"] }), /transport\.lxd\.profiles\.0: expected a profile name/);
        assert.throws(worker({ datasetSource: "/srv/data", datasetFolders: [".."] }), /transport\.lxd\.datasetFolders\.0: expected one folder name/);
        assert.throws(worker({ config: { "security.privileged": "true" } }), /transport\.lxd\.config: /);
    });
});
