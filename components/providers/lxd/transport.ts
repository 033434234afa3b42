/**
 * The way to LXD's REST API (/1.0): HTTP over the local unix socket, or HTTPS with a client
 * certificate and a pinned server certificate; LXD's answers read (errors with LXD's own text
 * kept intact) and background operations awaited. Node's http/tls only, no npm dependency:
 * the Pulumi dynamic provider loads it at run time. The typed calls are in client.ts.
 */
import * as http from "http";
import type { Duplex } from "stream";
import * as tls from "tls";
import * as crypto from "crypto";
import type { LxdServer } from "../../lib/lxd/types";

export const DEFAULT_LXD_SOCKET = "/var/lib/lxd/unix.socket";

/** An error LXD reported (an error response, or a background operation that failed). */
export class LxdApiError extends Error {
    constructor(
        /** HTTP status or operation status code (404 means "not found"). */
        public readonly statusCode: number,
        /** LXD's message, unchanged. */
        public readonly lxdMessage: string,
        /** What was asked, e.g. "POST /1.0/instances". */
        public readonly request: string,
    ) {
        super(lxdMessage);
        this.name = "LxdApiError";
    }
}

export interface LxdResponse {
    statusCode: number;
    etag?: string;
    headers: http.IncomingHttpHeaders;
    /** Parsed JSON when LXD answered JSON, else undefined (the bytes are in `raw`). */
    json?: unknown;
    raw: Buffer;
}

/** A background operation as LXD reports it from /1.0/operations/{id}. */
export interface LxdOperation {
    id: string;
    status: string;
    status_code: number;
    err: string;
    /** What the operation gives back; its shape depends on the operation (exec: return, output). */
    metadata: unknown;
}

export interface LxdClientOptions {
    /** Per-request socket timeout (ms); operation waits use their own timeout. Default 60 s. */
    requestTimeoutMs?: number;
}

const OPERATION_SUCCESS = 200;

/** A JSON object from LXD, its members not yet known. */
export type LxdObject = Record<string, unknown>;

