/**
 * The Concourse web node's files and steps, as pure functions: its env file (the settings
 * anyone may read) beside a secret one (the passwords), its keys, the systemd unit, and the
 * steps for the local database and the unit; and what a worker places on the web's host to be
 * admitted by the TSA.
 */
import { combine, scriptStep } from "../host/scripts";
import { HOST_LIB_DIR, HostFile, pathSlug, RenderedComponent } from "../host/steps";
import { concourseReleaseArgs, concourseReleaseFiles, PlannedRelease } from "../concourse/release";
import { renderEnvFile } from "./env-file";

/** The web's own PostgreSQL on its host, or an external one. */
export type WebDatabase =
    | {
          /** PostgreSQL on the web host, installed where missing. */
          local: {
              /** The database's name. */
              database: string;
              /** The database user the web connects as (its password is generated). */
              user: string;
          };
      }
    | {
          /** A PostgreSQL server run elsewhere (its password comes at `up`). */
          external: {
              /** Its host name or address. */
              host: string;
              /** Its port. */
              port: number;
              /** The database's name. */
              database: string;
              /** The user the web connects as. */
              user: string;
              /** libpq's sslmode. */
              sslmode: string;
          };
      };

export interface ConcourseWebSettings {
    /** The Concourse release version. */
    version: string;
    /** Where the release tarball comes from. */
    binary: PlannedRelease;
    /** The URL users and fly reach the web on. */
    externalUrl: string;
    /** Address the web and the TSA listen on. */
    bindIp: string;
    /** The web's plain HTTP port. */
    port: number;
    /** The TSA's port. */
    tsaPort: number;
    /** The web's database. */
    postgres: WebDatabase;
    /** The main team's local user (its password is generated). */
    mainTeamUser: string;
    /** Keep the local database when the web is deleted. */
    keepDatabase: boolean;
    /** HTTPS on this port with the certificate and key placed beside the keys (their contents come at `up`). */
    tls?: {
        /** The HTTPS port. */
        port: number;
    };
}

export const CONCOURSE_WEB_UNIT = "concourse-web.service";
export const CONCOURSE_WEB_PATHS = {
    unit: `/etc/systemd/system/${CONCOURSE_WEB_UNIT}`,
    env: "/etc/concourse/web.env",
    secretEnv: "/etc/concourse/web-secrets.env",
    sessionSigningKey: "/etc/concourse/session_signing_key",
    tsaHostKey: "/etc/concourse/tsa_host_key",
    /** The web's HTTPS certificate (with its chain) and key, when it has them. */
    tlsCert: "/etc/concourse/web-tls.crt",
    tlsKey: "/etc/concourse/web-tls.key",
    /**
     * What the TSA admits: every *.pub of workerKeysDir, joined on the host by concourse-web.sh
     * (the one file on the host that is not rendered here: its parts are).
     */
    authorizedWorkerKeys: "/etc/concourse/authorized_worker_keys",
    /** One file per admitted worker (placed by the worker), and the web's own `authorizedWorkerKeys`. */
    workerKeysDir: "/etc/concourse/worker-keys",
    givenWorkerKeys: "/etc/concourse/worker-keys/given.pub",
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
        // Concourse serves HTTPS beside the plain port (on the same address), which stays for the API.
        ...(s.tls
            ? ([
                  ["CONCOURSE_TLS_BIND_PORT", s.tls.port],
                  ["CONCOURSE_TLS_CERT", CONCOURSE_WEB_PATHS.tlsCert],
                  ["CONCOURSE_TLS_KEY", CONCOURSE_WEB_PATHS.tlsKey],
              ] as [string, number | string][])
            : []),
    ];
    return renderEnvFile(env, "Rendered by gpu-workers.");
}

/** The passwords, in their own file (a secret): the main team user's and the database's. */
export function renderWebSecretEnv(user: string, userPassword: string, databasePassword: string): string {
    if (user.includes(":")) throw new Error("concourse web: the main team user's name cannot hold ':'");
    return renderEnvFile([
        ["CONCOURSE_POSTGRES_PASSWORD", databasePassword],
        ["CONCOURSE_ADD_LOCAL_USER", `${user}:${userPassword}`],
    ]);
}

