/**
 * A Concourse web node's settings besides its host and release: their zod schema (the
 * component's own contract, which the stack config reuses) and defaults. Pure.
 */
import { z } from "zod";
import { port } from "./settings";
import { httpUrl } from "./value-patterns";

export const WEB_DEFAULTS = {
    port: 8080,
    tsaPort: 2222,
    tlsPort: 443,
    mainTeamUser: "admin",
    postgres: { local: { database: "atc", user: "concourse" } },
    keepDatabase: false,
} as const;

/** A database or role name: it reaches the env file and psql's arguments, so no `$` (which PostgreSQL itself allows). */
export const pgName = z.string({ error: "expected a PostgreSQL name" }).regex(/^[A-Za-z_][A-Za-z0-9_-]{0,62}$/, { error: "expected a PostgreSQL name: a letter or _, then letters, digits, _ and - (up to 63)" });

/** The web's settings besides transport and release, as a stack or ConcourseWeb's arguments give them. */
export const webSettingsSchema = z.strictObject({
    /** Address the web and the TSA listen on (default 0.0.0.0; 127.0.0.1 for an LXD instance, reached through its published ports). */
    bindIp: z.union([z.ipv4(), z.ipv6()], { error: "expected an IP address" }).optional(),
    port: port.default(WEB_DEFAULTS.port),
    tsaPort: port.default(WEB_DEFAULTS.tsaPort),
    /** The web's HTTPS port, when it is given a certificate (`tls`). */
    tlsPort: port.default(WEB_DEFAULTS.tlsPort),
    /** The URL users reach the web on (default http://<host>:<port>, https://<host>:<tlsPort> with a certificate, or the published port of an LXD instance). */
    externalUrl: httpUrl.optional(),
    mainTeamUser: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { error: "expected a user name of letters, digits and _.-" }).default(WEB_DEFAULTS.mainTeamUser),
    keepDatabase: z.boolean().default(WEB_DEFAULTS.keepDatabase),
});

export const localDatabaseSchema = z.strictObject({ database: pgName.default("atc"), user: pgName.default("concourse") });

