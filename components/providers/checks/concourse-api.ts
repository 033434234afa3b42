/**
 * The few calls of Concourse's web API the program makes: a token for a local user (the
 * password grant `fly login` uses), the list of workers, and a one-off build followed to its
 * end. Node's own http and https; no fly needed. An https web is trusted through `ca` when
 * given, and then through nothing else.
 */
import * as http from "http";
import * as https from "https";
import * as tls from "tls";
import { X509Certificate } from "crypto";
import { BuildEvent, parseBuildEvents } from "../../lib/concourse/task-check";

export interface ConcourseApi {
    /** The web's external URL, e.g. http://127.0.0.1:8080. */
    url: string;
    username: string;
    password: string;
    /**
     * For an https web: the PEM certificate the web serves, or the CA that signed it. A CA (a
     * certificate that may sign others) is trusted as the only root; a server certificate is
     * trusted as itself, and the web must present exactly it. Default: the system's CAs.
     */
    ca?: string;
}

/** The TLS options that trust `ca` and nothing else (the host name is checked either way). */
export function trustOnly(ca: string): https.RequestOptions {
    const given = new X509Certificate(ca);
    if (given.ca) return { ca };
    // A server certificate: pinned, whoever signed it.
    return {
        ca,
        allowPartialTrustChain: true,
        checkServerIdentity: (host, peer) => {
            if (!peer.raw || !given.raw.equals(peer.raw))
                return new Error(
                    `the web presented a certificate (sha256 ${peer.fingerprint256}) other than the one it was given (sha256 ${given.fingerprint256})`,
                );
            return tls.checkServerIdentity(host, peer);
        },
    };
}

interface Answer {
    status: number;
    ok: boolean;
    body: http.IncomingMessage;
    text(): Promise<string>;
    json(): Promise<unknown>;
}

/** One request to the web; `signal` aborts it (also while the body streams). */
function request(
    api: ConcourseApi,
    url: string,
    options: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal },
): Promise<Answer> {
    const target = new URL(url);
    const secure = target.protocol === "https:";
    const send = secure ? https.request : http.request;
    return new Promise((resolve, reject) => {
        const req = send(
            target,
            {
                method: options.method ?? "GET",
                headers: { ...options.headers, ...(options.body !== undefined ? { "content-length": Buffer.byteLength(options.body) } : {}) },
                signal: options.signal,
                ...(secure && api.ca ? trustOnly(api.ca) : {}),
            },
            (res) => {
                const status = res.statusCode ?? 0;
                const text = async () => {
                    const chunks: Buffer[] = [];
                    for await (const c of res) chunks.push(c as Buffer);
                    return Buffer.concat(chunks).toString("utf8");
                };
                resolve({ status, ok: status >= 200 && status < 300, body: res, text, json: async () => JSON.parse(await text()) as unknown });
            },
        );
        req.on("error", reject);
        req.end(options.body);
    });
}

/** A worker as GET /api/v1/workers lists it (the fields the program reads). */
export interface ApiWorker {
    name: string;
    state: string;
    tags: string[] | null;
    team: string;
}

const REQUEST_TIMEOUT_MS = 10_000;

function endpoint(api: ConcourseApi, path: string): string {
    return api.url.replace(/\/+$/, "") + path;
}

/** fly's OAuth client id and secret, as fly itself sends them. */
const FLY_CLIENT = Buffer.from("fly:Zmx5").toString("base64");

export async function token(api: ConcourseApi): Promise<string> {
    const body = new URLSearchParams({
        grant_type: "password",
        username: api.username,
        password: api.password,
        scope: "openid profile email federated:id groups",
    });
    const r = await request(api, endpoint(api, "/sky/issuer/token"), {
        method: "POST",
        headers: { authorization: `Basic ${FLY_CLIENT}`, "content-type": "application/x-www-form-urlencoded" },
        body: body.toString(),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!r.ok) throw new Error(`logging in as ${api.username} at ${api.url} answered ${r.status} ${(await r.text()).trim().slice(0, 200)}`);
    const json = (await r.json()) as { access_token?: string };
    if (!json.access_token) throw new Error(`logging in as ${api.username} at ${api.url} gave no access token`);
    return json.access_token;
}

export async function workers(api: ConcourseApi, bearer: string): Promise<ApiWorker[]> {
    const r = await request(api, endpoint(api, "/api/v1/workers"), {
        headers: { authorization: `Bearer ${bearer}` },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!r.ok) throw new Error(`GET ${endpoint(api, "/api/v1/workers")} answered ${r.status}`);
    return (await r.json()) as ApiWorker[];
}

/** Starts a one-off build of `plan` in `team` (what `fly execute` does); returns its id. */
export async function createBuild(api: ConcourseApi, bearer: string, team: string, plan: object): Promise<number> {
    const url = endpoint(api, `/api/v1/teams/${encodeURIComponent(team)}/builds`);
    const r = await request(api, url, {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
        body: JSON.stringify(plan),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!r.ok) throw new Error(`POST ${url} answered ${r.status} ${(await r.text()).trim().slice(0, 200)}`);
    return ((await r.json()) as { id: number }).id;
}

/** Reads a build's events until the web says it ended (the build finished), or fails after timeoutSeconds. */
export async function followBuild(api: ConcourseApi, bearer: string, build: number, timeoutSeconds: number): Promise<BuildEvent[]> {
    const url = endpoint(api, `/api/v1/builds/${build}/events`);
    // The web keeps the stream open after its end event: we close it.
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new Error(`build ${build} did not finish within ${timeoutSeconds}s`)), timeoutSeconds * 1000);
    try {
        const r = await request(api, url, { headers: { authorization: `Bearer ${bearer}`, accept: "text/event-stream" }, signal: stop.signal });
        if (!r.ok) throw new Error(`GET ${url} answered ${r.status}`);
        const decoder = new TextDecoder();
        const events: BuildEvent[] = [];
        let pending = "";
        for await (const chunk of r.body as AsyncIterable<Uint8Array>) {
            const parsed = parseBuildEvents(pending + decoder.decode(chunk, { stream: true }));
            events.push(...parsed.events);
            pending = parsed.rest;
            if (parsed.ended) return events;
        }
        throw new Error(`the events of build ${build} stopped before its end`);
    } catch (e) {
        throw stop.signal.aborted && stop.signal.reason instanceof Error ? stop.signal.reason : e;
    } finally {
        clearTimeout(timer);
        stop.abort();
    }
}
