/**
 * `gpu-workers:web`, the stack's Concourse web node: its host (SSH, or an LXD instance that
 * publishes the web and TSA ports on its server), the release (by default the one the
 * workers get), and its settings. Unknown keys are errors.
 */
import { z } from "zod";
import {
    externalDatabaseFields,
    localDatabaseSchema,
    lxdWebTransportSchema as lxdWebInstanceSchema,
    settingsSchema as workerSettingsSchema,
    version,
    webSettingsSchema,
} from "../../components/program";
import type { Transport } from "../../components/program";
import { hostName, renamedFrom, secretRef, SshTransport, sshTransportSchema, stackLxdFields } from "./schema";

/** The components' LXD transport of the web in the stack's forms, its server with the secrets named: a container, as the web's keys go in before its first start (which a VM, its agent not yet running, cannot take). */
export const lxdWebTransportSchema = lxdWebInstanceSchema.omit({ network: true, address: true }).extend({
    ...stackLxdFields,
    type: z
        .literal("container", { error: "expected container" })
        .default("container")
        .meta({ description: "container (the web's keys go in before its first start)" }),
});

const TRANSPORT_CHOICE = "expected exactly one of ssh: {...} or lxd: {...}";

export const webTransportSchema = z
    .strictObject({ ssh: sshTransportSchema.optional(), lxd: lxdWebTransportSchema.optional() }, { error: TRANSPORT_CHOICE })
    .refine((t) => (t.ssh === undefined) !== (t.lxd === undefined), { error: TRANSPORT_CHOICE })
    .transform((t): Transport<SshTransport, z.output<typeof lxdWebTransportSchema>> => (t.ssh ? { ssh: t.ssh } : { lxd: t.lxd! }));

/** The component's external database, its password named by a secret config key. */
export const externalDatabaseSchema = externalDatabaseFields.extend({
    /** Config key whose secret value is the database user's password. */
    passwordSecret: secretRef,
});

/** The stack's web: where it runs and its release, then the component's own settings, then HTTPS and the database by secret name. */
export const webSchema = z.strictObject({
    name: hostName.meta({ description: "DNS label; names every resource of the web" }),
    renamedFrom: renamedFrom.meta({ description: "the web's name before a rename (as for a host)" }),
    transport: webTransportSchema.meta({
        description:
            "`ssh` or `lxd` as for a host; an LXD instance also takes `publish: {web, tsa}`, ports on its LXD server's `sshAddress` that forward to the web and the TSA",
    }),
    version: version.optional().meta({ defaultText: "`defaults.concourse.version`", description: "the Concourse release (the workers' by default)" }),
    binary: workerSettingsSchema.shape.concourse.shape.binary.meta({
        defaultText: "`defaults.concourse.binary`",
        description: "the release tarball, `{url, sha256}` or `{path}` (the workers' by default)",
    }),
    ...webSettingsSchema.shape,
    tls: z.strictObject({ certificateSecret: secretRef, keySecret: secretRef, caSecret: secretRef.optional() }).optional().meta({
        description:
            "HTTPS: `{certificateSecret, keySecret, caSecret}`, the secret config keys of the web's certificate (PEM, with its chain), its key and, optionally, the CA that signed it. The web serves HTTPS on `tlsPort`, the external URL is `https://`, and the registration and task checks trust exactly that certificate (or the CA, when given) and nothing else ([docs/concourse.md](docs/concourse.md#https))",
    }),
    postgres: z
        .union([z.strictObject({ local: localDatabaseSchema }), z.strictObject({ external: externalDatabaseSchema })], {
            error: "expected {local: {...}} or {external: {...}}",
        })
        .default({ local: localDatabaseSchema.parse({}) })
        .meta({
            description:
                "PostgreSQL on the web host (installed from the distribution where missing), or `{external: {host, port, database, user, sslmode, passwordSecret}}`; names are PostgreSQL names of letters, digits, `_` and `-` (an external user may also hold `.` and `@`), the host a DNS name or an IP address; the password goes into an env file, so it may not hold a quote, a backslash, `$`, a line break or a space at either end",
        }),
});

export type WebConfig = z.infer<typeof webSchema>;
