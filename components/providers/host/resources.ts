/**
 * Thin wiring: turns a RenderedComponent (pure data) into host commands of the chosen transport
 * (step-transport.ts). A component's files go by one command per kind of folder (a file set)
 * whose stdin holds each text file's whole content, so `pulumi preview --diff` shows exactly what
 * changes on the host; a binary is uploaded to a staging path named by its sha256, and its set
 * installs it; a secret file has a command of its own. Every command knows its own owner id
 * (ownerId: its name, triggers and transport), which the host's records name. The shell is
 * host/placed-files.sh and host/owner-records.sh, which each command carries; lib/host/placed-files.ts
 * and owner-records.ts give them their arguments, and a command's stdin holds the data alone.
 */
import * as pulumi from "@pulumi/pulumi";
import * as fs from "fs";
import { sha256Text } from "../../lib/file-hash";
import { claimCommand, ownerId, releaseCommand, stepSlot } from "../../lib/host/owner-records";
import { fileSetStdin, placeFileSetCommand, removeFilesCommand, stagingPath, writeFileCommand } from "../../lib/host/placed-files";
import {
    asRoot,
    fileResourceName,
    fileUploadName,
    HostFile,
    HostStep,
    inFileSet,
    inOwnFolder,
    RenderedComponent,
    stepResourceName,
} from "../../lib/host/steps";
import type { HostStepTransport } from "../../lib/host/step-transport";
import { placeOnce } from "../../lib/plan/place-files";
import { machineOf } from "./command-connection";
import type { SshProxy, SshTarget } from "./ssh";
import { HostCommand, StepTransport, stepTransport } from "./step-transport";

/** How to reach a host over SSH: address, port, user, private key, pinned host key. */
export type HostConnection = SshTarget;

/**
 * A HostConnection as a program gives one: GpuHost's `connection` output, or an object of its
 * own whose fields may each be an output (a key from `config.requireSecret`), its jump host's too.
 */
export type HostConnectionInput = { [K in keyof Omit<HostConnection, "proxy">]: pulumi.Input<HostConnection[K]> } & {
    /** The jump host to go through (SshTarget.proxy), its fields too each a value or an output. Default: none. */
    proxy?: pulumi.Input<{ [K in keyof SshProxy]: pulumi.Input<SshProxy[K]> }>;
};

/** One output of the whole connection, each field resolved (a secret field keeps the whole secret). */
export function hostConnection(connection: pulumi.Input<HostConnectionInput>): pulumi.Output<HostConnection> {
    return pulumi.output(connection);
}

export interface HostResourceOptions {
    /** Parent component; children are named from its name. */
    parent: pulumi.ComponentResource;
    /** Prefix for child names, normally the component's name. */
    prefix: string;
    connection: pulumi.Input<HostConnection>;
    /** What runs the commands: @pulumi/command's remote.Command, or the program's own SSH client. */
    hostSteps: HostStepTransport;
    /** Runs as root directly, or through `sudo -n` for another user. */
    user: string;
    /** Resources every child waits for (the previous component in the chain). */
    dependsOn: pulumi.Input<pulumi.Resource>[];
    /**
     * What a file in the program's own folders (HOST_LIB_DIR, HOST_ETC_DIR) waits for instead of
     * dependsOn: no step of an earlier component writes there, and a path placed twice has one
     * content (placeOnce), so those files go on the host while the earlier components' steps run,
     * off the chain's critical path. Default: dependsOn.
     */
    ownFilesDependOn?: pulumi.Input<pulumi.Resource>[];
    /** Contents known only at `up` (files marked secret or generated), by host path. */
    values?: Record<string, pulumi.Input<string>>;
    /** Raised by HostDriftGuard when a refresh finds drift: every command's update then runs (the chain again). */
    epoch?: pulumi.Input<number>;
    /** Paths an earlier component of the host places identically: not placed again, steps may still need them. */
    placedEarlier?: string[];
}

/** The content of a file that only `up` knows (a secret, a generated key); a secret stays one. */
function valueOf(file: HostFile, o: HostResourceOptions): pulumi.Input<string> {
    const value = o.values?.[file.path];
    if (value === undefined) throw new Error(`${o.prefix}: no value given for ${file.path} (${file.secret ? "a secret" : `generated: ${file.generated}`})`);
    return file.secret ? pulumi.secret(value) : value;
}

/** sha256 of what the host receives at the file's path. */
function fileSha256(file: HostFile, o: HostResourceOptions): pulumi.Input<string> {
    if (file.artifact) return file.artifact.sha256;
    if (file.secret || file.generated) {
        return pulumi.output(valueOf(file, o)).apply((value) => {
            // Only a mocked resource leaves it unset: real ones always resolve it.
            if (typeof value !== "string")
                throw new Error(
                    `${o.prefix}: ${file.path} has no content (its value resolved to ${String(value)}; under Pulumi mocks, return the outputs of the resource that makes it)`,
                );
            return sha256Text(value);
        });
    }
    return sha256Text(file.content);
}

