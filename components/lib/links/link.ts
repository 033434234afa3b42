/**
 * What every link of a worker's chain is: how it plans from the worker (or from a user's terms,
 * used alone) and what it renders. Each link's folder holds its terms, plan and render; the
 * table (table.ts) lists them in order. Pure.
 */
import type { WorkerGpuPlan } from "../gpu/plan";
import type { RenderedComponent } from "../host/steps";
import type { WorkerSpec } from "../settings/worker-spec";

export interface LinkDef<Settings> {
    /** The child's name is `<host>-<suffix>`. */
    suffix: string;
    /** The link's settings on this worker, from the one GPU plan; undefined where the worker has no such link. */
    plan(host: WorkerSpec, gpus: WorkerGpuPlan): Settings | undefined;
    render(settings: Settings): RenderedComponent;
    /** Runs beside the line: it waits for the link before it, but the next does not wait for it. */
    beside?: boolean;
    /** Waits, besides the link before it, for every link beside the line planned before it. */
    afterBeside?: boolean;
}

/** A link's part of a host's plan: its settings and what they render. A leaf component takes it from GpuWorker. */
export interface PlannedPart<Settings> {
    settings: Settings;
    rendered: RenderedComponent;
}

/** A leaf component's part: the one GpuWorker planned, or its own from the user's terms by the link's functions. */
export function partOf<Terms, Settings>(
    given: Terms | { planned: PlannedPart<Settings> },
    planAlone: (terms: Terms) => Settings,
    render: (settings: Settings) => RenderedComponent,
): PlannedPart<Settings> {
    if (typeof given === "object" && given !== null && "planned" in given) return given.planned;
    const settings = planAlone(given);
    return { settings, rendered: render(settings) };
}
