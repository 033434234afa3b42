import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { GeneratedSecretKind } from "./generated-secret-ops";

// A dynamic provider: the secret is generated in the program and kept in the state as a secret; no random provider plugin is to be had.
const provider = lazyProvider("generated-secret", "generated secret");

/** A secret generated once and kept in the state: a password, or an RSA private key (PEM) with its public half. */
export class GeneratedSecret extends LazyProviderResource {
    /** The password, or the private key in PEM (secret). */
    declare public readonly value: pulumi.Output<string>;
    /** An RSA key's public half as SSH writes it ("ssh-rsa AAAA... comment"); empty for a password. */
    declare public readonly publicKeyOpenssh: pulumi.Output<string>;

    constructor(name: string, args: { kind: GeneratedSecretKind; comment?: string }, opts?: pulumi.CustomResourceOptions) {
        super(
            provider,
            name,
            { kind: args.kind, ...(args.comment ? { comment: args.comment } : {}), value: undefined, publicKeyOpenssh: undefined },
            { ...opts, additionalSecretOutputs: ["value"] },
            "gpu-workers",
            "GeneratedSecret",
        );
    }
}
