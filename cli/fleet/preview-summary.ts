/** `fleet preview`'s one summary for review: per rack, per host, what the engine would create, change or delete. */
import type { Rack } from "./members";
import type { PlannedChange } from "./protocol";

/** The host a resource belongs to: its own name, or the one its name starts with (`gpu-a-...`), the longest where several do. */
export function hostOf(resourceName: string, hosts: string[]): string | undefined {
    return hosts.filter((h) => resourceName === h || resourceName.startsWith(`${h}-`)).sort((a, b) => b.length - a.length)[0];
}

function counts(changes: PlannedChange[]): string {
    const by = new Map<string, number>();
    for (const c of changes) by.set(c.op, (by.get(c.op) ?? 0) + 1);
    return [...by].map(([op, n]) => `${n} ${op}`).join(", ");
}

/** The lines of the summary; racks with no change say so in one line. */
export function previewSummary(racks: { rack: Rack; planned: PlannedChange[] }[]): string[] {
    const lines: string[] = [];
    for (const { rack, planned } of racks) {
        if (planned.length === 0) {
            lines.push(`rack ${rack.name} (${rack.stack}): no changes`);
            continue;
        }
        lines.push(`rack ${rack.name} (${rack.stack}): ${counts(planned)}`);
        const byHost = new Map<string, PlannedChange[]>();
        for (const c of planned) {
            const host = hostOf(c.urn.split("::").pop()!, rack.hosts) ?? "(the rack's stack)";
            byHost.set(host, [...(byHost.get(host) ?? []), c]);
        }
        for (const [host, changes] of byHost) {
            lines.push(`  ${host}: ${counts(changes)}`);
            for (const c of changes) lines.push(`    ${c.op.padEnd(8)} ${c.urn.split("::").pop()}${c.diffs.length > 0 ? `  [${c.diffs.join(", ")}]` : ""}`);
        }
    }
    return lines;
}

/** Whether any rack would change anything. */
export function anyChange(racks: { planned: PlannedChange[] }[]): boolean {
    return racks.some((r) => r.planned.length > 0);
}
