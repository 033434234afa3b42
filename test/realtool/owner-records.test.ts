/**
 * The owner records of host commands (lib/host/owner-records.ts) with a real shell, as a host runs
 * them: a delete undoes only when no other resource has applied the same slot since (a host
 * renamed in the stack), undoes as before where no record exists (state made before records),
 * and the last owner's delete undoes and leaves no record folder. Each case runs in a mount
 * namespace of its own with an empty /var/lib, so this machine's is never touched.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import { claimScript, HostOwner, KEPT_MARK, OWNERS_DIR, releaseScript, slotDir } from "../../components/lib/host/owner-records";
import { ensureCommands } from "../support/tools";

/** Runs `script` (bash) with a private, empty /var/lib; returns its output and status. */
function onHost(script: string): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync("unshare", ["-m", "--propagation", "private", "bash", "-c", `mount -t tmpfs gw-owners /var/lib && ${script}`], { encoding: "utf8" });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const web = (resource: string): HostOwner => ({ slot: "step:postgres", resource, user: "root" });
const DROP = "echo dropped >> /tmp/gw-owners-log; echo 'DROP DATABASE atc'";

describe("owner records on a host (real shell, private /var/lib)", () => {
    before(() => ensureCommands(["unshare", "mount"], ["util-linux", "mount"]));

    it("a renamed web's old delete leaves the database alone and names the new owner; the new one's delete drops it, leaving no record", () => {
        const r = onHost(
            [
                claimScript(web("old-postgres"), "h:22:old", DROP),
                claimScript(web("new-postgres"), "h:22:new", DROP),
                "echo '--- old delete'",
                releaseScript(web("old-postgres"), "h:22:old", DROP),
                "echo '--- left'",
                `ls ${slotDir("step:postgres")}`,
                "echo '--- new delete'",
                releaseScript(web("new-postgres"), "h:22:new", DROP),
                "echo '--- after'",
                `ls -A /var/lib; echo end`,
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [, oldDelete, left, newDelete, after] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(oldDelete, `${KEPT_MARK} old-postgres (step:postgres): left in place: applied since by new-postgres (records: ${slotDir("step:postgres")})`);
        assert.strictEqual(left, "h-22-new", "only the new resource's record is left");
        assert.strictEqual(newDelete, "DROP DATABASE atc");
        assert.strictEqual(after, "end", "no record folder is left behind");
    });

    it("no record (state from before records): the delete runs as before; a failing delete keeps the record for the retry", () => {
        const none = onHost(releaseScript(web("old-postgres"), "h:22:old", DROP));
        assert.strictEqual(none.stdout.trim(), "DROP DATABASE atc");
        const failing = onHost(
            [
                claimScript(web("w-postgres"), "h:22:w", "false"),
                `(\n${releaseScript(web("w-postgres"), "h:22:w", "echo trying; exit 3")}\n)`,
                "echo status=$?",
                `ls ${slotDir("step:postgres")}`,
            ].join("\n"),
        );
        assert.match(failing.stdout, /trying\n/);
        assert.match(failing.stdout, /status=3\nh-22-w\n?$/);
    });

    it("a resource from before records (no owner in its state) leaves alone what a resource of this release applied with the same delete command", () => {
        const r = onHost(
            [
                claimScript(web("new-postgres"), "h:22:new", DROP),
                "echo '--- same'",
                releaseScript(undefined, "h:22:old", DROP),
                "echo '--- other'",
                releaseScript(undefined, "h:22:old", "echo 'rm -f /etc/other'"),
            ].join("\n"),
        );
        const [, same, other] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(same, `${KEPT_MARK} left in place: applied since by new-postgres (records: ${OWNERS_DIR})`);
        assert.strictEqual(other, "rm -f /etc/other");
    });

    it("an exit in the command ends only the command; a slot of a path with odd characters is kept apart from a look-alike", () => {
        const a = { slot: "file:/etc/a b", resource: "x-file", user: "root" };
        const b = { slot: "file:/etc/a-b", resource: "y-file", user: "root" };
        assert.notStrictEqual(slotDir(a.slot), slotDir(b.slot));
        const r = onHost(
            [claimScript(a, "h:1:a", "exit 0"), claimScript(b, "h:1:b", "true"), releaseScript(a, "h:1:a", "echo removed; exit 0"), `ls ${OWNERS_DIR}`].join(
                "\n",
            ),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(r.stdout.trim().split("\n"), ["removed", slotDir(b.slot).split("/").pop()]);
    });
});
