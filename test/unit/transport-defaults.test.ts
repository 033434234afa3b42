/** A transport's defaults are the same whether a component or the stack config fills them in. */
import * as assert from "assert";
import { LXD_TRANSPORT_DEFAULTS, SSH_USER_DEFAULT } from "../../components/lib/host/transport-defaults";
import { lxdWorkerTransportSchema } from "../../components/lib/settings/transport-schema";
import { lxdTransportSchema, sshTransportSchema } from "../../stacks/config/schema";
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

describe("transport defaults", () => {
    it("an LXD transport given only its instance, image and port gets the components' defaults from the stack schema too", () => {
        const given = { instance: "gpu-a", image: "debian-12", sshPort: 2201 };
        const { server: _server, ...stack } = lxdTransportSchema.parse(given);
        const { serverPorts, ...component } = lxdWorkerTransportSchema.parse(given);
        assert.deepStrictEqual(stack, component);
        assert.deepStrictEqual(serverPorts, {});
        assert.deepStrictEqual(
            { type: stack.type, profiles: stack.profiles, config: stack.config, sshAddress: stack.sshAddress, user: stack.user },
            {
                type: LXD_TRANSPORT_DEFAULTS.type,
                profiles: LXD_TRANSPORT_DEFAULTS.profiles,
                config: LXD_TRANSPORT_DEFAULTS.config,
                sshAddress: LXD_TRANSPORT_DEFAULTS.sshAddress,
                user: LXD_TRANSPORT_DEFAULTS.user,
            },
        );
        assert.deepStrictEqual({ gpuCdi: stack.gpuCdi, shiftWritable: stack.shiftWritable }, { gpuCdi: false, shiftWritable: true });
    });

    it("an SSH transport's user is the same default", () => {
        assert.strictEqual(sshTransportSchema.parse({ host: "10.0.0.5", privateKeySecret: "k", hostKey: HOST_KEY }).user, SSH_USER_DEFAULT);
    });
});
