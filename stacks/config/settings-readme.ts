/**
 * The README's settings tables, derived from the stack's schemas (a worker's settings: the
 * components' own plus the stack's secrets by name; the web's; a shared board's fabric): `npm run docs:settings` writes
 * each between its markers, and a unit test fails while the README differs. Pure.
 */
import type { z } from "zod";
import { FieldDoc, fieldDocs, settingsTable } from "../../components/program";
import { boardFabricSchema, settingsSchema, sshProxySchema, stackOptionsSchema } from "./schema";
import { webSchema } from "./web-schema";
import { clusterSchema } from "./kubernetes-schema";

/** A table of the README: the heading it sits under, and the schema it is written from. */
export interface ReadmeTable {
    /** Names its markers. */
    name: string;
    heading: string;
    schema: z.ZodObject;
    /** The key the schema sits under in the stack (`fabric` for a board's), if any. */
    prefix?: string;
}

export const README_TABLES: ReadmeTable[] = [
    { name: "stack options", heading: "Stack config reference", schema: stackOptionsSchema },
    { name: "settings", heading: "Settings (in `defaults` or on a host)", schema: settingsSchema },
    { name: "web", heading: "The web node (`gpu-workers:web`)", schema: webSchema },
    { name: "board", heading: "A board shared by several workers", schema: boardFabricSchema, prefix: "fabric" },
    { name: "kubernetes", heading: "Kubernetes GPU nodes (`gpu-workers:kubernetes`)", schema: clusterSchema },
    { name: "jump host", heading: "Through a jump host", schema: sshProxySchema, prefix: "transport.ssh.proxy" },
];

/** The table's rows as the schema gives them. */
export function tableFields(table: ReadmeTable): FieldDoc[] {
    return fieldDocs(table.schema, table.prefix);
}

export function tableMarkers(table: ReadmeTable): { start: string; end: string } {
    return {
        start: `<!-- ${table.name} table: written by \`npm run docs:settings\` from the schema; edit the schema, not this table -->`,
        end: `<!-- end of ${table.name} table -->`,
    };
}

/** The README with each table replaced by its schema's; an error when a table's markers are missing. */
export function readmeWithSettingsTables(readme: string): string {
    let out = readme;
    for (const table of README_TABLES) {
        const { start, end } = tableMarkers(table);
        const from = out.indexOf(start);
        const to = out.indexOf(end);
        if (from < 0 || to < from) throw new Error(`README: the ${table.name} table's markers are missing (${start} ... ${end})`);
        out = `${out.slice(0, from + start.length)}\n${settingsTable(tableFields(table))}\n${out.slice(to)}`;
    }
    return out;
}
