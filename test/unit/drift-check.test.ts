/** The drift check a refresh runs on a host, run here with bash against real files. */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { readHostScript } from "../../components/lib/host/scripts";
import { DRIFT_CHECK_SCRIPT, renderDriftCheck } from "../../components/lib/render/drift-check";
import { makeScratch, scratchName } from "../support/scratch";

const sha = (s: string) => crypto.createHash("sha256").update(s).digest("hex");

function run(script: string): string[] {
    const r = spawnSync("bash", ["-s"], { input: script, encoding: "utf8" });
    assert.strictEqual(r.status, 0, r.stderr);
    return r.stdout.split("\n").filter(Boolean);
}

describe("drift check", () => {
    const dir = scratchName("gw-drift-");
    before(() => makeScratch(dir));
    const odd = path.join(dir, "it's a $(file)");
    const secret = path.join(dir, "key");
    const script = () =>
        renderDriftCheck(
            [
                { path: odd, sha256: sha("content\n") },
                { path: secret, sha256: null },
            ],
            [`test -e ${JSON.stringify(path.join(dir, "flag"))}`],
        );

    beforeEach(() => {
        fs.writeFileSync(odd, "content\n");
        fs.writeFileSync(secret, "s3cret");
        fs.writeFileSync(path.join(dir, "flag"), "");
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("prints nothing for a host as converged", () => {
        assert.deepStrictEqual(run(script()), []);
    });

    it("names a changed file, a missing secret file and a failing step check", () => {
        fs.writeFileSync(odd, "edited by hand\n");
        fs.rmSync(secret);
        fs.rmSync(path.join(dir, "flag"));
        const lines = run(script());
        assert.deepStrictEqual(lines.slice(0, 2), [`drift: ${odd} was changed`, `drift: ${secret} is missing`]);
        assert.strictEqual(lines.length, 3);
        assert.match(lines[2], /^drift: /);
    });

    it("is host/drift-check.sh, then one line per file and per check: data, not shell", () => {
        const data = script().slice(readHostScript(DRIFT_CHECK_SCRIPT).length);
        assert.ok(script().startsWith(readHostScript(DRIFT_CHECK_SCRIPT)));
        assert.deepStrictEqual(data.split("\n"), [
            `file ${sha("content\n")} ${odd}`,
            `file - ${secret}`,
            `check test -e ${JSON.stringify(path.join(dir, "flag"))}`,
            "",
        ]);
        assert.throws(() => renderDriftCheck([{ path: "/etc/a\nb", sha256: null }], []), /spans lines/);
    });
});
