/** The drift check a refresh runs on a host: its command, run here by a shell as a login runs it, against real files. */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { carriedScript } from "../../components/lib/host/scripts";
import { shellQuote } from "../../components/lib/host/steps";
import { DRIFT_CHECK_SCRIPT, driftCheckCommand, renderDriftCheck } from "../../components/lib/render/drift-check";
import { makeScratch, scratchName } from "../support/scratch";

const sha = (s: string) => crypto.createHash("sha256").update(s).digest("hex");

function run(lines: string): string[] {
    const r = spawnSync("sh", ["-c", driftCheckCommand("root")], { input: lines, encoding: "utf8" });
    assert.strictEqual(r.status, 0, r.stderr);
    return r.stdout.split("\n").filter(Boolean);
}

describe("drift check", () => {
    const dir = scratchName("gw-drift-");
    before(() => makeScratch(dir));
    const odd = path.join(dir, "it's a $(file)");
    const secret = path.join(dir, "key");
    const lines = () =>
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
        assert.deepStrictEqual(run(lines()), []);
    });

    it("names a changed file, a missing secret file and a failing step check", () => {
        fs.writeFileSync(odd, "edited by hand\n");
        fs.rmSync(secret);
        fs.rmSync(path.join(dir, "flag"));
        const found = run(lines());
        assert.deepStrictEqual(found.slice(0, 2), [`drift: ${odd} was changed`, `drift: ${secret} is missing`]);
        assert.strictEqual(found.length, 3);
        assert.match(found[2], /^drift: /);
    });

    it("its command carries host/drift-check.sh; its stdin is one line per file and per check: data, not shell", () => {
        assert.strictEqual(driftCheckCommand("root"), `bash -c ${shellQuote(carriedScript(DRIFT_CHECK_SCRIPT))} drift-check.sh`);
        assert.strictEqual(driftCheckCommand("ubuntu"), `sudo -n sh -c ${shellQuote(driftCheckCommand("root"))}`);
        assert.deepStrictEqual(lines().split("\n"), [
            `file ${sha("content\n")} ${odd}`,
            `file - ${secret}`,
            `check test -e ${JSON.stringify(path.join(dir, "flag"))}`,
            "",
        ]);
        assert.throws(() => renderDriftCheck([{ path: "/etc/a\nb", sha256: null }], []), /spans lines/);
    });
});
