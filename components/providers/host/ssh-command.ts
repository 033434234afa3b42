/**
 * The `builtin` transport's resources: a command and an upload run by the program's own SSH
 * client (ssh.ts: one connection per host), with the inputs of remote.Command and CopyToRemote.
 * Dynamic resources, so they need no plugin.
 */
import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { SshTarget } from "./ssh";

const commandProvider = lazyProvider("ssh-command", "ssh command");
const uploadProvider = lazyProvider("ssh-upload", "ssh upload");

export interface SshCommandArgs {
    /** Where to run it; kept as a secret (it holds the private key). */
    connection: pulumi.Input<SshTarget>;
    /** Run on create. */
    create: pulumi.Input<string>;
    /** Run on any change that does not replace the resource. Default: create. */
    update?: pulumi.Input<string>;
    /** Run on delete, as it was when the resource was created or last updated. Default: nothing. */
    delete?: pulumi.Input<string>;
    /** Handed to create and update (a secret stays one). Default: nothing. */
    stdin?: pulumi.Input<string>;
    /** A change of any of them replaces the resource (the new one is created first). */
    triggers?: pulumi.Input<unknown[]>;
}

/** A command on a host over the program's own SSH client. */
export class SshCommand extends LazyProviderResource {
    /** What the last create or update printed. */
    declare public readonly stdout: pulumi.Output<string>;
    declare public readonly stderr: pulumi.Output<string>;

    constructor(name: string, args: SshCommandArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            commandProvider,
            name,
            { ...args, connection: pulumi.secret(args.connection), stdout: undefined, stderr: undefined },
            // The sum covers the stdin, which may be a secret.
            { ...opts, additionalSecretOutputs: ["connection", "commandSha256"] },
            "gpu-workers",
            "SshCommand",
        );
    }
}

export interface SshUploadArgs {
    /** Where to copy it; kept as a secret (it holds the private key). */
    connection: pulumi.Input<SshTarget>;
    /** The file on this machine. */
    source: string;
    /** Where it goes on the host: relative to the login user's home, or absolute. */
    remotePath: string;
    /** A change of any of them copies again, as a new resource. */
    triggers?: pulumi.Input<unknown[]>;
}

/** A file copied to a host over the program's own SSH client. */
export class SshUpload extends LazyProviderResource {
    constructor(name: string, args: SshUploadArgs, opts?: pulumi.CustomResourceOptions) {
        super(
            uploadProvider,
            name,
            { ...args, connection: pulumi.secret(args.connection) },
            { ...opts, additionalSecretOutputs: ["connection"] },
            "gpu-workers",
            "SshUpload",
        );
    }
}
