/**
 * Who applied what on a host. A host or web renamed in the stack (and any resource replaced
 * create-before-delete) makes new resources that apply the same files and steps on the same
 * machine, and only then are the old resources deleted: their deletes would undo what the new
 * ones use (the web's `DROP DATABASE`, the release, the runc wrapper). So every step that
 * undoes something records on the host, in its slot (the step's name), that it applied it: one record per resource, named by the resource's owner id (ownerId: its name and
 * its triggers), which a replacement does not share. A delete takes its own record away and undoes only when no other resource's record is
 * left; otherwise it leaves the host alone and says which resources hold it. Placed files keep
 * their own records (placed-files.ts: each resource a user of the path by its owner id, and what
 * the host had there before), so a file is never gated twice.
 *
 * A slot with no record at all (state made before this existed) is undone as before. A record left
 * by a resource that is gone from every state (`pulumi state delete`) keeps the slot's delete from
 * undoing anything: the message names the record file to remove. Pure: the shell is
 * host/owner-records.sh, which each command carries and runs (scriptCommand); this gives it the
 * arguments.
 */
import { sha256Text } from "../file-hash";
import { scriptCommand } from "./scripts";
import { asRoot, HOST_STATE_DIR, pathSlug } from "./steps";
import type { HostStepTransport } from "./step-transport";

/** The folder of the owner records on a host: one folder per slot, one file per resource. */
export const OWNERS_DIR = `${HOST_STATE_DIR}/owners`;

/** What a host command records as its own: its slot and its resource's name. */
export interface HostOwner {
    /** What it applies on the host: `step:<name>`. Two resources with one slot on one machine apply the same thing. */
    slot: string;
    /** The resource's name, as messages name it. */
    resource: string;
    /** The login user: the records are root's, through `sudo -n` for another user. */
    user: string;
}

/** The slot of a step: its own when it gives one (several of one name act on different things), else its name. */
export function stepSlot(step: { name: string; slot?: string }): string {
    return `step:${step.slot ?? step.name}`;
}

/** The slot's folder: readable, and distinct for distinct slots (the slug alone may merge two). */
export function slotDir(slot: string): string {
    return `${OWNERS_DIR}/${pathSlug(slot).slice(0, 100)}-${sha256Text(slot).slice(0, 12)}`;
}

/**
 * The id a host command records as its own. The command is written before the resource exists,
 * so the id is made from what the program knows: the resource's name (a renamed one differs),
 * and a hash of its stack and its triggers (a replacement, which a changed trigger makes, differs).
 * A step of the `builtin` transport is another resource than the remote.Command of the same name
 * (a stack moving from one to the other holds both until the old one's delete), so it has an id
 * of its own; a remote.Command keeps the id it always had.
 */
export function ownerId(resource: string, stack: string, triggers: unknown[], transport: HostStepTransport = "command"): string {
    const seed = transport === "command" ? [stack, triggers] : [stack, triggers, transport];
    return `${resource}.${sha256Text(JSON.stringify(seed)).slice(0, 12)}`;
}

/** A resource id as a file name. */
export function ownerFile(id: string): string {
    return pathSlug(id) || "unnamed";
}

/** What a record holds: the resource's name and the sha256 of its delete command (how state older than records finds it). */
export function deleteSum(deleteCommand: string): string {
    return sha256Text(deleteCommand);
}

/** The script that claims and releases slots (host/owner-records.sh). */
export const OWNER_RECORDS_SCRIPT = "owner-records.sh";

/** Records that the resource `id` applied its slot (after its command succeeded), as root; it reads no stdin (the step's command drained it). */
export function claimCommand(owner: HostOwner, id: string, deleteCommand: string): string {
    return asRoot(
        owner.user,
        scriptCommand(OWNER_RECORDS_SCRIPT, ["claim", slotDir(owner.slot), ownerFile(id), owner.resource, owner.slot, deleteSum(deleteCommand)]),
    );
}

/** The first word of the line a delete prints when it leaves the host alone (host/owner-records.sh prints it; the Command provider shows a delete's output). */
export const KEPT_MARK = "gpu-workers-kept:";

/**
 * The delete of resource `id` (`remove`: its own delete command, run as root there), as root on a
 * host reached as `login`: with an owner, its record goes, and `remove` runs only when no other
 * record is left in its slot; without one (state from before records), `remove` runs unless a
 * record elsewhere carries the same delete command (a resource of this release applied the same
 * thing). It reads no stdin: a delete may run with an empty one.
 */
export function releaseCommand(owner: HostOwner | undefined, id: string, remove: string, login: string): string {
    const release = owner
        ? ["release", slotDir(owner.slot), ownerFile(id), owner.resource, owner.slot, remove]
        : ["release-unowned", OWNERS_DIR, deleteSum(remove), remove];
    return asRoot(login, scriptCommand(OWNER_RECORDS_SCRIPT, release));
}
