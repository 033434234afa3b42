/**
 * The one place that turns an SshTarget (how the program reaches a host) into the connection of
 * @pulumi/command's remote.Command and remote.CopyToRemote: the Command provider's own SSH client,
 * so no ssh process is spawned. The host key is always pinned (the provider accepts any key
 * without one), and so is a jump host's; the machine id is no part of the connection (it goes
 * into the triggers).
 */
import type * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { sshPublicKey } from "../../lib/settings/ssh-public-key";
import { SshTarget, sshTargetKeyProblem, sshTargetMissing } from "./ssh";
import { checkSshBannerOnce } from "./ssh-banner";

/** How often a dial may fail before a step fails (a host still booting), and how long one dial waits, in seconds. */
export const DIAL_ERROR_LIMIT = 10;
export const PER_DIAL_TIMEOUT_SECONDS = 15;

/** The connection of a host's remote commands; secret as a whole (it holds the private key). */
export function commandConnection(target: pulumi.Input<SshTarget>): pulumi.Output<command.types.input.remote.ConnectionArgs> {
    return pulumi.secret(
        // No command line is built from these (the provider dials itself), so nothing in them can become an option.
        pulumi.output(target).apply(async (t): Promise<command.types.input.remote.ConnectionArgs> => {
            // A component used alone may be given no host key, or one that is no key: say which field, before anything reads it.
            const problem = sshTargetMissing(t) ?? sshTargetKeyProblem(t);
            if (problem) throw new Error(problem);
            await speaksSsh(t);
            return {
                host: t.host,
                port: t.port,
                user: t.user,
                privateKey: t.privateKey,
                // The key's type and body, as known_hosts pins it: its comment and spacing are no part of it.
                hostKey: sshPublicKey(t.hostKey, "ssh: the host key").pinned,
                dialErrorLimit: DIAL_ERROR_LIMIT,
                perDialTimeout: PER_DIAL_TIMEOUT_SECONDS,
                // The provider dials the jump host, then the host through it (a direct-tcpip channel): the host and port are as the jump host sees them.
                ...(t.proxy
                    ? {
                          proxy: {
                              host: t.proxy.host,
                              port: t.proxy.port,
                              user: t.proxy.user,
                              privateKey: t.proxy.privateKey,
                              hostKey: sshPublicKey(t.proxy.hostKey, "ssh: the jump host's host key").pinned,
                              dialErrorLimit: DIAL_ERROR_LIMIT,
                              perDialTimeout: PER_DIAL_TIMEOUT_SECONDS,
                          },
                      }
                    : {}),
            };
        }),
    );
}

/**
 * Before `up` dials a host, its first hop (the jump host where it has one) must answer like an
 * SSH server (ssh-banner.ts): the provider would wait forever on one that accepts and stays
 * silent. A preview dials nothing, and neither does a program under Pulumi's mocks (they have no
 * monitor address: the language host hands a real program its monitor in PULUMI_NODEJS_MONITOR).
 */
async function speaksSsh(t: SshTarget): Promise<void> {
    if (pulumi.runtime.isDryRun() || !process.env.PULUMI_NODEJS_MONITOR) return;
    const first = t.proxy ?? t;
    await checkSshBannerOnce(first.host, first.port, PER_DIAL_TIMEOUT_SECONDS);
}

/** The machine behind a target (SshTarget.machineId), readable: it goes into the triggers of every host step. */
export function machineOf(target: pulumi.Input<SshTarget>): pulumi.Output<string | null> {
    return pulumi.unsecret(pulumi.output(target).apply((t) => t.machineId ?? null));
}
