/**
 * The Xid table the health watcher uses: each NVIDIA Xid it names, what it means, and whether
 * it lands the worker by default. Written here once: the watcher's rendered config and the
 * docs page (docs/gpu-health.md, checked against this by a test) come from it. Pure.
 *
 * The default policy is NVIDIA's Kubernetes device plugin's: every Xid is fatal except the
 * ones it skips by default (13, 31, 43, 45, 68, 109: errors of one application, not of the
 * GPU). An Xid not in this table is fatal too, unless the stack ignores it.
 */

/** Where a row's facts come from. */
export const XID_SOURCES = {
    catalog: "NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors)",
    plugin: "NVIDIA k8s-device-plugin, its default list of Xids that do not mark a GPU unhealthy",
} as const;

export interface XidRow {
    code: number;
    /** What the driver's Xid means, as NVIDIA's catalog names it. */
    meaning: string;
    /** Lands the worker unless the stack says otherwise. */
    fatal: boolean;
    /** Where the row's facts come from (XID_SOURCES' keys). */
    source: (keyof typeof XID_SOURCES)[];
}

/** The smallest and largest Xid a setting may name (the catalog's codes are well inside). */
export const XID_RANGE = { min: 1, max: 999 } as const;

export const XID_TABLE: readonly XidRow[] = [
    { code: 13, meaning: "Graphics Engine Exception (usually the application's fault)", fatal: false, source: ["catalog", "plugin"] },
    { code: 31, meaning: "GPU memory page fault (usually the application's fault)", fatal: false, source: ["catalog", "plugin"] },
    { code: 32, meaning: "Invalid or corrupted push buffer stream", fatal: true, source: ["catalog"] },
    { code: 43, meaning: "GPU stopped processing (a channel was reset; the application's fault)", fatal: false, source: ["catalog", "plugin"] },
    { code: 45, meaning: "Preemptive cleanup, due to previous errors", fatal: false, source: ["catalog", "plugin"] },
    { code: 48, meaning: "Double Bit ECC Error", fatal: true, source: ["catalog"] },
    { code: 61, meaning: "Internal micro-controller breakpoint/warning", fatal: true, source: ["catalog"] },
    { code: 62, meaning: "Internal micro-controller halt", fatal: true, source: ["catalog"] },
    { code: 63, meaning: "ECC page retirement or row remapping recording event", fatal: true, source: ["catalog"] },
    { code: 64, meaning: "ECC page retirement or row remapper recording failure", fatal: true, source: ["catalog"] },
    { code: 68, meaning: "NVDEC0 Exception (video decoder)", fatal: false, source: ["catalog", "plugin"] },
    { code: 69, meaning: "Graphics Engine class error", fatal: true, source: ["catalog"] },
    { code: 74, meaning: "NVLink Error", fatal: true, source: ["catalog"] },
    { code: 79, meaning: "GPU has fallen off the bus", fatal: true, source: ["catalog"] },
    { code: 92, meaning: "High single-bit ECC error rate", fatal: true, source: ["catalog"] },
    { code: 94, meaning: "Contained ECC error", fatal: true, source: ["catalog"] },
    { code: 95, meaning: "Uncontained ECC error", fatal: true, source: ["catalog"] },
    { code: 109, meaning: "Context Switch Timeout Error", fatal: false, source: ["catalog", "plugin"] },
    { code: 119, meaning: "GSP RPC Timeout", fatal: true, source: ["catalog"] },
    { code: 120, meaning: "GSP Error", fatal: true, source: ["catalog"] },
];

/** The Xids that do not land a worker by default: the device plugin's list. */
export const DEFAULT_IGNORED_XIDS: readonly number[] = XID_TABLE.filter((r) => !r.fatal).map((r) => r.code);

/** The Xids a worker ignores: the default list, plus the stack's additions, less what it takes back. */
export function ignoredXids(add: readonly number[], remove: readonly number[]): number[] {
    const out = new Set([...DEFAULT_IGNORED_XIDS, ...add]);
    for (const code of remove) out.delete(code);
    return [...out].sort((a, b) => a - b);
}

/** The table as docs/gpu-health.md shows it (between its markers). */
export function renderXidTableMarkdown(): string {
    const rows = XID_TABLE.map((r) => `| ${r.code} | ${r.meaning} | ${r.fatal ? "yes" : "no (ignored)"} | ${r.source.map((s) => XID_SOURCES[s]).join("; ")} |`);
    return ["| Xid | meaning | fatal by default | source |", "|---|---|---|---|", ...rows].join("\n");
}
