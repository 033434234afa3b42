import * as pulumi from "@pulumi/pulumi";
import type { HostOwner } from "../../lib/host/owner-records";
import { lazyProvider } from "../lazy-provider";
import type { SshTarget } from "./ssh";

const provider = lazyProvider("host-command", "host command");

export interface HostCommandArgs {
    /** Where to run it; stored as a secret (it holds the private key). */
    connection: pulumi.Input<SshTarget>;
    /** Run on create, and on any change of an input when `update` is absent. */
    create: pulumi.Input<string>;
    /** Run on a change of an input; absent: `create` again. */
    update?: pulumi.Input<string>;
    /** Run when the resource is deleted: undoes `create`. */
    delete?: pulumi.Input<string>;
    /** Text handed to the command on stdin (a file's content: shows in the preview diff). */
    stdin?: pulumi.Input<string>;
    /** A local file handed to the command on stdin instead, with its sha256. */
    stdinFile?: pulumi.Input<string>;
    /** The sha256 of `stdinFile`: a changed file runs `update` again. */
    stdinSha256?: pulumi.Input<string>;
    /** sha256 of each file (by host path) the command depends on: a changed file runs `update` again. */
    fileSha256?: pulumi.Input<Record<string, string>>;
    /** The same for secret files, kept apart so the others stay readable in the preview. */
    secretFileSha256?: pulumi.Input<Record<string, string>>;
    /** HostDriftGuard's epoch: when a refresh found drift it goes up, and the command runs again. */
    reconverge?: pulumi.Input<number>;
    /** A change here replaces the resource (delete, then create). */
    triggers?: pulumi.Input<unknown[]>;
    /**
     * What it applies on the host (a file's path, a step's name), recorded there as this
     * resource's: the delete undoes it only while no other resource has applied it since, as a
     * host renamed in the stack does with new resources (lib/host/owner-records.ts). Default: none
     * (the delete always runs).
     */
    owner?: pulumi.Input<HostOwner>;
}

/**
 * A command run on a host over SSH. It stands in for @pulumi/command's remote Command,
 * whose provider plugin cannot be built from Go modules here (see the README).
 */
export class HostCommand extends pulumi.dynamic.Resource {
    declare public readonly stdout: pulumi.Output<string>;
    declare public readonly stderr: pulumi.Output<string>;
    declare public readonly create: pulumi.Output<string>;
    declare public readonly stdin: pulumi.Output<string | undefined>;

    constructor(name: string, args: HostCommandArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            provider,
            name,
            { ...args, connection: pulumi.secret(args.connection), stdout: undefined, stderr: undefined },
            {
                ...opts,
                additionalSecretOutputs: ["connection", ...(opts?.additionalSecretOutputs ?? [])],
            },
            "gpu-workers",
            "HostCommand",
        );
    }
}