/** Public keys the TSA admits: one per line. */
export function renderAuthorizedWorkerKeys(keys: string[]): string {
    const lines = keys.map((k) => k.trim()).filter((k) => k !== "");
    for (const line of lines) {
        if (line.includes("\n")) throw new Error(`concourse web: an authorized worker key must be one line: ${JSON.stringify(line.slice(0, 80))}`);
    }
    return lines.length === 0 ? "" : lines.join("\n") + "\n";
}

/** Where a worker's key file lies on the web host (its Concourse name, as a file name). */
export function workerKeyPath(worker: string): string {
    return `${CONCOURSE_WEB_PATHS.workerKeysDir}/worker-${pathSlug(worker)}.pub`;
}

/** The prefix of the resources of a worker's admission on its web's host (the worker component's name). */
export function admissionPrefix(component: string): string {
    return `${component}-admission`;
}

/** How a step on the web host tells the running web that its worker keys changed. */
export interface WebKeysTarget {
    unit: string;
    /** Where the web answers on its own host, to wait for it before telling it. */
    address: string;
    port: number;
}

export function webKeysTarget(s: Pick<ConcourseWebSettings, "bindIp" | "port">): WebKeysTarget {
    return { unit: CONCOURSE_WEB_UNIT, address: s.bindIp === "0.0.0.0" ? LOOPBACK : s.bindIp, port: s.port };
}

function keysArgs(web: WebKeysTarget): string[] {
    const P = CONCOURSE_WEB_PATHS;
    return ["--keys-dir", P.workerKeysDir, "--keys", P.authorizedWorkerKeys, "--unit", web.unit, "--port", String(web.port), "--address", web.address];
}

/**
 * What a worker places on its web's host to be admitted: its public key as a file of the
 * web's key folder, and a step that has the running web read its keys again (the TSA reloads
 * them on SIGHUP; the web is not restarted). Deleting the worker removes the key after the
 * worker has retired, through the TSA, with that very key.
 */
export function renderWorkerAdmission(worker: string, web: WebKeysTarget): RenderedComponent {
    const key = workerKeyPath(worker);
    const admit = scriptStep({
        name: "tsa-admission",
        script: "concourse-web.sh",
        action: "admit",
        removeAction: "dismiss",
        args: ["--key", key, ...keysArgs(web)],
        dependsOn: [key],
    });
    // One admission per worker key on the web's host.
    const steps = admit.steps.map((step) => ({ ...step, slot: `${step.name}:${key}` }));
    return combine({ files: [{ path: key, mode: "0644", content: "", generated: "worker-key.public" }], steps: [] }, { ...admit, steps });
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
        { path: P.givenWorkerKeys, mode: "0644", content: "", generated: "worker-keys.public" },
        { path: P.unit, mode: "0644", content: renderWebUnit() },
        ...concourseReleaseFiles(s.binary, P.archive),
        // Both come from secret config keys: the certificate too shows as [secret].
        ...(s.tls
            ? [
                  { path: P.tlsCert, mode: "0644", content: "", secret: true },
                  { path: P.tlsKey, mode: "0600", content: "", secret: true },
              ]
            : []),
    ];
    const database: RenderedComponent =
        "local" in s.postgres
            ? scriptStep({
                  name: "postgres",
                  script: "concourse-postgres.sh",
                  args: ["--database", s.postgres.local.database, "--user", s.postgres.local.user, "--secrets-env", P.secretEnv],
                  removeArgs: ["--database", s.postgres.local.database, "--user", s.postgres.local.user, ...(s.keepDatabase ? ["--keep"] : [])],
                  dependsOn: [P.secretEnv],
              })
            : { files: [], steps: [] };
    // The worker keys are not watched: a change of them is a reload, not a restart.
    const watched = [P.unit, P.env, P.secretEnv, P.sessionSigningKey, P.tsaHostKey, ...(s.tls ? [P.tlsCert, P.tlsKey] : [])];
    const web = scriptStep({
        name: "concourse-web",
        script: "concourse-web.sh",
        args: [...concourseReleaseArgs(s.version, s.binary, P.archive), ...keysArgs(webKeysTarget(s)), ...watched.flatMap((w) => ["--watch", w])],
        removeArgs: ["--unit", CONCOURSE_WEB_UNIT, "--keys", P.authorizedWorkerKeys],
        dependsOn: [...files.map((f) => f.path), ...database.steps.map((step) => step.name)],
    });
    return combine({ files, steps: [] }, database, web);
}
