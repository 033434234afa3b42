/**
 * The owner records' commands (lib/host/owner-records.ts): each carries host/owner-records.sh and
 * its arguments (a delete may run with an empty stdin, a step's claim after the step drained it),
 * and the script prints the mark the program reads back from a delete's output.
 */
import * as assert from "assert";
import { claimCommand, deleteSum, KEPT_MARK, OWNER_RECORDS_SCRIPT, OWNERS_DIR, releaseCommand, slotDir } from "../../components/lib/host/owner-records";
import { carriedScript } from "../../components/lib/host/scripts";
import { shellQuote } from "../../components/lib/host/steps";

const script = carriedScript(OWNER_RECORDS_SCRIPT);
const run = `bash -c ${shellQuote(script)} owner-records.sh`;

describe("owner records' commands", () => {
    const owner = { slot: "step:postgres", resource: "w-postgres", user: "root" };

    it("claim and release carry host/owner-records.sh and pass it the data as arguments", () => {
        assert.strictEqual(
            claimCommand(owner, "h:22:w", "drop it"),
            `${run} claim ${slotDir(owner.slot)} h-22-w w-postgres step:postgres ${deleteSum("drop it")}`,
        );
        assert.strictEqual(
            releaseCommand(owner, "h:22:w", "drop it", "root"),
            `${run} release ${slotDir(owner.slot)} h-22-w w-postgres step:postgres 'drop it'`,
        );
        assert.strictEqual(
            releaseCommand(undefined, "h:22:w", "drop it", "ubuntu"),
            `sudo -n sh -c ${shellQuote(`${run} release-unowned ${OWNERS_DIR} ${deleteSum("drop it")} 'drop it'`)}`,
        );
    });

    it("the script prints the mark the program reads", () => {
        assert.ok(script.includes(`\nKEPT_MARK=${KEPT_MARK}\n`));
    });
});
