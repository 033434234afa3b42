/**
 * The check that an address speaks SSH before the Command provider dials it
 * (components/providers/host/ssh-banner.ts), against real sockets on loopback: servers that
 * answer as sshd does, stay silent, answer something else, refuse or drop the connection.
 */
import * as assert from "assert";
import * as net from "net";
import { checkSshBanner, checkSshBannerOnce, NotAnSshServerError } from "../../components/providers/host/ssh-banner";

/** A loopback server that does `onConnection` with each socket; returns its port, the sockets, what each sent, and a close. */
async function server(onConnection: (socket: net.Socket) => void) {
    const sockets: net.Socket[] = [];
    const received: string[] = [];
    const s = net.createServer((socket) => {
        const at = sockets.push(socket) - 1;
        received[at] = "";
        socket.on("data", (d) => (received[at] += d.toString("latin1")));
        socket.on("error", () => undefined);
        onConnection(socket);
    });
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    const port = (s.address() as net.AddressInfo).port;
    return {
        port,
        sockets,
        received,
        close: () => {
            for (const socket of sockets) socket.destroy();
            return new Promise<void>((resolve) => s.close(() => resolve()));
        },
    };
}

/** Runs `body` against a fresh server, which is closed after, pass or fail. */
async function withServer(onConnection: (socket: net.Socket) => void, body: (s: Awaited<ReturnType<typeof server>>) => Promise<void>): Promise<void> {
    const s = await server(onConnection);
    try {
        await body(s);
    } finally {
        await s.close();
    }
}

async function rejection(p: Promise<void>): Promise<Error> {
    return p.then(
        () => assert.fail("expected the check to fail"),
        (e: Error) => e,
    );
}

/** The check passes (neither fails nor hangs) against a server that does `onConnection`. */
function passesWith(onConnection: (socket: net.Socket) => void): Promise<void> {
    return withServer(onConnection, (s) => checkSshBanner("127.0.0.1", s.port, 5));
}

/** A port nothing listens on: one the kernel just gave a server that is closed again. */
async function closedPort(): Promise<number> {
    const s = await server(() => undefined);
    await s.close();
    return s.port;
}

describe("ssh banner check", function () {
    this.timeout(20_000);

    it("passes an address that identifies as SSH, and says who it is before it leaves", async () => {
        await withServer(
            (socket) => socket.write("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"),
            async (s) => {
                await checkSshBanner("127.0.0.1", s.port, 5);
                await new Promise((resolve) => setTimeout(resolve, 100));
                assert.match(s.received[0], /^SSH-2\.0-gpu-workers-probe\r\n$/);
            },
        );
    });

    it("passes lines before the identification, as RFC 4253 lets a server send", async () => {
        await passesWith((socket) => socket.write("Welcome to the lab\r\nauthorized use only\r\nSSH-2.0-dropbear_2022.83\r\n"));
    });

    it("fails an address that accepts and says nothing, naming it, once the time is up", async () => {
        await withServer(
            () => undefined,
            async (s) => {
                const started = Date.now();
                const error = await rejection(checkSshBanner("127.0.0.1", s.port, 1));
                assert.ok(Date.now() - started >= 900, "it waits the whole time");
                assert.ok(error instanceof NotAnSshServerError);
                assert.strictEqual(
                    error.message,
                    `127.0.0.1:${s.port} accepted a connection but sent no SSH identification in 1 s: it is not an SSH server (check the host's transport.ssh host and port, or its jump host's)`,
                );
            },
        );
    });

    it("fails an address that answers something else, quoting its first line", async () => {
        await withServer(
            (socket) => socket.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
            async (s) => {
                const error = await rejection(checkSshBanner("127.0.0.1", s.port, 5));
                assert.match(
                    error.message,
                    new RegExp(`^127\\.0\\.0\\.1:${s.port} answered "HTTP/1\\.1 400 Bad Request" and closed the connection: it is not an SSH server`),
                );
            },
        );
    });

    it("fails an address that keeps talking without an identification", async () => {
        await withServer(
            (socket) => socket.write("x".repeat(10_000)),
            async (s) => {
                const error = await rejection(checkSshBanner("127.0.0.1", s.port, 5));
                assert.match(error.message, /answered "x{60}\.\.\.", not an SSH identification/);
            },
        );
    });

    it("leaves a refused or dropped connection to the provider's retries (a machine still booting)", async () => {
        await checkSshBanner("127.0.0.1", await closedPort(), 5);
        // LXD's proxy device accepts, then closes while the instance's sshd is not up yet.
        await passesWith((socket) => socket.end());
    });

    it("keeps its words when Pulumi's serializer prefixes them once per resource, and shows no stack", async () => {
        await withServer(
            () => undefined,
            async (s) => {
                const error = await rejection(checkSshBanner("127.0.0.1", s.port, 1));
                const words = error.message;
                for (let i = 0; i < 3; i++) error.message = `error serializing property "connection": ${error.message}`;
                assert.strictEqual(error.message, words);
                assert.strictEqual(error.stack, words);
            },
        );
    });

    it("checks an address once per program run, however many commands share it", async () => {
        await withServer(
            (socket) => socket.write("SSH-2.0-OpenSSH_9.2\r\n"),
            async (s) => {
                await Promise.all([1, 2, 3].map(() => checkSshBannerOnce("127.0.0.1", s.port, 5)));
                await checkSshBannerOnce("127.0.0.1", s.port, 5);
                assert.strictEqual(s.sockets.length, 1);
            },
        );
    });
});
