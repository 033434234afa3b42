/**
 * The HostDriftGuard provider's operations, loaded when the provider runs. `read` (what a
 * refresh calls) runs the drift check on the host; when it finds a difference, the epoch goes
 * up, and every host step of the chain, whose commands carry the epoch, runs again on the
 * next `up`. create and update touch no host: converging is the steps' work.
 */
import { runOverSsh, SshTarget } from "../host/ssh";

export interface DriftGuardInputs {
    connection: SshTarget;
    /**
     * The command that prints one `drift: ...` line per difference (driftCheckCommand). A state
     * from before it came in the command has none: its `check` is the whole script, run by bash.
     */
    command?: string;
    /** What the command checks, its stdin (renderDriftCheck). */
    check: string;
}

export interface DriftGuardState extends DriftGuardInputs {
    /** Goes up by one each time a refresh finds drift. */
    epoch: number;
    /** What the last refresh found. */
    drift: string[];
}

export async function create(inputs: DriftGuardInputs) {
    return { id: `${inputs.connection.host}:${inputs.connection.port}`, outs: { ...inputs, epoch: 0, drift: [] } };
}

export async function diff(_id: string, olds: DriftGuardState, news: DriftGuardInputs) {
    const changed = olds.command !== news.command || olds.check !== news.check || JSON.stringify(olds.connection) !== JSON.stringify(news.connection);
    return { changes: changed, replaces: [], deleteBeforeReplace: false };
}

export async function update(_id: string, olds: DriftGuardState, news: DriftGuardInputs) {
    return { outs: { ...news, epoch: olds.epoch, drift: olds.drift } };
}

export async function read(id: string, props: DriftGuardState) {
    const command = props.command ?? (props.connection.user === "root" ? "bash -s" : "sudo -n bash -s");
    const r = await runOverSsh(props.connection, command, props.check, 300);
    if (r.code !== 0) throw new Error(`drift check on ${id} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
    const drift = r.stdout
        .split("\n")
        .filter((l) => l.startsWith("drift: "))
        .map((l) => l.slice("drift: ".length));
    return { id, props: { ...props, epoch: drift.length > 0 ? props.epoch + 1 : props.epoch, drift } };
}
