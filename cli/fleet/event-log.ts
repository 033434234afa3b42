/**
 * The engine's event log (`--event-log FILE`), read while the CLI writes it: a JSON event a line,
 * each handed over once it is whole.
 */
import * as fs from "fs";
import { StringDecoder } from "string_decoder";
import type { EngineEvent } from "@pulumi/pulumi/automation";

export class EventLogTail {
    private offset = 0;
    private partial = "";
    /** A character split between two reads is held until its last byte comes. */
    private readonly decoder = new StringDecoder("utf8");
    private readonly timer: NodeJS.Timeout;

    constructor(
        private readonly file: string,
        private readonly onEvent: (event: EngineEvent) => void,
        everyMs = 250,
    ) {
        this.timer = setInterval(() => this.read(), everyMs);
    }

    /** Reads what the CLI has added since the last read. */
    private read(): void {
        if (!fs.existsSync(this.file)) return;
        const fd = fs.openSync(this.file, "r");
        try {
            const buffer = Buffer.alloc(1 << 16);
            let n: number;
            while ((n = fs.readSync(fd, buffer, 0, buffer.length, this.offset)) > 0) {
                this.offset += n;
                this.partial += this.decoder.write(buffer.subarray(0, n));
            }
        } finally {
            fs.closeSync(fd);
        }
        const lines = this.partial.split("\n");
        this.partial = lines.pop()!;
        for (const line of lines) if (line.trim() !== "") this.onEvent(JSON.parse(line) as EngineEvent);
    }

    /** Reads the rest, once the CLI has exited, and stops. */
    finish(): void {
        clearInterval(this.timer);
        this.read();
        if (this.partial.trim() !== "") this.onEvent(JSON.parse(this.partial) as EngineEvent);
        this.partial = "";
    }
}
