/**
 * `npm run build` (scripts/build-ts.sh) runs this after tsc: writes the settings' interfaces with
 * each field's doc (the `*.generated.ts` of SETTINGS_INTERFACES) from their schemas, and says which
 * changed (the build then compiles again). `--check` writes nothing and fails while one differs.
 */
import * as fs from "fs";
import * as path from "path";
import { SETTINGS_INTERFACES, settingsInterfaceSource } from "../stacks/config/settings-types";

for (const spec of SETTINGS_INTERFACES) {
    const file = path.resolve(__dirname, "../..", spec.file);
    const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
    const after = settingsInterfaceSource(spec);
    if (after === before) {
        console.log(`${spec.file}: up to date`);
    } else if (process.argv.includes("--check")) {
        console.error(`${spec.file}: differs from ${spec.schemaName} (npm run build writes it)`);
        process.exitCode = 1;
    } else {
        fs.writeFileSync(file, after);
        console.log(`${spec.file}: written from ${spec.schemaName}`);
    }
}
