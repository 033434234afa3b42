/**
 * The delete of the HostCommands that stacks made by earlier releases still hold (a dynamic
 * provider of ours that ran every host step through the ssh client; this release places files
 * and runs steps with @pulumi/command's remote.Command instead). The program no longer declares
 * them, so the engine deletes each at the end of the first `up` of this release, after the new
 * remote.Commands were created, and runs this code for it (loaded by the id "host-command").
 *
 * It runs the old resource's own delete command, gated as before by the host's records
 * (lib/host/owner-records.ts): a step whose slot holds a record of another resource (a
 * remote.Command of this release that applied the same step), or one with no owner whose delete
 * command a record carries, is left alone; a file's delete only takes the old component's mark
 * out of the path's users, so the file stays while the new resource's mark is there. Where no
 * successor holds it (a host removed from the stack in the same `up`), it undoes as before.
 * These deletes, once per old resource, are the last host commands that go through the ssh client.
 */
import { HostOwner, KEPT_MARK, releaseCommand } from "../../lib/host/owner-records";
import { runOverSsh, SshTarget } from "./ssh";

/** What an earlier release's HostCommand kept in the state (the fields its delete reads). */
export interface LegacyHostCommandState {
    connection: SshTarget;
    delete?: string;
    owner?: HostOwner;
}

const TAIL = 20;

export async function remove(id: string, props: LegacyHostCommandState) {
    if (!props.delete) return;
    const user = props.owner?.user ?? props.connection.user;
    const r = await runOverSsh(props.connection, releaseCommand(props.owner, id, props.delete, user), "");
    const where = `${props.connection.user}@${props.connection.host}:${props.connection.port}`;
    if (r.code !== 0) {
        const tail = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-TAIL).join("\n");
        throw new Error(`${where}: delete failed (exit ${r.code}): ${props.delete}\n${tail}`);
    }
    const kept = r.stdout.split("\n").find((line) => line.startsWith(KEPT_MARK));
    // The engine shows a provider's stderr lines to the user.
    if (kept) console.error(`gpu-workers: on ${where}:${kept.slice(KEPT_MARK.length)}`);
}
