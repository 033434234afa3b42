/**
 * A small typed client for LXD's REST API: the calls the LxdInstance provider makes on
 * instances, their files and images. Each answer is checked for the fields the callers read
 * before it is handed on; the way there and back (socket or HTTPS, operations) is
 * transport.ts.
 */
import type { LxdDevices, LxdInstanceType, LxdServer } from "../../lib/lxd/types";
import { isLxdObject, LxdApiError, LxdClientOptions, LxdConnection, LxdObject, unexpectedAnswer } from "./transport";

export { DEFAULT_LXD_SOCKET, LxdApiError } from "./transport";
export type { LxdClientOptions, LxdOperation, LxdResponse } from "./transport";

/**
 * An instance as LXD reports it (GET /1.0/instances/{name}): the fields the provider reads,
 * checked. The record is LXD's own object, so the members not named here are in it too. LXD
 * writes an empty list or map as null.
 */
export interface LxdInstanceRecord {
    name: string;
    type: LxdInstanceType;
    /** LXD's status word: Running, Stopped, ... */
    status: string;
    architecture?: string;
    profiles?: string[] | null;
    config?: Record<string, string> | null;
    devices?: LxdDevices | null;
    ephemeral?: boolean;
    description?: string;
}

/** The server's /1.0 record: the fields named here are checked, the rest are LXD's as they came. */
export interface LxdServerInfo extends LxdObject {
    /** The API extensions the server has. */
    api_extensions?: string[];
    /** "trusted" when the server trusts this client. */
    auth?: string;
}

function isServerInfo(value: LxdObject): value is LxdServerInfo {
    return (value.api_extensions === undefined || isStringList(value.api_extensions)) && (value.auth === undefined || typeof value.auth === "string");
}

export interface LxdExecResult {
    exitCode: number;
    stdout: string;
    stderr: string;
}

const INSTANCE_TYPES: readonly string[] = ["container", "virtual-machine"] satisfies LxdInstanceType[];

function isStringRecord(value: unknown): value is Record<string, string> {
    return isLxdObject(value) && Object.values(value).every((v) => typeof v === "string");
}

function isStringList(value: unknown): value is string[] {
    return Array.isArray(value) && value.every((v) => typeof v === "string");
}

/** The instance LXD sent, once each field the provider reads has the type it expects. */
function instanceOf(value: unknown, request: string): LxdInstanceRecord {
    if (!isLxdObject(value)) throw unexpectedAnswer(request, "the instance is not an object");
    const wrong = [
        typeof value.name !== "string" && "name",
        (typeof value.type !== "string" || !INSTANCE_TYPES.includes(value.type)) && "type",
        typeof value.status !== "string" && "status",
        value.architecture !== undefined && typeof value.architecture !== "string" && "architecture",
        value.profiles !== undefined && value.profiles !== null && !isStringList(value.profiles) && "profiles",
        value.config !== undefined && value.config !== null && !isStringRecord(value.config) && "config",
        value.devices !== undefined &&
            value.devices !== null &&
            !(isLxdObject(value.devices) && Object.values(value.devices).every(isStringRecord)) &&
            "devices",
        value.ephemeral !== undefined && typeof value.ephemeral !== "boolean" && "ephemeral",
        value.description !== undefined && typeof value.description !== "string" && "description",
    ].filter((field): field is string => field !== false);
    if (wrong.length > 0) throw unexpectedAnswer(request, `the instance's ${wrong.join(", ")} ${wrong.length > 1 ? "are" : "is"} missing or of another type`);
    return value as LxdInstanceRecord & LxdObject; // each field checked above
}

export class LxdClient {
    /** The way to the server, for a call this client has no method for. */
    readonly connection: LxdConnection;

    constructor(server: LxdServer, options: LxdClientOptions = {}) {
        this.connection = new LxdConnection(server, options);
    }

    /** Where requests go, for messages: the socket path or the URL. */
    get endpoint(): string {
        return this.connection.endpoint;
    }

    // ---- instances -------------------------------------------------------------------------

    /** The instance and its ETag, or undefined when LXD has no instance of that name. */
    async getInstance(name: string): Promise<{ instance: LxdInstanceRecord; etag?: string } | undefined> {
        const path = `/1.0/instances/${encodeURIComponent(name)}`;
        try {
            const { metadata, etag } = await this.connection.sync("GET", path);
            return { instance: instanceOf(metadata, `GET ${path}`), etag };
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return undefined;
            throw e;
        }
    }

    async createInstance(body: Record<string, unknown>): Promise<void> {
        await this.connection.run("POST", "/1.0/instances", body);
    }

    /** Replaces the instance's writable fields (PUT), guarded by the ETag read before. */
    async putInstance(name: string, body: Record<string, unknown>, etag?: string): Promise<void> {
        await this.connection.run("PUT", `/1.0/instances/${encodeURIComponent(name)}`, body, etag ? { "If-Match": etag } : {});
    }

