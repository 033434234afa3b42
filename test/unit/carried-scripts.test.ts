/**
 * The host scripts a command carries (lib/host/scripts.ts carriedScript): their comment and blank
 * lines are left out, and nothing else. bash reads each back to the same functions as host/'s own
 * file, so no line of code (a line of a quoted string included) was taken for a comment.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import { PLACED_FILES_SCRIPT } from "../../components/lib/host/placed-files";
import { OWNER_RECORDS_SCRIPT } from "../../components/lib/host/owner-records";
import { carriedScript, readHostScript } from "../../components/lib/host/scripts";
import { DRIFT_CHECK_SCRIPT } from "../../components/lib/render/drift-check";

/** The functions bash defines from a script's text, as `declare -f` prints them (comments gone); the script's top-level calls are not run. */
function functionsOf(text: string): string {
    const definitions = text.slice(0, text.lastIndexOf("\n}\n") + 3);
    const r = spawnSync("bash", ["-c", 'eval "$1" && declare -f', "bash", definitions], { encoding: "utf8" });
    assert.strictEqual(r.status, 0, r.stderr);
    return r.stdout;
}

describe("host scripts as a command carries them", () => {
    for (const name of [PLACED_FILES_SCRIPT, OWNER_RECORDS_SCRIPT, DRIFT_CHECK_SCRIPT]) {
        it(`${name}: the same functions without its comments and blank lines`, () => {
            const own = readHostScript(name);
            const carried = carriedScript(name);
            assert.ok(carried.length < own.length * 0.75, `${name}: ${carried.length} of ${own.length} bytes`);
            assert.ok(!/^\s*#/m.test(carried) && !/^\s*$/m.test(carried.trimEnd()), "a comment or blank line is left");
            const parsed = spawnSync("bash", ["-n", "-c", carried], { encoding: "utf8" });
            assert.strictEqual(parsed.status, 0, parsed.stderr);
            const functions = functionsOf(carried);
            assert.ok(functions.includes("()"), "no function read");
            assert.strictEqual(functions, functionsOf(own));
        });
    }

    it("a script with a here-document is not carried: its lines would be data", () => {
        assert.throws(() => carriedScript("concourse-postgres.sh"), /concourse-postgres\.sh: a command cannot carry a script with a here-document/);
    });
});
