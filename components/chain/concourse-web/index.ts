import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { onTransport, Transport } from "../../lib/host/transport";
import { ConcourseRelease } from "../../lib/concourse/release";
import {
    CONCOURSE_WEB_PATHS,
    renderAuthorizedWorkerKeys,
    renderConcourseWeb,
    renderWebSecretEnv,
    WebDatabase,
    WebKeysTarget,
    webKeysTarget,
} from "../../lib/render/concourse-web";
import type { HostStepTransport } from "../../lib/host/step-transport";
import { lxdWebTransportSchema, planTransport, sshPlanSchema } from "../../lib/settings/transport-schema";
import { planWebHost, WebPlan, WebSpec } from "../../lib/plan/web-plan";
import type { SshHostShape } from "../../lib/settings/worker-spec";
import { externalDatabaseFields, localDatabaseSchema, webSettingsSchema } from "../../lib/settings/web-settings";
import type { WebSettingsInput } from "../../lib/settings/web-settings.generated";
import type { HostConnection } from "../../providers/host/resources";
import { GeneratedSecret } from "../../providers/keys";
import { LxdServerArg, reachHost, SshHostTransport } from "../host-access";
import { HostStepsComponent } from "../host-steps-component";
import { ArtifactSource, LOCAL_ARTIFACTS } from "../artifacts";

/** An LXD instance for the web (lxdWebTransportSchema: each field's doc and default are written there), and how to reach its server. */
export type LxdWebTransport = z.input<typeof lxdWebTransportSchema> & LxdServerArg;

/** The web's PostgreSQL: its own on the web host (the default), or one you run. */
export type ConcourseWebDatabase =
    | {
          /** PostgreSQL on the web host, installed from the distribution where missing. */
          local: {
              /** The database's name. Default: "atc". */
              database?: string;
              /** The user the web connects as (its password is generated). Default: "concourse". */
              user?: string;
          };
      }
    | {
          /** A PostgreSQL server you run. */
          external: {
              /** Its host name or address. */
              host: string;
              /** Its port. Default: 5432. */
              port?: number;
              /** The database's name. Default: "atc". */
              database?: string;
              /** The user the web connects as. Default: "concourse". */
              user?: string;
              /** libpq's sslmode. Default: "require". */
              sslmode?: string;
              /** The user's password. Pass a secret. */
              password: pulumi.Input<string>;
          };
      };

/**
 * ConcourseWeb's arguments: the host, the release, and the web's settings, which are
 * webSettingsSchema's (components/lib/settings/web-settings.ts: each field's doc and default are
 * written there, once, and reach each field here as its JSDoc through WebSettingsInput, which the
 * build writes from the schema), plus HTTPS and the database with their secrets.
 */
