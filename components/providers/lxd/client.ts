/**
 * A small client for LXD's REST API (/1.0) over the local unix socket or HTTPS with a client
 * certificate. Node's http/tls only, no npm dependency: the Pulumi dynamic provider loads it
 * at run time. Background operations are awaited; LXD's own error text is kept intact.
 */
import * as http from "http";
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
    /** Parsed JSON when LXD answered JSON, else the raw bytes. */
    json?: any;
    raw: Buffer;
}

/** A background operation as LXD reports it from /1.0/operations/{id}. */
export interface LxdOperation {
    id: string;
    status: string;
    status_code: number;
    err: string;
    metadata: any;
}

export interface LxdExecResult {
    exitCode: number;
    stdout: string;
    stderr: string;
}

export interface LxdClientOptions {
    /** Per-request socket timeout (ms); operation waits use their own timeout. Default 60 s. */
    requestTimeoutMs?: number;
}

const OPERATION_SUCCESS = 200;

export class LxdClient {
    private readonly requestTimeoutMs: number;
    private readonly pinnedFingerprint?: string;

    constructor(private readonly server: LxdServer, options: LxdClientOptions = {}) {
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
                options.createConnection = ((_: unknown, done: (err: Error | null, socket?: any) => void) => {
                    this.connectTls(url).then((s) => done(null, s), (e) => done(e));
                    return undefined;
                }) as any;
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
                    let json: any;
                    if ((res.headers["content-type"] ?? "").includes("application/json")) {
                        try { json = JSON.parse(raw.toString("utf8")); } catch { json = undefined; }
                    }
                    const etag = res.headers.etag;
                    resolve({ statusCode: res.statusCode ?? 0, etag: typeof etag === "string" ? etag.replace(/^"|"$/g, "") : undefined, headers: res.headers, json, raw });
                });
            });
            req.on("timeout", () => req.destroy(new Error(`no answer from LXD at ${this.endpoint} within ${this.requestTimeoutMs / 1000}s (${method} ${path})`)));
            req.on("error", (e: NodeJS.ErrnoException) => reject(this.connectionError(e, method, path)));
            req.end(payload);
        });
    }

    /** A synchronous call: returns its metadata, throws LxdApiError with LXD's message on error. */
    async sync<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ metadata: T; etag?: string }> {
        const res = await this.request(method, path, body, headers);
        this.throwIfError(res, method, path);
        return { metadata: res.json?.metadata as T, etag: res.etag };
    }

    /** A call that may start a background operation: waits for it, throws if it fails. */
    async run(method: string, path: string, body?: unknown, headers?: Record<string, string>, timeoutSeconds = 300): Promise<LxdOperation | undefined> {
        const res = await this.request(method, path, body, headers);
        this.throwIfError(res, method, path);
        if (res.json?.type !== "async") return undefined;
        return this.waitOperation(res.json.operation as string, timeoutSeconds, `${method} ${path}`);
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
        try {
            return (await this.sync<LxdOperation>("GET", `${base}/wait?timeout=${seconds}`)).metadata;
        } catch (e) {
            if (!(e instanceof LxdApiError) || !/deadline exceeded|timed? ?out/i.test(e.lxdMessage)) throw e;
            return (await this.sync<LxdOperation>("GET", base)).metadata;
        }
    }

    // ---- instances -------------------------------------------------------------------------

    /** The instance and its ETag, or undefined when LXD has no instance of that name. */
    async getInstance(name: string): Promise<{ instance: any; etag?: string } | undefined> {
        try {
            const { metadata, etag } = await this.sync("GET", `/1.0/instances/${encodeURIComponent(name)}`);
            return { instance: metadata, etag };
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return undefined;
            throw e;
        }
    }

    async createInstance(body: Record<string, unknown>): Promise<void> {
        await this.run("POST", "/1.0/instances", body);
    }

    /** Replaces the instance's writable fields (PUT), guarded by the ETag read before. */
    async putInstance(name: string, body: Record<string, unknown>, etag?: string): Promise<void> {
        await this.run("PUT", `/1.0/instances/${encodeURIComponent(name)}`, body, etag ? { "If-Match": etag } : {});
    }

    /** Changes only the given fields (PATCH), guarded by the ETag when given. */
    async patchInstance(name: string, body: Record<string, unknown>, etag?: string): Promise<void> {
        await this.run("PATCH", `/1.0/instances/${encodeURIComponent(name)}`, body, etag ? { "If-Match": etag } : {});
    }

    async getInstanceState(name: string): Promise<any> {
        return (await this.sync("GET", `/1.0/instances/${encodeURIComponent(name)}/state`)).metadata;
    }

    /** start, stop, restart, freeze, unfreeze; `force` kills instead of a clean shutdown. */
    async setInstanceState(name: string, action: string, options: { force?: boolean; timeout?: number } = {}): Promise<void> {
        const timeout = options.timeout ?? 30;
        await this.run("PUT", `/1.0/instances/${encodeURIComponent(name)}/state`, { action, timeout, force: options.force ?? false }, {}, timeout + 30);
    }

    /** Deletes the instance; false when it did not exist. */
    async deleteInstance(name: string): Promise<boolean> {
        try {
            await this.run("DELETE", `/1.0/instances/${encodeURIComponent(name)}`);
            return true;
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return false;
            throw e;
        }
    }

    /** Writes a file (or creates a folder) inside the instance through the files API. */
    async pushFile(name: string, path: string, content: Buffer | string, options: { uid?: number; gid?: number; mode?: string; type?: "file" | "directory" } = {}): Promise<void> {
        const headers: Record<string, string> = {
            // LXD parses form-encoded bodies as form fields: the file would arrive empty.
            "Content-Type": "application/octet-stream",
            "X-LXD-type": options.type ?? "file",
            "X-LXD-uid": String(options.uid ?? 0),
            "X-LXD-gid": String(options.gid ?? 0),
            "X-LXD-mode": options.mode ?? (options.type === "directory" ? "0755" : "0644"),
            "X-LXD-write": "overwrite",
        };
        const body = Buffer.isBuffer(content) ? content : Buffer.from(content, "utf8");
        await this.sync("POST", `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`, body, headers);
    }

    /** What is at `path` inside the instance: file, directory, symlink, or undefined when nothing. */
    async statPath(name: string, path: string): Promise<string | undefined> {
        const p = `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`;
        const res = await this.request("GET", p);
        if (res.statusCode === 404) return undefined;
        this.throwIfError(res, "GET", p);
        const type = res.headers["x-lxd-type"];
        return typeof type === "string" ? type : "file";
    }

    /** Reads a file from the instance. */
    async pullFile(name: string, path: string): Promise<Buffer> {
        const p = `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`;
        const res = await this.request("GET", p);
        this.throwIfError(res, "GET", p);
        return res.raw;
    }

    /** Runs a command inside the instance without a terminal and returns its exit code and output. */
    async exec(name: string, command: string[], options: { env?: Record<string, string>; timeoutSeconds?: number } = {}): Promise<LxdExecResult> {
        const op = await this.run("POST", `/1.0/instances/${encodeURIComponent(name)}/exec`, {
            command,
            environment: options.env ?? {},
            "wait-for-websocket": false,
            interactive: false,
            "record-output": true,
        }, {}, options.timeoutSeconds ?? 120);
        const meta = op?.metadata ?? {};
        const output: Record<string, string> = meta.output ?? {};
        const read = async (key: string): Promise<string> => {
            const logPath = output[key];
            if (!logPath) return "";
            const res = await this.request("GET", logPath);
            // The recorded output is a log file on the server: remove it once read.
            await this.request("DELETE", logPath).catch(() => undefined);
            return res.statusCode === 200 ? res.raw.toString("utf8") : "";
        };
        return { exitCode: Number(meta.return ?? -1), stdout: await read("1"), stderr: await read("2") };
    }

    // ---- images ----------------------------------------------------------------------------

    /** The fingerprint an alias points to, or undefined when there is no such alias. */
    async imageAliasTarget(alias: string): Promise<string | undefined> {
        try {
            const { metadata } = await this.sync("GET", `/1.0/images/aliases/${encodeURIComponent(alias)}`);
            return metadata?.target as string | undefined;
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return undefined;
            throw e;
        }
    }

    /** The server's /1.0 record (API extensions, environment, auth state). */
    async serverInfo(): Promise<any> {
        return (await this.sync("GET", "/1.0")).metadata;
    }

    // ---- internals -------------------------------------------------------------------------

    private withProject(path: string): string {
        if (!this.server.project) return path;
        return `${path}${path.includes("?") ? "&" : "?"}project=${encodeURIComponent(this.server.project)}`;
    }

    private throwIfError(res: LxdResponse, method: string, path: string): void {
        const body = res.json;
        if (body?.type === "error" || res.statusCode >= 400) {
            const message = body?.error || res.raw.toString("utf8").trim() || `HTTP ${res.statusCode}`;
            throw new LxdApiError(body?.error_code || res.statusCode, message, `${method} ${path}`);
        }
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
            return new Error(`cannot reach LXD at ${this.endpoint} (${e.code}): is the daemon running${this.server.url ? "" : " and may this user open its socket"}? (${method} ${path})`);
        }
        return e;
    }
}