    /** Changes only the given fields (PATCH), guarded by the ETag when given. */
    async patchInstance(name: string, body: Record<string, unknown>, etag?: string): Promise<void> {
        await this.connection.run("PATCH", `/1.0/instances/${encodeURIComponent(name)}`, body, etag ? { "If-Match": etag } : {});
    }

    /** The instance's running state (status, processes, network, ...) as LXD reports it. */
    async getInstanceState(name: string): Promise<LxdObject> {
        const path = `/1.0/instances/${encodeURIComponent(name)}/state`;
        const { metadata } = await this.connection.sync("GET", path);
        if (!isLxdObject(metadata)) throw unexpectedAnswer(`GET ${path}`, "the state is not an object");
        return metadata;
    }

    /** start, stop, restart, freeze, unfreeze; `force` kills instead of a clean shutdown. */
    async setInstanceState(name: string, action: string, options: { force?: boolean; timeout?: number } = {}): Promise<void> {
        const timeout = options.timeout ?? 30;
        await this.connection.run(
            "PUT",
            `/1.0/instances/${encodeURIComponent(name)}/state`,
            { action, timeout, force: options.force ?? false },
            {},
            timeout + 30,
        );
    }

    /** Deletes the instance; false when it did not exist. */
    async deleteInstance(name: string): Promise<boolean> {
        try {
            await this.connection.run("DELETE", `/1.0/instances/${encodeURIComponent(name)}`);
            return true;
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return false;
            throw e;
        }
    }

    /** Writes a file (or creates a folder) inside the instance through the files API. */
    async pushFile(
        name: string,
        path: string,
        content: Buffer | string,
        options: { uid?: number; gid?: number; mode?: string; type?: "file" | "directory" } = {},
    ): Promise<void> {
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
        await this.connection.sync("POST", `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`, body, headers);
    }

    /** What is at `path` inside the instance: file, directory, symlink, or undefined when nothing. */
    async statPath(name: string, path: string): Promise<string | undefined> {
        const p = `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`;
        const res = await this.connection.request("GET", p);
        if (res.statusCode === 404) return undefined;
        this.connection.throwIfError(res, "GET", p);
        const type = res.headers["x-lxd-type"];
        return typeof type === "string" ? type : "file";
    }

    /** Reads a file from the instance. */
    async pullFile(name: string, path: string): Promise<Buffer> {
        const p = `/1.0/instances/${encodeURIComponent(name)}/files?path=${encodeURIComponent(path)}`;
        const res = await this.connection.request("GET", p);
        this.connection.throwIfError(res, "GET", p);
        return res.raw;
    }

    /** Runs a command inside the instance without a terminal and returns its exit code and output. */
    async exec(name: string, command: string[], options: { env?: Record<string, string>; timeoutSeconds?: number } = {}): Promise<LxdExecResult> {
        const op = await this.connection.run(
            "POST",
            `/1.0/instances/${encodeURIComponent(name)}/exec`,
            {
                command,
                environment: options.env ?? {},
                "wait-for-websocket": false,
                interactive: false,
                "record-output": true,
            },
            {},
            options.timeoutSeconds ?? 120,
        );
        // The operation's metadata: the exit code (return) and where the recorded output is (output).
        const meta = isLxdObject(op?.metadata) ? op.metadata : {};
        const output = isLxdObject(meta.output) ? meta.output : {};
        const read = async (key: string): Promise<string> => {
            const logPath = output[key];
            if (typeof logPath !== "string" || !logPath) return "";
            const res = await this.connection.request("GET", logPath);
            // The recorded output is a log file on the server: remove it once read.
            await this.connection.request("DELETE", logPath).catch(() => undefined);
            return res.statusCode === 200 ? res.raw.toString("utf8") : "";
        };
        return { exitCode: Number(meta.return ?? -1), stdout: await read("1"), stderr: await read("2") };
    }

    // ---- images ----------------------------------------------------------------------------

    /** The fingerprint an alias points to, or undefined when there is no such alias. */
    async imageAliasTarget(alias: string): Promise<string | undefined> {
        try {
            const { metadata } = await this.connection.sync("GET", `/1.0/images/aliases/${encodeURIComponent(alias)}`);
            return isLxdObject(metadata) && typeof metadata.target === "string" ? metadata.target : undefined;
        } catch (e) {
            if (e instanceof LxdApiError && e.statusCode === 404) return undefined;
            throw e;
        }
    }

    /** The server's /1.0 record (API extensions, environment, auth state). */
    async serverInfo(): Promise<LxdServerInfo> {
        const { metadata } = await this.connection.sync("GET", "/1.0");
        if (!isLxdObject(metadata) || !isServerInfo(metadata))
            throw unexpectedAnswer("GET /1.0", "the server record is not an object with api_extensions (names) and auth (text)");
        return metadata;
    }
}
