/**
 * The one place that turns an SshTarget (how the program reaches a host) into the connection of
 * @pulumi/command's remote.Command and remote.CopyToRemote: the Command provider's own SSH client,
 * so no ssh process is spawned. The host key is always pinned (the provider accepts any key
 * without one); the machine id is no part of the connection (it goes into the triggers).
 */
import type * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import type { SshTarget } from "./ssh";

/** How often a dial may fail before a step fails (a host still booting), and how long one dial waits, in seconds. */
export const DIAL_ERROR_LIMIT = 10;
export const PER_DIAL_TIMEOUT_SECONDS = 15;

/** The connection of a host's remote commands; secret as a whole (it holds the private key). */
export function commandConnection(target: pulumi.Input<SshTarget>): pulumi.Output<command.types.input.remote.ConnectionArgs> {
    return pulumi.secret(
        // No command line is built from these (the provider dials itself), so nothing in them can become an option.
        pulumi.output(target).apply((t): command.types.input.remote.ConnectionArgs => ({
            host: t.host,
            port: t.port,
            user: t.user,
            privateKey: t.privateKey,
            hostKey: t.hostKey.trim(),
            dialErrorLimit: DIAL_ERROR_LIMIT,
            perDialTimeout: PER_DIAL_TIMEOUT_SECONDS,
        })),
    );
}

/** The machine behind a target (SshTarget.machineId), readable: it goes into the triggers of every host step. */
export function machineOf(target: pulumi.Input<SshTarget>): pulumi.Output<string | null> {
    return pulumi.unsecret(pulumi.output(target).apply((t) => t.machineId ?? null));
}