/**
 * What replaces a host resource (its `triggers`): a new machine behind the address (an LXD
 * instance's UUID), so the whole chain runs again there, plus what the caller adds. Readable
 * (no secret), so the preview shows why.
 */
function triggersOf(o: HostResourceOptions, extra: unknown[] = []): pulumi.Output<unknown[]> {
    return machineOf(o.connection).apply((machine) => [machine, ...extra]);
}

/**
 * `update` is `command` under a line naming HostDriftGuard's epoch: a raised epoch runs every
 * update again. Not a trigger: the commands (owner ids) would then wait on the epoch, which is
 * unknown in a preview that creates or changes the guard, and no preview could show them.
 */
function withEpoch(o: HostResourceOptions, command: pulumi.Input<string>): pulumi.Output<string> {
    return pulumi.all([pulumi.output(o.epoch ?? 0), command]).apply(([epoch, c]) => `# drift epoch ${epoch}\n${c}`);
}

let ownerStack: string | undefined;

/**
 * Makes owner ids from `stack` in place of this stack's name: a fleet's member stacks (docs/fleet.md)
 * take the fleet's, so that a host whose state moves between them, or in from the fleet's own stack,
 * keeps the ids its host's records name. Set once, by the program, before any component.
 */
export function setOwnerStack(stack: string): void {
    ownerStack = stack;
}

/** The owner id of the resource `name` with these triggers, and what follows from it. */
function owned<T>(name: string, triggers: pulumi.Output<unknown[]>, o: HostResourceOptions, f: (id: string) => T): pulumi.Output<T> {
    return triggers.apply((t) => f(ownerId(name, `${pulumi.getProject()}/${ownerStack ?? pulumi.getStack()}`, t, o.hostSteps)));
}

/**
 * `command` after reading its stdin to the end. The Command provider hands `stdin` to every run,
 * the delete's too; a command that exits without reading it makes the SSH session end in EOF (a
 * failed step). Whatever the command then runs finds its stdin at the end.
 */
function drained(command: string): string {
    return `cat >/dev/null\n${command}`;
}

/** What a file at `path` waits for: in the program's own folders, only the host's readiness where given. */
function fileDependsOn(path: string, o: HostResourceOptions): pulumi.Input<pulumi.Resource>[] {
    return o.ownFilesDependOn && inOwnFolder(path) ? o.ownFilesDependOn : o.dependsOn;
}

/**
 * A binary's bytes, copied by SFTP (stdin is a string) to the staging path its sha256 names, where
 * its file set finds them: new bytes are a new copy, and a raised epoch copies again, so the set's
 * update finds a staged copy to put back.
 */
function uploadResource(file: HostFile, o: HostResourceOptions, t: StepTransport): pulumi.Resource {
    const { path, sha256 } = file.artifact!;
    if (!fs.existsSync(path)) throw new Error(`${o.prefix}: ${file.path} is uploaded from ${path}, which does not exist`);
    const triggers = pulumi.all([triggersOf(o, [sha256]), pulumi.output(o.epoch ?? 0)]).apply(([t, epoch]) => [...t, epoch]);
    return t.upload(
        fileUploadName(o.prefix, file),
        { connection: o.connection, source: path, remotePath: stagingPath(sha256), triggers },
        { parent: o.parent, dependsOn: fileDependsOn(file.path, o) },
    );
}

/**
 * The files of one kind of folder (fileResourceName names the set) by one command: one SSH session
 * and one resource for them all, the text files' contents and the binaries' sums still in the
 * preview (the stdin). Its paths are among its triggers: the preview lists them all (a created
 * set's stdin shows only its first lines), and other paths make a new set, whose create claims
 * them before the old set's delete lets go of its own.
 */
function fileSetResource(name: string, files: HostFile[], o: HostResourceOptions, t: StepTransport): pulumi.Resource {
    const triggers = triggersOf(
        o,
        files.map((f) => f.path),
    );
    const uploads = files.filter((f) => f.artifact).map((f) => uploadResource(f, o, t));
    const place = owned(name, triggers, o, (id) => placeFileSetCommand(files, id, o.user));
    return t.command(
        name,
        {
            connection: o.connection,
            create: place,
            update: withEpoch(o, place),
            delete: owned(name, triggers, o, (id) => drained(removeFilesCommand(files, id, o.user))),
            stdin: fileSetStdin(files),
            triggers,
            quiet: true,
        },
        { parent: o.parent, dependsOn: [...fileDependsOn(files[0].path, o), ...uploads] },
    );
}

