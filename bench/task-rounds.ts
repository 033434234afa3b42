/**
 * bench:task's rounds: each run's three times, wrapped and bare side by side. Pure.
 */
import { taskOnWorker, WorkerEvent } from "./worker-log";

export type Side = "wrapped" | "bare";
/** One fly execute: its side, its round, when it started and ended (seconds since the epoch), its build. */
export interface Run {
    side: Side;
    round: number;
    start: number;
    end: number;
    build: number;
}

export type Figures = Record<"worker" | "web" | "fly", Record<Side, number[]>>;

/**
 * Each measure's values, wrapped and bare, a round's two runs at the same index. A round
 * whose build also checked the image (or whose task the logs lack) is left out whole, and said why.
 */
export function pairedFigures(runs: Run[], events: WorkerEvent[], onWeb: Map<number, number>): { figures: Figures; leftOut: string[] } {
    const figures: Figures = { worker: { wrapped: [], bare: [] }, web: { wrapped: [], bare: [] }, fly: { wrapped: [], bare: [] } };
    const leftOut: string[] = [];
    for (const round of new Set(runs.map((r) => r.round))) {
        const measured = runs
            .filter((r) => r.round === round)
            .map((run) => ({ run, worker: taskOnWorker(events, run.start, run.end), web: onWeb.get(run.build) }));
        const why = measured.flatMap((m) =>
            !m.worker
                ? [`build ${m.run.build}: no task in the worker's log`]
                : m.worker.otherContainers > 0
                  ? [`build ${m.run.build} (${m.run.side}): also checked the image`]
                  : m.web === undefined
                    ? [`build ${m.run.build}: not in the web's database`]
                    : [],
        );
        if (why.length > 0) {
            leftOut.push(...why);
            continue;
        }
        for (const m of measured) {
            figures.worker[m.run.side].push(m.worker!.container);
            figures.web[m.run.side].push(m.web!);
            figures.fly[m.run.side].push(m.run.end - m.run.start);
        }
    }
    return { figures, leftOut };
}
