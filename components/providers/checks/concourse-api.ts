/**
 * The few calls of Concourse's web API the program makes: a token for a local user (the
 * password grant `fly login` uses), the list of workers, and a one-off build followed to its
 * end. Node's own fetch; no fly needed.
 */
import { BuildEvent, parseBuildEvents } from "../../lib/concourse/task-check";

export interface ConcourseApi {
    /** The web's external URL, e.g. http://127.0.0.1:8080. */
    url: string;
    username: string;
    password: string;
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
    const body = new URLSearchParams({ grant_type: "password", username: api.username, password: api.password, scope: "openid profile email federated:id groups" });
    const r = await fetch(endpoint(api, "/sky/issuer/token"), {
        method: "POST",
        headers: { authorization: `Basic ${FLY_CLIENT}`, "content-type": "application/x-www-form-urlencoded" },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!r.ok) throw new Error(`logging in as ${api.username} at ${api.url} answered ${r.status} ${(await r.text()).trim().slice(0, 200)}`);
    const json = await r.json() as { access_token?: string };
    if (!json.access_token) throw new Error(`logging in as ${api.username} at ${api.url} gave no access token`);
    return json.access_token;
}

export async function workers(api: ConcourseApi, bearer: string): Promise<ApiWorker[]> {
    const r = await fetch(endpoint(api, "/api/v1/workers"), { headers: { authorization: `Bearer ${bearer}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (!r.ok) throw new Error(`GET ${endpoint(api, "/api/v1/workers")} answered ${r.status}`);
    return await r.json() as ApiWorker[];
}

/** Starts a one-off build of `plan` in `team` (what `fly execute` does); returns its id. */
export async function createBuild(api: ConcourseApi, bearer: string, team: string, plan: object): Promise<number> {
    const url = endpoint(api, `/api/v1/teams/${encodeURIComponent(team)}/builds`);
    const r = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
        body: JSON.stringify(plan),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!r.ok) throw new Error(`POST ${url} answered ${r.status} ${(await r.text()).trim().slice(0, 200)}`);
    return (await r.json() as { id: number }).id;
}

/** Reads a build's events until the web says it ended (the build finished), or fails after timeoutSeconds. */
export async function followBuild(api: ConcourseApi, bearer: string, build: number, timeoutSeconds: number): Promise<BuildEvent[]> {
    const url = endpoint(api, `/api/v1/builds/${build}/events`);
    // The web keeps the stream open after its end event: we close it.
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new Error(`build ${build} did not finish within ${timeoutSeconds}s`)), timeoutSeconds * 1000);
    try {
        const r = await fetch(url, { headers: { authorization: `Bearer ${bearer}`, accept: "text/event-stream" }, signal: stop.signal });
        if (!r.ok || !r.body) throw new Error(`GET ${url} answered ${r.status}`);
        const decoder = new TextDecoder();
        const events: BuildEvent[] = [];
        let pending = "";
        for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
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
