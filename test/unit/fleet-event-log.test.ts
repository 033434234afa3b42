/** The fleet member's reader of the engine's event log, fed as the CLI writes: a line in pieces, a character split between reads. */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { EventLogTail } from "../../cli/fleet/event-log";

describe("fleet: the engine's event log, read while it is written", () => {
    it("hands over each event once it is whole, in order, a character split between two reads included", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-event-log-"));
        const file = path.join(dir, "events.json");
        const seen: EngineEvent[] = [];
        const tail = new EventLogTail(file, (e) => seen.push(e), 10);
        try {
            const tick = () => new Promise((r) => setTimeout(r, 40));
            await tick(); // no file yet: nothing, and no error
            const first = JSON.stringify({ sequence: 1, timestamp: 1, stdoutEvent: { message: "héllo", color: "never" } });
            const bytes = Buffer.from(first + "\n");
            const cut = bytes.indexOf(Buffer.from("é")) + 1; // inside the two bytes of é
            fs.writeFileSync(file, bytes.subarray(0, cut));
            await tick();
            assert.strictEqual(seen.length, 0);
            fs.appendFileSync(file, bytes.subarray(cut));
            await tick();
            assert.strictEqual(seen[0]?.stdoutEvent?.message, "héllo");
            // The last event, written without its newline before the CLI exits, comes at finish.
            fs.appendFileSync(file, JSON.stringify({ sequence: 2, timestamp: 2, summaryEvent: { resourceChanges: { create: 3 } } }));
            await tick();
            assert.strictEqual(seen.length, 1);
        } finally {
            tail.finish();
            fs.rmSync(dir, { recursive: true, force: true });
        }
        assert.deepStrictEqual(
            seen.map((e) => e.sequence),
            [1, 2],
        );
        assert.deepStrictEqual(seen[1].summaryEvent?.resourceChanges, { create: 3 });
    });
});
