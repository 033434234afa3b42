/**
 * `npm run build` (scripts/build-ts.sh) runs this after tsc: writes the settings' interface with
 * each field's doc (components/lib/settings/settings-layer.generated.ts) from the schema, and says
 * whether it changed (the build then compiles again). `--check` writes nothing and fails while it differs.
 */
import * as fs from "fs";
import * as path from "path";
import { SETTINGS_INTERFACE_FILE, settingsInterfaceSource } from "../components/lib/settings/settings-interface";

const file = path.resolve(__dirname, "../..", SETTINGS_INTERFACE_FILE);
const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
const after = settingsInterfaceSource();
if (after === before) {
    console.log(`${SETTINGS_INTERFACE_FILE}: up to date`);
} else if (process.argv.includes("--check")) {
    console.error(`${SETTINGS_INTERFACE_FILE}: differs from the settings schema (npm run build writes it)`);
    process.exitCode = 1;
} else {
    fs.writeFileSync(file, after);
    console.log(`${SETTINGS_INTERFACE_FILE}: written from the settings schema`);
}
