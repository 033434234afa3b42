/**
 * The owner records' commands (lib/host/owner-records.ts): host/owner-records.sh's arguments, the
 * script itself in a here-document of the command (a delete may run with an empty stdin), and the
 * mark the program reads back from a delete's output as the script prints it.
 */
import * as assert from "assert";
import { claimCommand, deleteSum, KEPT_MARK, OWNER_RECORDS_SCRIPT, OWNERS_DIR, releaseCommand, slotDir } from "../../components/lib/host/owner-records";
import { readHostScript } from "../../components/lib/host/scripts";

const script = readHostScript(OWNER_RECORDS_SCRIPT);
const hereDocument = `<<'GPU_WORKERS_HOST_SCRIPT'\n${script}GPU_WORKERS_HOST_SCRIPT\n`;

describe("owner records' commands", () => {
    const owner = { slot: "step:postgres", resource: "w-postgres", user: "root" };

    it("claim and release pass data to host/owner-records.sh, which comes with the command", () => {
        assert.strictEqual(
            claimCommand(owner, "h:22:w", "drop it"),
            `bash -s -- claim ${slotDir(owner.slot)} h-22-w w-postgres step:postgres ${deleteSum("drop it")} ${hereDocument}`,
        );
        assert.strictEqual(
            releaseCommand(owner, "h:22:w", "drop it", "root"),
            `bash -s -- release ${slotDir(owner.slot)} h-22-w w-postgres step:postgres 'drop it' ${hereDocument}`,
        );
        assert.strictEqual(
            releaseCommand(undefined, "h:22:w", "drop it", "ubuntu"),
            `sudo -n sh -c 'bash -s -- release-unowned ${OWNERS_DIR} ${deleteSum("drop it")} '\\''drop it'\\''' ${hereDocument}`,
        );
    });

    it("the script prints the mark the program reads", () => {
        assert.ok(script.includes(`\nKEPT_MARK=${KEPT_MARK}\n`));
    });
});
