/**
 * The shared boards of the stack: each worker's board exists and is one, and each board has
 * workers; then the boards as the validated stack holds them (whether the planner can meet
 * every board's workers: stacks/checks/board-plans.ts).
 */
import { isBoard, ParsedHost } from "./host-config";
import { BoardConfig, BoardWorkerConfig } from "./schema";

/** The boards with their workers, from hosts that parsed whole; each board's workers in stack order. */
export function collectBoards(hosts: ParsedHost[]): { board: BoardConfig; at: number; workersAt: number[] }[] {
    return hosts.flatMap((h, at) => {
        if (!h.entry?.inventory || !h.settings || !isBoard(h.settings) || !h.fabric || !h.entry.transport.ssh) return [];
        const workersAt = hosts.map((w, j) => (w.board?.name === h.entry!.name ? j : -1)).filter((j) => j >= 0);
        const workers: BoardWorkerConfig[] = workersAt.flatMap((j) => {
            const w = hosts[j];
            return w.entry && w.settings && w.board ? [{ ...w.settings, name: w.entry.name, transport: w.entry.transport, board: w.board }] : [];
        });
        if (workers.length !== workersAt.length) return [];
        return [
            {
                board: {
                    name: h.entry.name,
                    transport: { ssh: h.entry.transport.ssh },
                    inventory: h.entry.inventory,
                    verify: h.settings.verify,
                    fabric: h.fabric,
                    workers,
                },
                at,
                workersAt,
            },
        ];
    });
}

/** Each worker's board exists and is one; each board has workers. */
export function boardRefProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    const byName = new Map(hosts.flatMap((h, i) => (h.entry ? [[h.entry.name, { h, i }] as const] : [])));
    hosts.forEach((w, i) => {
        if (!w.board) return;
        const target = byName.get(w.board.name);
        if (!target) problems.push(`hosts[${i}].board.name: there is no host ${w.board.name}`);
        else if (target.h.settings && !isBoard(target.h.settings))
            problems.push(
                `hosts[${i}].board.name: ${w.board.name} (hosts[${target.i}]) is not a shared board (its fabricManager.mode is ${target.h.settings.fabricManager.mode}, not service-vm)`,
            );
    });
    hosts.forEach((h, i) => {
        if (!h.entry || !isBoard(h.settings) || h.boardWorker) return;
        // A worker whose board: did not parse may well mean this board; it is reported already.
        if (!hosts.some((w) => w.boardWorker && (w.board === undefined || w.board.name === h.entry!.name))) {
            problems.push(`hosts[${i}]: no worker uses board ${h.entry.name} (give a worker board: {name: ${h.entry.name}, gpus: N})`);
        }
    });
    return problems;
}
