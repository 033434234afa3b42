/** LxdInstance as a Pulumi resource (under mocks): its type, its inputs, what stays secret. */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { LxdInstance } from "../../components/providers/lxd/instance";

describe("LxdInstance resource (Pulumi mocks)", () => {
    const seen: pulumi.runtime.MockResourceArgs[] = [];
    before(() => {
        void pulumi.runtime.setMocks(
            {
                newResource: (args) => {
                    seen.push(args);
                    return { id: `${args.name}-id`, state: { ...args.inputs, status: "Running" } };
                },
                call: (args) => args.inputs,
            },
            "gpu-workers",
            "test",
            false,
        );
    });

    it("registers a dynamic resource with the serialized provider; the connection stays secret", async () => {
        const key = pulumi.secret("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
        const instance = new LxdInstance("gpu-a-instance", {
            server: { url: "https://10.0.0.5:8443", clientCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n", clientKey: key },
            name: "gpu-a",
            image: "gpu-workers/debian-12",
            devices: { sshd: { type: "proxy", listen: "tcp:127.0.0.1:2201", connect: "tcp:127.0.0.1:22" } },
            files: [{ path: "/root/.ssh/authorized_keys", content: pulumi.output("ssh-ed25519 AAAA"), mode: "0600" }],
        });
        const urn = await new Promise<string>((r) => instance.urn.apply(r));
        assert.match(urn, /::pulumi-nodejs:dynamic\/lxd:Instance::gpu-a-instance$/);
        const args = seen.find((s) => s.name === "gpu-a-instance")!;
        assert.strictEqual(typeof args.inputs.__provider, "string");
        assert.match(args.inputs.__provider, /"lxd-instance"/, "the provider names its operations by id");
        assert.match(args.inputs.__provider, /providers\/registry/, "and finds them through the registry");
        assert.doesNotMatch(args.inputs.__provider, /PRIVATE KEY/, "no secret in the serialized provider");
        assert.strictEqual(await pulumi.isSecret(instance.server), true);
        assert.strictEqual(await new Promise((r) => instance.status.apply(r)), "Running");
        assert.deepStrictEqual(await new Promise((r) => instance.profiles.apply(r)), ["default"], "defaults are outputs too");
        assert.strictEqual(await new Promise((r) => instance.running.apply(r)), true);
    });
});
