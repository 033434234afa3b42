/**
 * Whether an address speaks SSH, checked before the Command provider dials it. The provider's
 * dial timeout covers the TCP connect only: an address that accepts and then says nothing (a
 * wrong port, an HTTP server waiting for its request) holds its SSH handshake, and `pulumi up`
 * with it, forever; even a cancelled `up` waits for it. A connection refused or closed without a
 * word is left to the provider's own retries and errors (a machine still booting: LXD's proxy
 * device accepts, then closes while the instance's sshd is not up yet).
 */
import * as pulumi from "@pulumi/pulumi";
import * as net from "net";

/**
 * The address does not speak SSH. `up` reports its words and no stack trace (a RunError while the
 * program runs; its stack is its words when the rejection comes after), and its words stay its
 * own: Pulumi's serializer prefixes `error serializing property "connection"` to a rejection's
 * message once for every resource that awaits it, here every command of the host.
 */
export class NotAnSshServerError extends pulumi.RunError {
    constructor(text: string) {
        super(text);
        this.stack = text;
        Object.defineProperty(this, "message", { get: () => text, set: () => undefined });
    }
}

/** The most a peer may send before its identification line (RFC 4253 lets a server send other lines first). */
const MAX_PREAMBLE_BYTES = 8192;

/** What the probe says of itself, so the server logs a client that closed, not one that never spoke. */
const PROBE_IDENTIFICATION = "SSH-2.0-gpu-workers-probe\r\n";

/** The first line of what a peer sent, printable and short, for an error message. */
function firstLine(received: string): string {
    const line = received.split(/\r?\n/)[0];
    return JSON.stringify(line.length > 60 ? `${line.slice(0, 60)}...` : line);
}

/**
 * Resolves once `host:port` sends an SSH identification line, or refuses or drops the connection
 * (the provider then reports that itself); rejects, naming the address, when it accepts but sends
 * no identification within `timeoutSeconds`, or sends something else and stops.
 */
export function checkSshBanner(host: string, port: number, timeoutSeconds: number): Promise<void> {
    const where = `${host}:${port}`;
    return new Promise((resolve, reject) => {
        let received = "";
        let connected = false;
        let settled = false;
        const socket = net.connect({ host, port });
        const settle = (error?: Error) => {
            settled = true;
            clearTimeout(timer);
            if (error) reject(error);
            else resolve();
        };
        const finish = (error?: Error) => {
            if (settled) return;
            settle(error);
            socket.destroy();
        };
        const notSsh = (why: string) =>
            new NotAnSshServerError(`${where} ${why}: it is not an SSH server (check the host's transport.ssh host and port, or its jump host's)`);
        const timer = setTimeout(() => {
            if (!connected)
                finish(); // The provider's own dial timeout reports an address that never answers the connect.
            else if (received === "") finish(notSsh(`accepted a connection but sent no SSH identification in ${timeoutSeconds} s`));
            else finish(notSsh(`answered ${firstLine(received)} and no SSH identification in ${timeoutSeconds} s`));
        }, timeoutSeconds * 1000);
        socket.setEncoding("latin1");
        socket.on("connect", () => {
            connected = true;
        });
        socket.on("data", (chunk: string) => {
            if (settled) return;
            received += chunk;
            if (/(^|\n)SSH-/.test(received)) {
                settle();
                socket.end(PROBE_IDENTIFICATION, () => socket.destroy());
            } else if (received.length > MAX_PREAMBLE_BYTES) {
                finish(notSsh(`answered ${firstLine(received)}, not an SSH identification`));
            }
        });
        socket.on("end", () => finish(received === "" ? undefined : notSsh(`answered ${firstLine(received)} and closed the connection`)));
        socket.on("error", () => finish());
    });
}

/** One check per address and program run: every command of a host shares it. */
const checked = new Map<string, Promise<void>>();

/** checkSshBanner, once per address in this process. */
export function checkSshBannerOnce(host: string, port: number, timeoutSeconds: number): Promise<void> {
    const key = `${host}:${port}`;
    let check = checked.get(key);
    if (!check) {
        check = checkSshBanner(host, port, timeoutSeconds);
        checked.set(key, check);
    }
    return check;
}