export interface ConcourseWebArgs extends WebSettingsInput {
    /** Exactly one of ssh (a machine) or lxd (an instance this component creates). */
    transport: Transport<SshHostTransport, LxdWebTransport>;
    /** What runs the web's host steps, and the admission steps of its workers: "command" or "builtin" (HostAccessArgs.hostSteps). Default: DEFAULT_HOST_STEPS. */
    hostSteps?: HostStepTransport;
    /** Concourse release version. Example: "8.2.5". */
    version: string;
    /** The release tarball: {url, sha256} the host downloads, or {path} uploaded from here. */
    binary: ConcourseRelease;
    /**
     * Serve HTTPS with this certificate (PEM, with its chain) and key (PEM); the external URL is then
     * https://. The registration and task checks trust exactly this certificate, or `ca` when given
     * (the CA that signed it). Pass secrets. Default: none (plain HTTP, which the preview warns about
     * when the web is reachable beyond loopback).
     */
    tls?: {
        /** The web's certificate (PEM, with its chain). */
        certificate: pulumi.Input<string>;
        /** Its private key (PEM). Pass a secret. */
        key: pulumi.Input<string>;
        /** The CA that signed it (PEM), trusted instead of the certificate itself. */
        ca?: pulumi.Input<string>;
    };
    /** The database. Default: { local: {} }: PostgreSQL on the web host, database "atc", user "concourse". */
    postgres?: ConcourseWebDatabase;
    /**
     * Public keys ("ssh-rsa AAAA...") of workers the TSA admits besides the ones given this web
     * (`forWorkers()`): a worker given it places its own key on the web's host, and removes it
     * once retired. Default: none.
     */
    authorizedWorkerKeys?: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * The web's plan, made from these same arguments (`planWebHost(webSpec(name, args))`): a program
     * that planned its whole stack first (its workers plan with the web's TSA and URL) hands it over,
     * and the web builds from it, planning nothing again. Default: planned here from the arguments.
     */
    planned?: WebPlan;
}

/** Where a worker places its key to be admitted: the web's host, and how to tell the web. */
export interface WebAdmission {
    connection: pulumi.Input<HostConnection>;
    user: string;
    /** The web's own transport for host steps. */
    hostSteps?: HostStepTransport;
    web: WebKeysTarget;
}

/** What a worker needs of a web to register with it and have its registration checked. */
export interface WebForWorkers {
    /** The TSA as workers reach it, where the web's address is known as text. */
    tsaHost?: string;
    tsaPort?: number;
    tsaPublicKey: pulumi.Input<string>;
    url: string;
    username: string;
    password: pulumi.Input<string>;
    /** For an https web: the certificate (or its CA) the registration check trusts. */
    ca?: pulumi.Input<string>;
    /** The web itself: a worker converges after it and is deleted (retired) before it. forWorkers() sets it. */
    resource?: pulumi.Resource;
    /** The worker admits itself there (forWorkers() sets it); without it, the web must admit the worker's key some other way. */
    admission?: WebAdmission;
}

export class ConcourseWebArgsError extends Error {}

/** The web's host and settings as planning sees them, defaults applied and checked. */
export function webSpec(name: string, args: ConcourseWebArgs, artifacts: ArtifactSource = LOCAL_ARTIFACTS): WebSpec {
    const { transport, hostSteps: _steps, planned: _planned, version, binary, postgres, authorizedWorkerKeys: _keys, tls, ...rest } = args;
    const settings = webSettingsSchema.safeParse(rest);
    const problems = settings.success ? [] : settings.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    let database: WebDatabase | undefined;
    if (postgres !== undefined && "external" in postgres) {
        const { password: _password, ...given } = postgres.external;
        const external = externalDatabaseFields.safeParse(given);
        if (external.success) database = { external: external.data };
        else problems.push(...external.error.issues.map((i) => `postgres.external.${i.path.join(".")}: ${i.message}`));
    } else {
        const local = localDatabaseSchema.safeParse(postgres?.local ?? {});
        if (local.success) database = { local: local.data };
        else problems.push(...local.error.issues.map((i) => `postgres.local.${i.path.join(".")}: ${i.message}`));
    }
    const host: { data: Transport<SshHostShape, z.output<typeof lxdWebTransportSchema>> } | { problems: string[] } = planTransport(transport, {
        ssh: sshPlanSchema,
        lxd: lxdWebTransportSchema,
    });
    if ("problems" in host) problems.push(...host.problems);
    if (!settings.success || database === undefined || !("data" in host) || problems.length > 0)
        throw new ConcourseWebArgsError(`ConcourseWeb ${name}: ${problems.join("; ")}`);
    return {
        name,
        version,
        binary: artifacts.release(binary),
        settings: settings.data,
        postgres: database,
        tls: tls !== undefined,
        // An SSH web's address, where it is known as text, gives the default external URL and TSA.
        transport: onTransport<SshHostShape, z.output<typeof lxdWebTransportSchema>, WebSpec["transport"]>(host.data, {
            ssh: (ssh) => ({ ssh: { ...ssh, host: typeof transport.ssh!.host === "string" ? transport.ssh!.host : undefined } }),
            lxd: (lxd) => ({ lxd }),
        }),
    };
}

/**
 * A Concourse web node on one host (reached over SSH, or an LXD instance it creates): the
 * release, PostgreSQL (its own, or an external one), the session signing key and the TSA host
 * key (generated, secret), a main-team local user with a generated password, and the unit.
 * The TSA admits the workers given `forWorkers()` (each places its key on the web's host) and
 * `authorizedWorkerKeys`; a change of them is a reload, not a restart. Deleting it drops its
 * local database unless `keepDatabase`.
 */
export class ConcourseWeb extends HostStepsComponent {
    public readonly plan: WebPlan;
    public readonly connection: pulumi.Output<HostConnection>;
    public readonly externalUrl: string;
    public readonly username: string;
    /** The main team user's password (secret). */
    public readonly password: pulumi.Output<string>;
    /** The TSA's host public key, as workers pin it: a generated RSA key ("ssh-rsa AAAA..."). */
    public readonly tsaPublicKey: pulumi.Output<string>;
    /** With `tls`: what clients of the web trust, the CA given or else the certificate itself. */
    public readonly ca?: pulumi.Output<string>;
    private readonly hostSteps?: HostStepTransport;

