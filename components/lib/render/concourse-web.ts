/**
 * The Concourse web node's files and steps, as pure functions: its env file (the settings
 * anyone may read) beside a secret one (the passwords), its keys, the systemd unit, and the
 * steps for the local database and the unit.
 */
import { combine, scriptStep } from "../host/scripts";
import { HOST_LIB_DIR, HostFile, RenderedComponent } from "../host/steps";
import { concourseReleaseArgs, concourseReleaseFiles, ConcourseRelease } from "./concourse-release";

/** The web's own PostgreSQL on its host, or an external one. */
export type WebDatabase =
    | { local: { database: string; user: string } }
    | { external: { host: string; port: number; database: string; user: string; sslmode: string } };

export interface ConcourseWebSettings {
    version: string;
    binary: ConcourseRelease;
    /** The URL users and fly reach the web on. */
    externalUrl: string;
    /** Address the web and the TSA listen on. */
    bindIp: string;
    port: number;
    tsaPort: number;
    postgres: WebDatabase;
    /** The main team's local user (its password is generated). */
    mainTeamUser: string;
    /** Keep the local database when the web is deleted. */
    keepDatabase: boolean;
}

export const CONCOURSE_WEB_UNIT = "concourse-web.service";
export const CONCOURSE_WEB_PATHS = {
    unit: `/etc/systemd/system/${CONCOURSE_WEB_UNIT}`,
    env: "/etc/concourse/web.env",
    secretEnv: "/etc/concourse/web-secrets.env",
    sessionSigningKey: "/etc/concourse/session_signing_key",
    tsaHostKey: "/etc/concourse/tsa_host_key",
    authorizedWorkerKeys: "/etc/concourse/authorized_worker_keys",
    archive: `${HOST_LIB_DIR}/concourse.tgz`,
    binary: "/usr/local/concourse/bin/concourse",
} as const;

function databaseOf(s: ConcourseWebSettings): { host: string; port: number; database: string; user: string; sslmode: string } {
    return "local" in s.postgres ? { host: "127.0.0.1", port: 5432, sslmode: "disable", ...s.postgres.local } : s.postgres.external;
}

/** Where the web's own listeners for other nodes and debugging go: this host only. */
const LOOPBACK = "127.0.0.1";

/** The web's environment: everything but the passwords. */
export function renderWebEnv(s: ConcourseWebSettings): string {
    const db = databaseOf(s);
    const env: [string, string | number][] = [
        ["CONCOURSE_EXTERNAL_URL", s.externalUrl],
        ["CONCOURSE_BIND_IP", s.bindIp],
        ["CONCOURSE_BIND_PORT", s.port],
        ["CONCOURSE_PEER_ADDRESS", LOOPBACK],
        ["CONCOURSE_DEBUG_BIND_IP", LOOPBACK],
        ["CONCOURSE_TSA_BIND_IP", s.bindIp],
        ["CONCOURSE_TSA_BIND_PORT", s.tsaPort],
        ["CONCOURSE_TSA_PEER_ADDRESS", LOOPBACK],
        ["CONCOURSE_TSA_DEBUG_BIND_IP", LOOPBACK],
        ["CONCOURSE_SESSION_SIGNING_KEY", CONCOURSE_WEB_PATHS.sessionSigningKey],
        ["CONCOURSE_TSA_HOST_KEY", CONCOURSE_WEB_PATHS.tsaHostKey],
        ["CONCOURSE_TSA_AUTHORIZED_KEYS", CONCOURSE_WEB_PATHS.authorizedWorkerKeys],
        ["CONCOURSE_POSTGRES_HOST", db.host],
        ["CONCOURSE_POSTGRES_PORT", db.port],
        ["CONCOURSE_POSTGRES_DATABASE", db.database],
        ["CONCOURSE_POSTGRES_USER", db.user],
        ["CONCOURSE_POSTGRES_SSLMODE", db.sslmode],
        ["CONCOURSE_MAIN_TEAM_LOCAL_USER", s.mainTeamUser],
    ];
    return "# Rendered by gpu-workers.\n" + env.map(([k, v]) => `${k}=${v}`).join("\n") + "\n";
}

/** The passwords, in their own file (a secret): the main team user's and the database's. */
export function renderWebSecretEnv(user: string, userPassword: string, databasePassword: string): string {
    for (const [what, value] of [["user", user], ["password", userPassword], ["database password", databasePassword]]) {
        if (/[\n\0]/.test(value)) throw new Error(`concourse web: the ${what} must be one line`);
    }
    if (user.includes(":")) throw new Error("concourse web: the main team user's name cannot hold ':'");
    return `CONCOURSE_POSTGRES_PASSWORD=${databasePassword}\nCONCOURSE_ADD_LOCAL_USER=${user}:${userPassword}\n`;
}

/** The workers the TSA admits: one public key per line. */
export function renderAuthorizedWorkerKeys(keys: string[]): string {
    return keys.map((k) => k.trim()).filter((k) => k !== "").join("\n") + "\n";
}

export function renderWebUnit(): string {
    return [
        "# Rendered by gpu-workers.",
        "[Unit]",
        "Description=Concourse CI web (gpu-workers)",
        "After=network-online.target postgresql.service",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        `EnvironmentFile=${CONCOURSE_WEB_PATHS.env}`,
        `EnvironmentFile=${CONCOURSE_WEB_PATHS.secretEnv}`,
        `ExecStart=${CONCOURSE_WEB_PATHS.binary} web`,
        "Restart=on-failure",
        "RestartSec=5",
        "LimitNOFILE=1048576",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ].join("\n");
}

export function renderConcourseWeb(s: ConcourseWebSettings): RenderedComponent {
    const P = CONCOURSE_WEB_PATHS;
    const files: HostFile[] = [
        { path: P.env, mode: "0644", content: renderWebEnv(s) },
        { path: P.secretEnv, mode: "0600", content: "", secret: true },
        { path: P.sessionSigningKey, mode: "0600", content: "", secret: true },
        { path: P.tsaHostKey, mode: "0600", content: "", secret: true },
        { path: P.authorizedWorkerKeys, mode: "0644", content: "", generated: "worker-keys.public" },
        { path: P.unit, mode: "0644", content: renderWebUnit() },
        ...concourseReleaseFiles(s.binary, P.archive),
    ];
    const database: RenderedComponent = "local" in s.postgres
        ? scriptStep({
            name: "postgres",
            script: "concourse-postgres.sh",
            args: ["--database", s.postgres.local.database, "--user", s.postgres.local.user, "--secrets-env", P.secretEnv],
            removeArgs: ["--database", s.postgres.local.database, "--user", s.postgres.local.user, ...(s.keepDatabase ? ["--keep"] : [])],
            dependsOn: [P.secretEnv],
        })
        : { files: [], steps: [] };
    const watched = [P.unit, P.env, P.secretEnv, P.sessionSigningKey, P.tsaHostKey, P.authorizedWorkerKeys];
    const address = s.bindIp === "0.0.0.0" ? LOOPBACK : s.bindIp;
    const web = scriptStep({
        name: "concourse-web",
        script: "concourse-web.sh",
        args: [...concourseReleaseArgs(s.version, s.binary, P.archive), "--unit", CONCOURSE_WEB_UNIT, "--port", String(s.port), "--address", address, ...watched.flatMap((w) => ["--watch", w])],
        removeArgs: ["--unit", CONCOURSE_WEB_UNIT],
        dependsOn: [...files.map((f) => f.path), ...database.steps.map((step) => step.name)],
    });
    return combine({ files, steps: [] }, database, web);
}