export function isLxdObject(value: unknown): value is LxdObject {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** LXD answered something other than the documented shape: names the request and what is off. */
export function unexpectedAnswer(request: string, what: string): Error {
    return new Error(`lxd: ${request}: unexpected answer from LXD: ${what}`);
}

function operationOf(value: unknown, request: string): LxdOperation {
    if (!isLxdObject(value)) throw unexpectedAnswer(request, "the operation is not an object");
    const { id, status, status_code, err, metadata } = value;
    if (typeof id !== "string" || typeof status !== "string" || typeof status_code !== "number" || typeof err !== "string") {
        throw unexpectedAnswer(request, "the operation lacks its id, status, status_code or err");
    }
    return { id, status, status_code, err, metadata };
}

export class LxdConnection {
    private readonly requestTimeoutMs: number;
    private readonly pinnedFingerprint?: string;

    constructor(
        private readonly server: LxdServer,
        options: LxdClientOptions = {},
    ) {
        this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
        if (server.url) {
            const url = new URL(server.url);
            if (url.protocol !== "https:") throw new Error(`lxd: server url ${server.url} must be https://`);
            if (!server.clientCert || !server.clientKey) throw new Error(`lxd: server ${server.url} needs a client certificate and key`);
            if (server.serverCert) this.pinnedFingerprint = new crypto.X509Certificate(server.serverCert).fingerprint256;
        }
    }

    /** Where requests go, for messages: the socket path or the URL. */
    get endpoint(): string {
        return this.server.url ?? this.server.socket ?? DEFAULT_LXD_SOCKET;
    }

    /** One HTTP exchange. Does not interpret LXD's answer (see `sync` and `run`). */
    request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<LxdResponse> {
        const fullPath = this.withProject(path);
        let payload: Buffer | undefined;
        const sendHeaders: Record<string, string> = { ...headers };
        if (Buffer.isBuffer(body)) {
            payload = body;
            sendHeaders["Content-Type"] ??= "application/octet-stream";
        } else if (body !== undefined) {
            payload = Buffer.from(JSON.stringify(body));
            sendHeaders["Content-Type"] = "application/json";
        }
        if (payload) sendHeaders["Content-Length"] = String(payload.length);
        return new Promise((resolve, reject) => {
            const options: http.RequestOptions = { method, path: fullPath, headers: sendHeaders, timeout: this.requestTimeoutMs };
            if (this.server.url) {
                const url = new URL(this.server.url);
                options.host = url.hostname;
                options.port = url.port || 8443;
                options.headers = { ...sendHeaders, Host: url.host };
                // Open and verify the TLS session ourselves so not one byte of the request is sent
                // before the server is known to be the pinned one. (No agent: node then uses this.)
                options.createConnection = (_: http.ClientRequestArgs, done: (err: Error | null, socket: Duplex) => void) => {
                    // With an error node takes no socket (its types ask for one all the same).
                    const fail = done as (err: Error) => void;
                    this.connectTls(url).then(
                        (s) => done(null, s),
                        (e: Error) => fail(e),
                    );
                    return undefined;
                };
            } else {
                options.socketPath = this.server.socket ?? DEFAULT_LXD_SOCKET;
                options.agent = false; // one connection per request, closed after it
            }
            const req = http.request(options, (res) => {
                const chunks: Buffer[] = [];
                res.on("data", (c: Buffer) => chunks.push(c));
                res.on("error", reject);
                res.on("end", () => {
                    const raw = Buffer.concat(chunks);
                    let json: unknown;
                    if ((res.headers["content-type"] ?? "").includes("application/json")) {
                        try {
                            json = JSON.parse(raw.toString("utf8"));
                        } catch {
                            json = undefined;
                        }
                    }
                    const etag = res.headers.etag;
                    resolve({
                        statusCode: res.statusCode ?? 0,
                        etag: typeof etag === "string" ? etag.replace(/^"|"$/g, "") : undefined,
                        headers: res.headers,
                        json,
                        raw,
                    });
                });
            });
            req.on("timeout", () =>
                req.destroy(new Error(`no answer from LXD at ${this.endpoint} within ${this.requestTimeoutMs / 1000}s (${method} ${path})`)),
            );
            req.on("error", (e: NodeJS.ErrnoException) => reject(this.connectionError(e, method, path)));
            req.end(payload);
        });
    }

    /** A synchronous call: returns its metadata (LXD's, unchecked), throws LxdApiError with LXD's message on error. */
    async sync(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ metadata: unknown; etag?: string }> {
        const res = await this.request(method, path, body, headers);
        this.throwIfError(res, method, path);
        return { metadata: isLxdObject(res.json) ? res.json.metadata : undefined, etag: res.etag };
    }

    /** A call that may start a background operation: waits for it, throws if it fails. */
    async run(method: string, path: string, body?: unknown, headers?: Record<string, string>, timeoutSeconds = 300): Promise<LxdOperation | undefined> {
        const res = await this.request(method, path, body, headers);
        this.throwIfError(res, method, path);
        if (!isLxdObject(res.json) || res.json.type !== "async") return undefined;
        const { operation } = res.json;
        if (typeof operation !== "string") throw unexpectedAnswer(`${method} ${path}`, "an async answer without its operation");
        return this.waitOperation(operation, timeoutSeconds, `${method} ${path}`);
    }

    /** Waits on /1.0/operations/{id}/wait until the operation ends; throws with its `err` if it failed. */
    async waitOperation(operation: string, timeoutSeconds: number, what = operation): Promise<LxdOperation> {
        const base = operation.startsWith("/1.0/") ? operation : `/1.0/operations/${operation}`;
        const deadline = Date.now() + timeoutSeconds * 1000;
        for (;;) {
            const left = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
            const slice = Math.min(left, 30); // short waits keep each request below the socket timeout
            const op = await this.waitSlice(base, slice);
            // 1xx codes are "still going" (created, running, pending, ...); 200 success, 4xx failed.
            if (op.status_code >= OPERATION_SUCCESS) {
                if (op.status_code !== OPERATION_SUCCESS) throw new LxdApiError(op.status_code, op.err || op.status, what);
                return op;
            }
            if (Date.now() >= deadline) throw new LxdApiError(408, `operation still running after ${timeoutSeconds}s`, what);
        }
    }

    /** One bounded wait. Newer LXD answers a wait that times out with an error while the operation runs on. */
    private async waitSlice(base: string, seconds: number): Promise<LxdOperation> {
        const wait = `${base}/wait?timeout=${seconds}`;
        try {
            return operationOf((await this.sync("GET", wait)).metadata, `GET ${wait}`);
        } catch (e) {
            if (!(e instanceof LxdApiError) || !/deadline exceeded|timed? ?out/i.test(e.lxdMessage)) throw e;
            return operationOf((await this.sync("GET", base)).metadata, `GET ${base}`);
        }
    }

    /** Throws LxdApiError when `res` is an error: an error body (LXD's message) or an HTTP error status. */
    throwIfError(res: LxdResponse, method: string, path: string): void {
        const body = isLxdObject(res.json) ? res.json : undefined;
        if (body?.type === "error" || res.statusCode >= 400) {
            const message = (typeof body?.error === "string" && body.error) || res.raw.toString("utf8").trim() || `HTTP ${res.statusCode}`;
            const code = typeof body?.error_code === "number" && body.error_code ? body.error_code : res.statusCode;
            throw new LxdApiError(code, message, `${method} ${path}`);
        }
    }

    private withProject(path: string): string {
        if (!this.server.project) return path;
        return `${path}${path.includes("?") ? "&" : "?"}project=${encodeURIComponent(this.server.project)}`;
    }

    private connectTls(url: URL): Promise<tls.TLSSocket> {
        const pinned = this.pinnedFingerprint;
        return new Promise((resolve, reject) => {
            const socket = tls.connect({
                host: url.hostname,
                port: Number(url.port || 8443),
                servername: /^[0-9.]+$|:/.test(url.hostname) ? undefined : url.hostname,
                cert: this.server.clientCert,
                key: this.server.clientKey,
                // A pinned certificate replaces CA checks: LXD's server certificates are self-signed.
                rejectUnauthorized: !pinned,
            });
            socket.once("error", (e: NodeJS.ErrnoException) => {
                const tlsProblem = /certificate|self.signed|unable to verify/i.test(e.message);
                reject(tlsProblem ? new Error(`lxd: cannot verify server ${url.host}: ${e.message} (pin its certificate with serverCert)`) : e);
            });
            socket.once("secureConnect", () => {
                if (pinned) {
                    const got = socket.getPeerCertificate().fingerprint256;
                    if (got !== pinned) {
                        socket.destroy();
                        reject(new Error(`lxd: server ${url.host} presented certificate ${got}, not the pinned ${pinned}`));
                        return;
                    }
                }
                socket.removeAllListeners("error");
                resolve(socket);
            });
        });
    }

    private connectionError(e: NodeJS.ErrnoException, method: string, path: string): Error {
        if (e.code === "ENOENT" || e.code === "ECONNREFUSED" || e.code === "EACCES") {
            return new Error(
                `cannot reach LXD at ${this.endpoint} (${e.code}): is the daemon running${this.server.url ? "" : " and may this user open its socket"}? (${method} ${path})`,
            );
        }
        return e;
    }
}