    constructor(name: string, args: ConcourseWebArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:concourse:ConcourseWeb", name, opts);
        this.plan = args.planned ?? planWebHost(webSpec(name, args));
        this.hostSteps = args.hostSteps;
        const { connection, reachable } = reachHost(this, name, args.transport, this.plan.access);
        const password = new GeneratedSecret(`${name}-password`, { kind: "password" }, { parent: this });
        const signingKey = new GeneratedSecret(`${name}-session-signing-key`, { kind: "rsa-private-key" }, { parent: this });
        // Concourse reads only RSA keys in PEM for the TSA (and the workers').
        const tsaKey = new GeneratedSecret(`${name}-tsa-host-key`, { kind: "rsa-private-key", comment: `${name}-tsa` }, { parent: this });
        const database =
            args.postgres && "external" in args.postgres
                ? pulumi.secret(args.postgres.external.password)
                : new GeneratedSecret(`${name}-database-password`, { kind: "password" }, { parent: this }).value;
        const s = this.plan.settings;
        this.placeOnHost(
            renderConcourseWeb(s),
            { connection, user: this.plan.access.user, hostSteps: args.hostSteps },
            {
                after: reachable,
                values: {
                    [CONCOURSE_WEB_PATHS.secretEnv]: pulumi.all([password.value, database]).apply(([p, d]) => renderWebSecretEnv(s.mainTeamUser, p, d)),
                    [CONCOURSE_WEB_PATHS.sessionSigningKey]: signingKey.value,
                    [CONCOURSE_WEB_PATHS.tsaHostKey]: tsaKey.value,
                    [CONCOURSE_WEB_PATHS.givenWorkerKeys]: pulumi.output(args.authorizedWorkerKeys ?? []).apply(renderAuthorizedWorkerKeys),
                    ...(args.tls ? { [CONCOURSE_WEB_PATHS.tlsCert]: args.tls.certificate, [CONCOURSE_WEB_PATHS.tlsKey]: args.tls.key } : {}),
                },
            },
        );
        for (const warning of this.plan.warnings) void pulumi.log.warn(warning, this);
        this.connection = connection;
        this.externalUrl = s.externalUrl;
        this.username = s.mainTeamUser;
        this.password = password.value;
        this.tsaPublicKey = tsaKey.publicKeyOpenssh.apply((k) => k.split(" ").slice(0, 2).join(" "));
        this.ca = args.tls ? pulumi.output(args.tls.ca ?? args.tls.certificate) : undefined;
        this.registerOutputs({
            files: this.files,
            steps: this.steps,
            externalUrl: this.externalUrl,
            username: this.username,
            password: this.password,
            tsaPublicKey: this.tsaPublicKey,
        });
    }

    /** What GpuWorker takes from this web (`concourse.web`). */
    forWorkers(): WebForWorkers {
        return webForWorkers(this.plan, {
            tsaPublicKey: this.tsaPublicKey,
            password: this.password,
            ...(this.ca ? { ca: this.ca } : {}),
            connection: this.connection,
            hostSteps: this.hostSteps,
            resource: this,
        });
    }
}

/** What only a converged web knows: its generated keys and password, and how its host is reached. */
export interface WebOutputsForWorkers {
    tsaPublicKey: pulumi.Input<string>;
    password: pulumi.Input<string>;
    ca?: pulumi.Input<string>;
    connection: pulumi.Input<HostConnection>;
    hostSteps?: HostStepTransport;
    resource?: pulumi.Resource;
}

/**
 * What GpuWorker takes from a web: its plan (TSA, URL, user, where worker keys go) and what it
 * made. A web of another stack (a fleet's, docs/fleet.md) is given by its outputs, with no resource.
 */
export function webForWorkers(plan: WebPlan, made: WebOutputsForWorkers): WebForWorkers {
    return {
        tsaHost: plan.tsaForWorkers?.host,
        tsaPort: plan.tsaForWorkers?.port,
        tsaPublicKey: made.tsaPublicKey,
        url: plan.settings.externalUrl,
        username: plan.settings.mainTeamUser,
        password: made.password,
        ...(made.ca ? { ca: made.ca } : {}),
        ...(made.resource ? { resource: made.resource } : {}),
        admission: { connection: made.connection, user: plan.access.user, hostSteps: made.hostSteps, web: webKeysTarget(plan.settings) },
    };
}
