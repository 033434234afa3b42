/** A transport's defaults are the same whether a component or the stack config fills them in. */
import * as assert from "assert";
import { LXD_TRANSPORT_DEFAULTS, lxdTransportShape, SSH_USER_DEFAULT } from "../../components/lib/host/transport-defaults";
import { lxdTransportSchema, sshTransportSchema } from "../../stacks/config/schema";

describe("transport defaults", () => {
    it("an LXD transport given only its instance, image and port gets the components' defaults from the stack schema too", () => {
        const given = { instance: "gpu-a", image: "debian-12", sshPort: 2201 };
        const { server: _server, ...stack } = lxdTransportSchema.parse(given);
        assert.deepStrictEqual(stack, {
            ...lxdTransportShape(given),
            gpuCdi: LXD_TRANSPORT_DEFAULTS.gpuCdi,
            shiftWritable: LXD_TRANSPORT_DEFAULTS.shiftWritable,
        });
    });

    it("an SSH transport's user is the same default", () => {
        assert.strictEqual(sshTransportSchema.parse({ host: "10.0.0.5", privateKeySecret: "k", hostKey: "ssh-ed25519 AAAA" }).user, SSH_USER_DEFAULT);
    });
});
