/**
 * Thin wiring: turns a RenderedComponent (pure data) into HostCommand resources.
 * Every file is a command whose stdin is the whole content, so `pulumi preview --diff`
 * shows exactly what changes on the host; a binary is streamed and keyed by its sha256.
 */
import * as pulumi from "@pulumi/pulumi";
import * as fs from "fs";
import { sha256Text } from "../../lib/file-hash";
import { stepSlot } from "../../lib/host/owner-records";
import {
    asRoot,
    fileResourceName,
    HOST_ETC_DIR,
    HOST_LIB_DIR,
    HOST_STATE_DIR,
    HostFile,
    HostStep,
    pathSlug,
    placedRecordDir,
    RenderedComponent,
    shellCommand,
    stepResourceName,
} from "../../lib/host/steps";
import { placeOnce } from "../../lib/plan/place-files";
import { HostCommand } from "./host-command";
import type { SshTarget } from "./ssh";

/** How to reach a host over SSH: address, port, user, private key, pinned host key. */
export type HostConnection = SshTarget;

export interface HostResourceOptions {
    /** Parent component; children are named from its name. */
    parent: pulumi.ComponentResource;
    /** Prefix for child names, normally the component's name. */
    prefix: string;
    connection: pulumi.Input<HostConnection>;
    /** Runs as root directly, or through `sudo -n` for another user. */
    user: string;
    /** Resources every child waits for (the previous component in the chain). */
    dependsOn: pulumi.Input<pulumi.Resource>[];
    /** Contents known only at `up` (files marked secret or generated), by host path. */
    values?: Record<string, pulumi.Input<string>>;
    /** Raised by HostDriftGuard when a refresh finds drift: every command then runs again. */
    epoch?: pulumi.Input<number>;
    /** Paths an earlier component of the host places identically: not placed again, steps may still need them. */
    placedEarlier?: string[];
}

/**
 * Writes stdin to `path` atomically with `mode`; the same command on create and update.
 * The temp file is private (umask 077) until its mode is set, so a secret is never readable
 * by others on the way, and it is removed when any step fails.
 */
export function writeFileCommand(file: HostFile): string {
    const dir = file.path.replace(/\/[^/]+$/, "") || "/";
    const tmp = shellCommand([`${file.path}.gpu-workers.tmp`]);
    return (
        [`mkdir -p ${shellCommand([dir])}`, `(umask 077 && cat > ${tmp})`, `chmod ${file.mode} ${tmp}`, `mv -f ${tmp} ${shellCommand([file.path])}`].join(
            " && ",
        ) + ` || { rm -f ${tmp}; exit 1; }`
    );
}

/**
 * Makes `user` (a component) a user of the path before it writes there. The first user keeps
 * what is at the path aside (or notes that nothing is), so the last one puts it back; with
 * `adopt` (an update of a file an earlier version placed, which kept no record) what is there
 * is taken as the program's own. Each record is written before the file changes, so a run cut
 * short does it again and never keeps the program's own file as the host's.
 */
export function claimFileCommand(file: HostFile, user: string, adopt: boolean): string {
    const keep = adopt
        ? `: > "$r/absent"`
        : `if [ -e "$p" ] || [ -L "$p" ]; then cp -a "$p" "$r/original.tmp" && mv -f "$r/original.tmp" "$r/original"; else : > "$r/absent"; fi`;
    return `${recordVariables(file)}; mkdir -p "$r/users" && { [ -e "$r/original" ] || [ -L "$r/original" ] || [ -e "$r/absent" ] || ${keep}; } && : > "$r/users/"${shellCommand([pathSlug(user)])}`;
}

/** `r`: the path's record (placedRecordDir), `p`: the path. */
function recordVariables(file: HostFile): string {
    return `r=${shellCommand([placedRecordDir(file.path)])} p=${shellCommand([file.path])}`;
}

/**
 * `user` no longer places the file. The last user puts back what was at the path before (the
 * original, byte for byte, in one rename) or removes the file where nothing was; then the
 * record goes, and the file's folder when that is one of ours and now empty. Without a record
 * it does nothing: a step put the original back already (fabric-manager.sh restarts the
 * service that reads it).
 */
