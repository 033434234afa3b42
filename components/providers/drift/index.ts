import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { SshTarget } from "../host/ssh";

// A dynamic provider: its check runs on refresh (read), and its epoch goes up on drift; a remote.Command runs nothing on refresh.
const provider = lazyProvider("host-drift-guard", "host drift guard");

export interface HostDriftGuardArgs {
    /** Where to run the check; stored as a secret (it holds the private key). */
    connection: pulumi.Input<SshTarget>;
    /** The command that runs the check as root (driftCheckCommand of the login user). */
    command: string;
    /** renderDriftCheck(...) of everything the chain places and checks: the command's stdin. */
    check: pulumi.Input<string>;
}

/**
 * Notices on `pulumi refresh` that a host no longer holds what the chain placed (a file
 * changed, the wrapper removed by hand) and raises `epoch`; the chain's commands carry the
 * epoch, so the next `up` runs them again and the host converges back.
 */
export class HostDriftGuard extends LazyProviderResource {
    declare public readonly epoch: pulumi.Output<number>;
    declare public readonly drift: pulumi.Output<string[]>;

    constructor(name: string, args: HostDriftGuardArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            provider,
            name,
            { connection: pulumi.secret(args.connection), command: args.command, check: args.check, epoch: undefined, drift: undefined },
            { ...opts, additionalSecretOutputs: ["connection"] },
            "gpu-workers",
            "HostDriftGuard",
        );
    }
}

export { driftCheckCommand, renderDriftCheck, ExpectedFile } from "../../lib/render/drift-check";
