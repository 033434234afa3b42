/**
 * `npm run docs:settings`: writes the README's settings table from the settings schema, the one
 * place a setting's doc and default are written.
 */
import * as fs from "fs";
import * as path from "path";
import { readmeWithSettingsTable } from "../stacks/settings-readme";

const readmePath = path.resolve(__dirname, "../../README.md");
const before = fs.readFileSync(readmePath, "utf8");
const after = readmeWithSettingsTable(before);
if (after !== before) fs.writeFileSync(readmePath, after);
console.log(after === before ? "README.md: settings table already up to date" : "README.md: settings table written from the schema");
