/**
 * Each host's GPU plan, made as `up` would make it, on whatever parsed (a host with other
 * problems included); shared boards and their workers are planned together (board-plans.ts).
 */
import { PlanError, planWorkerGpus } from "../../components/program";
import { isBoard, ParsedHost } from "../config/host-config";

/** What the GPU plan of each worker on a host of its own refuses. */
export function hostPlanProblems(hosts: ParsedHost[]): string[] {
    const problems: string[] = [];
    hosts.forEach(({ entry, settings: s, reported, boardWorker }, i) => {
        if (!entry?.inventory || !s || boardWorker || isBoard(s)) return;
        try {
            planWorkerGpus(entry.inventory, {
                selection: s.selection,
                cdi: s.toolkit.cdi,
                fabricManager: s.fabricManager,
                extraTags: s.concourse.tags,
                driverPin: s.driver.version,
            });
        } catch (e) {
            if (!(e instanceof PlanError)) throw e;
            // A dropped bad field stands in for the built-in default here (fabricManager.mode "of" became
            // auto), so a plan error about that setting would be a follow-on, not the user's mistake.
            const setting = e.path.split(".")[0];
            if (!reported.some((r) => r === "" || r.split(/[.[]/)[0] === setting)) problems.push(`hosts[${i}].${e.message}`);
        }
    });
    return problems;
}
