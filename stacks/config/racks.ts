/**
 * Which rack each host of the stack is in (`rack`, default `default`): a shared board's workers
 * are in their board's rack, since the board converges with them.
 */
import { isPlainObject } from "../../components/program";
import { DEFAULT_RACK, rackName, WEB_PART } from "./fleet-schema";

/** The rack a host entry names, or the default where it names none or no valid one (rackProblems reports that). */
function ownRack(entry: unknown): string {
    if (!isPlainObject(entry) || entry.rack === undefined) return DEFAULT_RACK;
    return rackName.safeParse(entry.rack).success ? (entry.rack as string) : DEFAULT_RACK;
}

/** The board a host entry is a worker of, if any. */
function boardOf(entry: unknown): string | undefined {
    return isPlainObject(entry) && isPlainObject(entry.board) && typeof entry.board.name === "string" ? entry.board.name : undefined;
}

/** Per host entry, its rack: its own, or for a board's worker its board's. */
export function racksOf(hosts: unknown[]): string[] {
    const byName = new Map(hosts.flatMap((h) => (isPlainObject(h) && typeof h.name === "string" ? [[h.name, ownRack(h)] as const] : [])));
    return hosts.map((h) => {
        const board = boardOf(h);
        return board !== undefined && byName.has(board) ? byName.get(board)! : ownRack(h);
    });
}

/**
 * A rack that is no DNS label, a board's worker that names a rack other than its board's, and, in
 * a stack with a web, a rack named as the web's own part.
 */
export function rackProblems(hosts: unknown[], hasWeb: boolean): string[] {
    const racks = racksOf(hosts);
    return hosts.flatMap((h, i) => {
        if (!isPlainObject(h) || h.rack === undefined) return [];
        const parsed = rackName.safeParse(h.rack);
        if (!parsed.success) return [`hosts[${i}].rack: ${parsed.error.issues[0].message}`];
        if (hasWeb && h.rack === WEB_PART) return [`hosts[${i}].rack: ${WEB_PART} is the fleet's part for the web node's own stack; name the rack otherwise`];
        if (boardOf(h) !== undefined && h.rack !== racks[i])
            return [`hosts[${i}].rack: a board's worker is in its board's rack (${racks[i]}); drop rack here or move the board`];
        return [];
    });
}

/** The racks of the stack, each once, in the order their first host comes. */
export function rackNames(hosts: unknown[]): string[] {
    return [...new Set(racksOf(hosts))];
}
