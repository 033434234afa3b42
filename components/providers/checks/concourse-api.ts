/**
 * The few calls of Concourse's web API the program makes: a token for a local user (the
 * password grant `fly login` uses), and the list of workers. Node's own fetch; no fly needed.
 */

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
