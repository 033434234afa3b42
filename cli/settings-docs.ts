/**
 * `npm run docs:settings`: writes the README's settings tables from the schemas, the one
 * place a setting's doc and default are written.
 */
import * as fs from "fs";
import * as path from "path";
import { readmeWithSettingsTables } from "../stacks/config/settings-readme";

const readmePath = path.resolve(__dirname, "../../README.md");
const before = fs.readFileSync(readmePath, "utf8");
const after = readmeWithSettingsTables(before);
if (after !== before) fs.writeFileSync(readmePath, after);
console.log(after === before ? "README.md: settings tables already up to date" : "README.md: settings tables written from the schemas");
