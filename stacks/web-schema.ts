/**
 * `gpu-workers:web`, the stack's Concourse web node: its host (SSH, or an LXD instance that
 * publishes the web and TSA ports on its server), the release (by default the one the
 * workers get), and its settings. Unknown keys are errors.
 */
import { z } from "zod";
import { hostAddress, localDatabaseSchema, pgName, port, settingsSchema as workerSettingsSchema, version, webSettingsSchema } from "../components";
import type { Transport } from "../components";
import { hostName, lxdTransportFields, renamedFrom, secretRef, SshTransport, sshTransportSchema } from "./schema";

export const lxdWebTransportSchema = lxdTransportFields.omit({ datasetSource: true, datasetFolders: true, gpuCdi: true, shiftWritable: true, network: true, address: true }).extend({
    // The web's keys go in before the first start, which a VM (no agent yet) cannot take.
    type: z.literal("container", { error: "expected container" }).default("container"),
    /** Ports on the LXD server's sshAddress that forward to the web and the TSA in the instance. */
    publish: z.strictObject({ web: port.optional(), tsa: port.optional() }).default({}),
});

const TRANSPORT_CHOICE = "expected exactly one of ssh: {...} or lxd: {...}";

export const webTransportSchema = z.strictObject({ ssh: sshTransportSchema.optional(), lxd: lxdWebTransportSchema.optional() }, { error: TRANSPORT_CHOICE })
    .refine((t) => (t.ssh === undefined) !== (t.lxd === undefined), { error: TRANSPORT_CHOICE })
    .transform((t): Transport<SshTransport, LxdWebTransport> => (t.ssh ? { ssh: t.ssh } : { lxd: t.lxd! }));

const PG_USER_ERROR = "expected a PostgreSQL user name: a letter or _, then letters, digits and _ . @ -";

export const externalDatabaseSchema = z.strictObject({
    host: hostAddress,
    port: port.default(5432),
    database: pgName.default("atc"),
    /** Some services name a user user@server. */
    user: z.string({ error: PG_USER_ERROR }).regex(/^[A-Za-z_][A-Za-z0-9_.@-]{0,127}$/, { error: PG_USER_ERROR }).default("concourse"),
    sslmode: z.enum(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"], { error: "expected a PostgreSQL sslmode such as require" }).default("require"),
    /** Config key whose secret value is the database user's password. */
    passwordSecret: secretRef,
});

export const webSchema = webSettingsSchema.extend({
    /** DNS label; names every resource of the web. */
    name: hostName,
    /** The web's name before a rename in the stack: its resources keep their state under the new name. */
    renamedFrom,
    transport: webTransportSchema,
    /** Default: defaults.concourse.version. */
    version: version.optional(),
    /** The release tarball. Default: defaults.concourse.binary (the workers' release). */
    binary: workerSettingsSchema.shape.concourse.shape.binary,
    /**
     * HTTPS for the web: the config keys whose secret values are its certificate (PEM, with its
     * chain) and key, and optionally the CA the checks trust instead of the certificate itself.
     */
    tls: z.strictObject({ certificateSecret: secretRef, keySecret: secretRef, caSecret: secretRef.optional() }).optional(),
    postgres: z.union([z.strictObject({ local: localDatabaseSchema }), z.strictObject({ external: externalDatabaseSchema })], { error: "expected {local: {...}} or {external: {...}}" })
        .default({ local: { database: "atc", user: "concourse" } }),
});

export type LxdWebTransport = z.infer<typeof lxdWebTransportSchema>;
export type WebConfig = z.infer<typeof webSchema>;
