/**
 * The README's settings table, derived from the stack's settings schema (the worker's own plus
 * the stack's secrets by name): `npm run docs:settings` writes it between the markers, and a
 * unit test fails while the README differs from what the schema gives. Pure.
 */
import { fieldDocs, settingsTable } from "../components/lib/plan/schema-docs";
import { settingsSchema } from "./schema";

export const SETTINGS_TABLE_START = "<!-- settings table: written by `npm run docs:settings` from the settings schema; edit the schema, not this table -->";
export const SETTINGS_TABLE_END = "<!-- end of settings table -->";

/** The table as the schema gives it. */
export function stackSettingsTable(): string {
    return settingsTable(fieldDocs(settingsSchema));
}

/** The README with its settings table replaced by the schema's; an error when the markers are missing. */
export function readmeWithSettingsTable(readme: string): string {
    const start = readme.indexOf(SETTINGS_TABLE_START);
    const end = readme.indexOf(SETTINGS_TABLE_END);
    if (start < 0 || end < start) throw new Error(`README: the settings table's markers are missing (${SETTINGS_TABLE_START} ... ${SETTINGS_TABLE_END})`);
    return `${readme.slice(0, start + SETTINGS_TABLE_START.length)}\n${stackSettingsTable()}\n${readme.slice(end)}`;
}