export function removeFileCommand(file: HostFile, user: string): string {
    const dir = file.path.replace(/\/[^/]+$/, "") || "/";
    const ours = dir === HOST_LIB_DIR || dir === HOST_ETC_DIR;
    const record = placedRecordDir(file.path).slice(HOST_STATE_DIR.length + 1);
    return (
        `${recordVariables(file)}; rm -f "$r/users/"${shellCommand([pathSlug(user)])} && if rmdir "$r/users" 2>/dev/null || [ ! -e "$r/users" ]; then` +
        ` if [ -e "$r/original" ] || [ -L "$r/original" ]; then mkdir -p ${shellCommand([dir])} && mv -f "$r/original" "$p";` +
        ` elif [ -e "$r/absent" ]; then rm -f "$p"${ours ? ` && { rmdir ${shellCommand([dir])} 2>/dev/null || true; }` : ""}; fi` +
        ` && rm -f "$r/absent" && { cd ${HOST_STATE_DIR} && rmdir -p --ignore-fail-on-non-empty ${shellCommand([record])} 2>/dev/null || true; }; fi`
    );
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

function fileResource(file: HostFile, o: HostResourceOptions): pulumi.Resource {
    const name = fileResourceName(o.prefix, file.path);
    const opts: pulumi.CustomResourceOptions = { parent: o.parent, dependsOn: o.dependsOn };
    const create = asRoot(o.user, `${claimFileCommand(file, o.prefix, false)} && ${writeFileCommand(file)}`);
    const update = asRoot(o.user, `${claimFileCommand(file, o.prefix, true)} && ${writeFileCommand(file)}`);
    const remove = asRoot(o.user, removeFileCommand(file, o.prefix));
    if (file.artifact) {
        if (!fs.existsSync(file.artifact.path)) throw new Error(`${o.prefix}: ${file.path} is uploaded from ${file.artifact.path}, which does not exist`);
        return new HostCommand(
            name,
            {
                connection: o.connection,
                create,
                update,
                delete: remove,
                stdinFile: file.artifact.path,
                stdinSha256: file.artifact.sha256,
                reconverge: o.epoch,
            },
            opts,
        );
    }
    const stdin = file.secret || file.generated ? valueOf(file, o) : file.content;
    return new HostCommand(name, { connection: o.connection, create, update, delete: remove, stdin, reconverge: o.epoch }, opts);
}

/**
 * A step carries the sha256 of every file it depends on (secret ones apart, so the others stay
 * readable in the preview): a changed file runs the step again, even when its command is the same.
 */
function stepResource(step: HostStep, o: HostResourceOptions, known: Map<string, pulumi.Resource>, files: Map<string, HostFile>): HostCommand {
    const deps = step.dependsOn.flatMap((d) => {
        // A file an earlier component placed is there before this component starts.
        if (o.placedEarlier?.includes(d)) return [];
        const r = known.get(d);
        if (!r) throw new Error(`${o.prefix}: step ${step.name} depends on ${d}, which this component does not create`);
        return [r];
    });
    const needed = step.dependsOn.flatMap((d) => (files.has(d) ? [files.get(d)!] : []));
    const sums = (secret: boolean) => {
        const chosen = needed.filter((f) => Boolean(f.secret) === secret);
        return chosen.length === 0 ? undefined : pulumi.all(Object.fromEntries(chosen.map((f) => [f.path, fileSha256(f, o)])));
    };
    const name = stepResourceName(o.prefix, step.name);
    return new HostCommand(
        name,
        {
            connection: o.connection,
            create: asRoot(o.user, step.create),
            update: asRoot(o.user, step.create),
            delete: step.remove ? asRoot(o.user, step.remove) : undefined,
            fileSha256: sums(false),
            secretFileSha256: sums(true),
            reconverge: o.epoch,
            ...(step.remove ? { owner: { slot: stepSlot(step), resource: name, user: o.user } } : {}),
        },
        { parent: o.parent, dependsOn: [...o.dependsOn, ...deps] },
    );
}

/** Creates every file, then every step in order; returns the steps' commands by step name. */
export function createHostResources(rendered: RenderedComponent, o: HostResourceOptions): Map<string, HostCommand> {
    const known = new Map<string, pulumi.Resource>();
    const steps = new Map<string, HostCommand>();
    // The same script may serve two steps: one file, by the host's one rule for a path placed twice.
    const { placed } = placeOnce(o.prefix, [{ owner: o.prefix, files: rendered.files }]);
    for (const file of placed) {
        if (o.placedEarlier?.includes(file.path)) continue;
        known.set(file.path, fileResource(file, o));
    }
    const files = new Map(placed.map((f): [string, HostFile] => [f.path, f]));
    for (const step of rendered.steps) {
        const r = stepResource(step, o, known, files);
        known.set(step.name, r);
        steps.set(step.name, r);
    }
    return steps;
}
