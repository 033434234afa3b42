/**
 * The README's settings tables agree with their schemas, the one place a setting's doc
 * and default are written: the table is what `npm run docs:settings` writes, and read back as
 * markdown it lists every field of the schema with the schema's default, and nothing else.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { z } from "zod";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { defaultsOf, formatDefault } from "../../components/lib/settings/schema-docs";
import { settingsSchema as workerSettingsSchema, WORKER_DEFAULTS } from "../../components/lib/settings/settings";
import { gpuSchema, inventorySchema } from "../../components/lib/gpu/inventory";
import { lxdServerSchema, lxdTransportSchema, sshTransportSchema } from "../../stacks/config/schema";
import { README_TABLES, readmeWithSettingsTables, tableFields, tableMarkers } from "../../stacks/config/settings-readme";

const README = fs.readFileSync(path.join(PACKAGE_ROOT, "README.md"), "utf8");

/** The rows of the first markdown table under a heading: cells by column name. */
function tableUnder(markdown: string, heading: string): Record<string, string>[] {
    const lines = markdown.split("\n");
    const at = lines.findIndex((l) => /^#+ /.test(l) && l.replace(/^#+ /, "") === heading);
    assert.ok(at >= 0, `README has no heading "${heading}"`);
    const start = lines.findIndex((l, i) => i > at && l.startsWith("|"));
    const block: string[] = [];
    for (let i = start; i < lines.length && lines[i].startsWith("|"); i++) block.push(lines[i]);
    // Cells split on | outside backquotes, the way the tables write `a | b` in code.
    const cells = (row: string) =>
        row
            .replace(/^\||\|$/g, "")
            .split(/\|(?=(?:[^`]*`[^`]*`)*[^`]*$)/)
            .map((c) => c.trim());
    const [head, , ...rows] = block;
    const names = cells(head);
    return rows.map((r) => Object.fromEntries(cells(r).map((c, i) => [names[i], c])));
}

for (const readmeTable of README_TABLES) {
    describe(`README ${readmeTable.name} table`, () => {
        const rows = tableUnder(README, readmeTable.heading);
        const listed = new Map(rows.map((r) => [r.key.replace(/^`|`$/g, ""), r]));
        const fields = tableFields(readmeTable);

        it("is the table npm run docs:settings writes from the schema", () => {
            const { start, end } = tableMarkers(readmeTable);
            const table = (readme: string) => readme.slice(readme.indexOf(start), readme.indexOf(end)).split("\n");
            assert.deepStrictEqual(
                table(README),
                table(readmeWithSettingsTables(README)),
                `README.md's ${readmeTable.name} table differs from the schema: run npm run docs:settings`,
            );
        });

        it("lists every field of the schema with the schema's default and a meaning", () => {
            const problems: string[] = [];
            for (const f of fields) {
                const row = listed.get(f.path);
                if (!row) {
                    problems.push(`${f.path}: not in the README`);
                    continue;
                }
                if (row.default !== (f.default ?? "–")) problems.push(`${f.path}: README default ${row.default}, schema ${f.default ?? "none"}`);
                if (!row.meaning) problems.push(`${f.path}: no meaning in the README`);
            }
            assert.deepStrictEqual(problems, []);
        });

        it("has no row the schema lacks", () => {
            const known = new Set(fields.map((f) => f.path));
            assert.deepStrictEqual(
                [...listed.keys()].filter((k) => !known.has(k)),
                [],
            );
        });

        it("gives every field a description in the schema", () => {
            assert.deepStrictEqual(
                fields.filter((f) => !f.description).map((f) => f.path),
                [],
            );
        });
    });
}

describe("README host table", () => {
    const rows = tableUnder(README, "A host");
    const listed = new Map(rows.map((r) => [r.key.replace(/^`|`$/g, "").replace(/\[\]$/, ""), r.meaning]));
    /** The keys a row names in backquotes. */
    const named = (text: string) => new Set([...text.matchAll(/`([A-Za-z]+)(?:\[\])?`/g)].map((m) => m[1]));

    it("lists every key of a host entry besides the settings, and nothing else", () => {
        const keys = ["name", "renamedFrom", "rack", "transport.ssh", "transport.lxd", ...Object.keys(inventorySchema.shape), "fabric", "board"];
        assert.deepStrictEqual(
            {
                notInTheReadme: keys.filter((k) => !listed.has(k)),
                notInTheSchema: [...listed.keys()].filter((k) => !keys.includes(k)),
            },
            { notInTheReadme: [], notInTheSchema: [] },
        );
    });

    it("names every key of each transport and of a GPU", () => {
        const missing = (row: string, schema: z.ZodObject) =>
            Object.keys(schema.shape)
                .filter((k) => !named(listed.get(row) ?? "").has(k))
                .map((k) => `${row}: ${k}`);
        assert.deepStrictEqual(
            [
                ...missing("transport.ssh", sshTransportSchema),
                ...missing("transport.lxd", lxdTransportSchema),
                ...missing("transport.lxd", lxdServerSchema),
                ...missing("gpus", gpuSchema),
            ],
            [],
        );
    });
});

describe("settings defaults", () => {
    it("takes the built-in defaults from the schema", () => {
        assert.deepStrictEqual(WORKER_DEFAULTS, defaultsOf(workerSettingsSchema));
        assert.strictEqual(formatDefault(z.array(z.string()).default(["_writable", "_rw"]).parse(undefined)), "[_writable, _rw]");
        // Parsing nothing but the groups gives the same defaults the merge starts from.
        const groups = Object.fromEntries(
            Object.keys(workerSettingsSchema.shape)
                .filter((k) => k !== "selection")
                .map((k) => [k, {}]),
        );
        assert.deepStrictEqual(workerSettingsSchema.parse(groups), WORKER_DEFAULTS);
    });
});
