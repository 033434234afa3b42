/**
 * The one seam between the chain and what runs its host steps: a command (create, update and
 * delete texts, stdin, triggers; stdout read back) and an upload of a file, by either transport
 * (lib/host/step-transport.ts). Both take the same inputs and keep the same semantics: a change of
 * the triggers replaces, the new resource created before the old one is deleted; any other change
 * runs `update`; the delete runs with the inputs of the last create or update.
 *   - command: @pulumi/command's remote.Command and CopyToRemote (their connection: command-connection.ts);
 *   - builtin: SshCommand and SshUpload, the program's own SSH client (ssh-command.ts).
 */
import { remote } from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import type { HostStepTransport } from "../../lib/host/step-transport";
import { commandConnection } from "./command-connection";
import { SshCommand, SshCommandArgs, SshUpload, SshUploadArgs } from "./ssh-command";

export interface HostCommandArgs extends SshCommandArgs {
    /** remote.Command only: keep its output out of the engine's log (a file's content, a discovery). Default: false. */
    quiet?: boolean;
}

/** A file uploaded to a host, by either transport. */
export type HostUploadArgs = SshUploadArgs;

/** A host command of either transport: a resource, and what its create or update printed. */
export type HostCommand = pulumi.CustomResource & { readonly stdout: pulumi.Output<string> };

export interface StepTransport {
    readonly name: HostStepTransport;
    command(name: string, args: HostCommandArgs, opts: pulumi.CustomResourceOptions): HostCommand;
    upload(name: string, args: HostUploadArgs, opts: pulumi.CustomResourceOptions): pulumi.CustomResource;
}

const COMMAND: StepTransport = {
    name: "command",
    command: (name, { connection, quiet, ...a }, opts) =>
        // No AcceptEnv needed on the host for the previous output.
        new remote.Command(
            name,
            { ...a, connection: commandConnection(connection), addPreviousOutputInEnv: false, ...(quiet ? { logging: "none" } : {}) },
            opts,
        ),
    upload: (name, { connection, source, ...a }, opts) =>
        new remote.CopyToRemote(name, { ...a, connection: commandConnection(connection), source: new pulumi.asset.FileAsset(source) }, opts),
};

const BUILTIN: StepTransport = {
    name: "builtin",
    command: (name, { quiet: _quiet, ...a }, opts) => new SshCommand(name, a, opts),
    upload: (name, a, opts) => new SshUpload(name, a, opts),
};

/** The transport called `name`. */
export function stepTransport(name: HostStepTransport): StepTransport {
    return name === "builtin" ? BUILTIN : COMMAND;
}
