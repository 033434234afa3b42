/**
 * A Concourse web node's settings besides its host and release: their zod schema (the
 * component's own contract, which the stack config reuses) and defaults. Pure.
 */
import { z } from "zod";
import { port } from "./settings";
import { hostAddress, httpUrl } from "./value-patterns";

/** A database or role name: it reaches the env file and psql's arguments, so no `$` (which PostgreSQL itself allows). */
export const pgName = z
    .string({ error: "expected a PostgreSQL name" })
    .regex(/^[A-Za-z_][A-Za-z0-9_-]{0,62}$/, { error: "expected a PostgreSQL name: a letter or _, then letters, digits, _ and - (up to 63)" });

/**
 * The web's settings besides transport and release, as a stack or ConcourseWeb's arguments give
 * them. Each field's doc (`.meta({ description })`, the README's "meaning") and default are
 * written here only: ConcourseWebArgs and the README's web table are derived from it.
 */
export const webSettingsSchema = z.strictObject({
    port: port.default(8080).meta({ description: "the web's port on the web host (plain HTTP; with `tls`, kept for the API on the host)" }),
    tsaPort: port.default(2222).meta({ description: "the TSA's port on the web host (workers register there)" }),
    tlsPort: port.default(443).meta({ description: "the web's HTTPS port (with `tls`; an LXD instance's `publish.web` then forwards to it)" }),
    bindIp: z.union([z.ipv4(), z.ipv6()], { error: "expected an IP address" }).optional().meta({
        defaultText: "`0.0.0.0`; `127.0.0.1` in LXD",
        description:
            "where both listen (Concourse binds its plain port and its HTTPS port to the same address). A web that the network reaches over plain HTTP (this address, or an LXD instance's `publish.web` on an `sshAddress` that is not loopback) gets a warning at preview, at up and in the offline render: its password crosses the network in clear",
    }),
    externalUrl: httpUrl.optional().meta({
        defaultText: "`http://<ssh host>:<port>` (`https://<ssh host>:<tlsPort>` with `tls`), or `<sshAddress>:<publish.web>`",
        description: "the URL users and fly reach the web on (`http://` or `https://`, plain characters)",
    }),
    mainTeamUser: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { error: "expected a user name of letters, digits and _.-" })
        .default("admin")
        .meta({
            description:
                "the main team's local user (letters, digits and `_ . -`); its password is generated (32 letters and digits), a secret output (`pulumi stack output web --show-secrets`)",
        }),
    keepDatabase: z.boolean().default(false).meta({ description: "keep the local database when the web is destroyed" }),
});

export const localDatabaseSchema = z.strictObject({ database: pgName.default("atc"), user: pgName.default("concourse") });

const PG_USER_ERROR = "expected a PostgreSQL user name: a letter or _, then letters, digits and _ . @ -";

/** A PostgreSQL server the web uses instead of its own, less its password (which comes as a secret). */
export const externalDatabaseFields = z.strictObject({
    host: hostAddress,
    port: port.default(5432),
    database: pgName.default("atc"),
    /** Some services name a user user@server. */
    user: z
        .string({ error: PG_USER_ERROR })
        .regex(/^[A-Za-z_][A-Za-z0-9_.@-]{0,127}$/, { error: PG_USER_ERROR })
        .default("concourse"),
    sslmode: z
        .enum(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"], { error: "expected a PostgreSQL sslmode such as require" })
        .default("require"),
});