/** A secret or generated file: a command of its own, whose stdin (the value) hides nothing else. */
function fileResource(file: HostFile, o: HostResourceOptions, t: StepTransport): pulumi.Resource {
    const name = fileResourceName(o.prefix, file);
    const triggers = triggersOf(o);
    const write = (adopt: boolean) => owned(name, triggers, o, (id) => writeFileCommand(file, id, adopt, o.user));
    return t.command(
        name,
        {
            connection: o.connection,
            create: write(false),
            update: withEpoch(o, write(true)),
            delete: owned(name, triggers, o, (id) => drained(removeFilesCommand([file], id, o.user))),
            stdin: valueOf(file, o),
            triggers,
            quiet: true,
        },
        { parent: o.parent, dependsOn: fileDependsOn(file.path, o) },
    );
}

/**
 * A step's command names the sha256 of every file it depends on in a comment (secret ones apart,
 * so the others stay readable in the preview; those go on its stdin, which it drains first):
 * a changed file runs the step again, even when its command is the same.
 */
function stepResource(
    step: HostStep,
    o: HostResourceOptions,
    known: Map<string, pulumi.Resource>,
    files: Map<string, HostFile>,
    t: StepTransport,
): HostCommand {
    const deps = step.dependsOn.flatMap((d) => {
        // A file an earlier component placed is there before this component starts.
        if (o.placedEarlier?.includes(d)) return [];
        const r = known.get(d);
        if (!r) throw new Error(`${o.prefix}: step ${step.name} depends on ${d}, which this component does not create`);
        return [r];
    });
    const needed = step.dependsOn.flatMap((d) => (files.has(d) ? [files.get(d)!] : []));
    const sums = (secret: boolean) => pulumi.all(needed.filter((f) => Boolean(f.secret) === secret).map((f) => pulumi.all([f.path, fileSha256(f, o)])));
    const name = stepResourceName(o.prefix, step.name);
    const slot = stepSlot(step);
    const triggers = triggersOf(o, step.remove ? [slot] : []);
    const remove = step.remove ? asRoot(o.user, step.remove) : undefined;
    const create = pulumi.all([sums(false), owned(name, triggers, o, (id) => id)]).apply(([fileSums, id]) => {
        // The files it needs go after the step's own command, so the preview's first line is the command.
        const noted = fileSums.map(([p, sum]) => `\n# needs ${p} sha256:${sum}`).join("");
        const command = drained(`${asRoot(o.user, step.create)}${noted}`);
        // The record after the command succeeded; the command in a subshell of its own, so an `exit` in it ends only that.
        return remove ? `(\n${command}\n) && ${claimCommand({ slot, resource: name, user: o.user }, id, remove)}` : command;
    });
    const secretSums = needed.some((f) => f.secret) ? pulumi.secret(sums(true).apply((s) => s.map(([p, sum]) => `${p} ${sum}\n`).join(""))) : undefined;
    return t.command(
        name,
        {
            connection: o.connection,
            create,
            update: withEpoch(o, create),
            delete: remove ? owned(name, triggers, o, (id) => drained(releaseCommand({ slot, resource: name, user: o.user }, id, remove, o.user))) : undefined,
            stdin: secretSums,
            triggers,
        },
        { parent: o.parent, dependsOn: [...o.dependsOn, ...deps] },
    );
}

/**
 * Creates the resources that place `files` (each path once; those in placedEarlier apart): a file
 * set per kind of folder, a command of its own for a secret or generated file. Returns the
 * resource that places each path.
 */
export function createHostFiles(files: HostFile[], o: HostResourceOptions): Map<string, pulumi.Resource> {
    const t = stepTransport(o.hostSteps);
    const placing = new Map<string, pulumi.Resource>();
    const sets = new Map<string, HostFile[]>();
    for (const file of files) {
        if (o.placedEarlier?.includes(file.path)) continue;
        if (!inFileSet(file)) {
            placing.set(file.path, fileResource(file, o, t));
            continue;
        }
        const set = fileResourceName(o.prefix, file);
        sets.set(set, [...(sets.get(set) ?? []), file]);
    }
    for (const [name, setFiles] of sets) {
        const set = fileSetResource(name, setFiles, o, t);
        for (const file of setFiles) placing.set(file.path, set);
    }
    return placing;
}

/** Creates every file, then every step in order; returns the steps' commands by step name. */
export function createHostResources(rendered: RenderedComponent, o: HostResourceOptions): Map<string, HostCommand> {
    // The same script may serve two steps: one file, by the host's one rule for a path placed twice.
    const { placed } = placeOnce(o.prefix, [{ owner: o.prefix, files: rendered.files }]);
    const known = createHostFiles(placed, o);
    const steps = new Map<string, HostCommand>();
    const files = new Map(placed.map((f): [string, HostFile] => [f.path, f]));
    const t = stepTransport(o.hostSteps);
    for (const step of rendered.steps) {
        const r = stepResource(step, o, known, files, t);
        known.set(step.name, r);
        steps.set(step.name, r);
    }
    return steps;
}
