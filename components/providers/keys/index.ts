import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";

// A dynamic provider: the key pair is generated in the program (OpenSSH format); no tls provider plugin is to be had.
const provider = lazyProvider("ssh-key", "ssh key");

/** An ED25519 key pair generated once and kept in the state; the private half is a secret. */
export class SshKeyPair extends LazyProviderResource {
    /** OpenSSH private key (secret). */
    declare public readonly privateKeyOpenssh: pulumi.Output<string>;
    /** "ssh-ed25519 AAAA... comment" */
    declare public readonly publicKeyOpenssh: pulumi.Output<string>;

    constructor(name: string, args: { comment?: string } = {}, opts?: pulumi.CustomResourceOptions) {
        super(
            provider,
            name,
            { comment: args.comment ?? name, privateKeyOpenssh: undefined, publicKeyOpenssh: undefined },
            {
                ...opts,
                additionalSecretOutputs: ["privateKeyOpenssh"],
            },
            "gpu-workers",
            "SshKeyPair",
        );
    }
}

export { generateOpensshKeyPair, OpensshKeyPair, publicKeyOfPrivateKey } from "./openssh";
export { GeneratedSecret } from "./generated-secret";
