import * as pulumi from "@pulumi/pulumi";
import { DEFAULT_HOST_STEPS } from "../../lib/host/step-transport";
import { hostScriptPath } from "../../lib/host/scripts";
import type { ConcourseRelease, PlannedRelease } from "../../lib/concourse/release";
import type { Artifact } from "../../lib/host/steps";
import { partOf } from "../../lib/links/link";
import { ConcourseWorkerTerms, planConcourseWorker } from "../../lib/links/concourse-worker/plan";
import { CONCOURSE_PATHS, ConcourseWorkerSettings, renderConcourseWorker, tsaPublicKeyFile } from "../../lib/links/concourse-worker/render";
import { LOCAL_ARTIFACTS } from "../artifacts";
import { admissionPrefix, renderAuthorizedWorkerKeys, renderWorkerAdmission, workerKeyPath } from "../../lib/render/concourse-web";
import { WorkerRegistration } from "../../providers/checks/worker-registration";
import { createHostResources, hostConnection } from "../../providers/host/resources";
import { GeneratedSecret, publicKeyOfPrivateKey } from "../../providers/keys";
import type { WebAdmission } from "../concourse-web";

/** Concourse reads a worker's key with jwt's ParseRSAPrivateKeyFromPEM: an RSA key in PEM, nothing else. */
function concourseKey(component: string): (key: string) => string {
    return (key) => {
        if (!/-----BEGIN (RSA )?PRIVATE KEY-----/.test(key) || !publicKeyOfPrivateKey(key).startsWith("ssh-rsa ")) {
            throw new Error(`${component}: the worker's key must be an RSA key in PEM (Concourse reads no other; make one with concourse generate-key -t ssh)`);
        }
        return key;
    };
}
import { HostStepsComponent, LeafArgs } from "../host-steps-component";

/** The worker in a user's terms, with its release and wrapper: ConcourseWorker plans the rest from them. */
export interface ConcourseWorkerGiven extends ConcourseWorkerTerms {
    /** The release: {url, sha256} the host downloads, or {path} of a tarball uploaded from here (hashed once per run). */
    binary: ConcourseRelease | PlannedRelease;
    /** The wrapper `wrapRunc` puts in place (a new one runs the swap again). Default: this package's build, as RuncWrapper installs it. */
    wrapperBinary?: Artifact;
}

/** What the worker takes besides its plan: the keys and password only `up` knows, and the web it waits for. */
export interface ConcourseWorkerExtras {
    /** The TSA's host public key line ("ssh-rsa AAAA... comment", as its .pub holds it); an output such as ConcourseWeb's `tsaPublicKey` works too. */
    tsaPublicKey: pulumi.Input<string>;
    /** The worker's TSA private key: RSA in PEM, the only form Concourse reads (`concourse generate-key -t ssh`). Generated when absent. Pass a secret. */
    workerPrivateKey?: pulumi.Input<string>;
    /** The web user's password for the registration check (`registration`); pass a secret. */
    webPassword?: pulumi.Input<string>;
    /** For an https web: the PEM certificate (or CA) the registration check trusts, and only that. Default: the system's CAs. */
    webCa?: pulumi.Input<string>;
    /**
     * What the worker's admission, files and steps wait for besides the component's dependsOn,
     * typically the web: the worker starts after it, and is deleted (retired) before it.
     */
    after?: pulumi.Resource[];
    /**
     * The web's host, where the worker places its public key to be admitted by the TSA
     * (ConcourseWeb's `forWorkers().admission`); the key goes away after the worker has retired.
     * Default: none (the web admits the key some other way).
     */
    admission?: WebAdmission;
}

/** The host, the extras, and the worker in a user's terms or GpuWorker's planned part. */
export type ConcourseWorkerArgs = LeafArgs<ConcourseWorkerGiven, ConcourseWorkerSettings> & ConcourseWorkerExtras;

/**
 * The Concourse worker: the release, keys, its own containerd config, a systemd unit with the
 * tags, and (with `registration`) a check that the web lists it as planned. Deleting it
 * retires the worker and removes what it left on the host.
 */
export class ConcourseWorker extends HostStepsComponent {
    /** The public key the TSA must authorize: the worker key's, RSA ("ssh-rsa AAAA..."). */
    public readonly workerPublicKey: pulumi.Output<string>;
    public readonly tags: pulumi.Output<string[]>;

    constructor(name: string, args: ConcourseWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:concourse:ConcourseWorker", name, opts);
        const key =
            args.workerPrivateKey === undefined
                ? new GeneratedSecret(`${name}-key`, { kind: "rsa-private-key", comment: `concourse-worker-${name}` }, { parent: this })
                : undefined;
        const privateKey = key ? key.value : pulumi.secret(args.workerPrivateKey!).apply(concourseKey(name));
        this.workerPublicKey = key ? key.publicKeyOpenssh : pulumi.unsecret(privateKey.apply((k) => publicKeyOfPrivateKey(k)));
        // A key known now is written in the plan; an output (the web's generated key) comes during up.
        const tsaKeyNow = typeof args.tsaPublicKey === "string" ? args.tsaPublicKey : undefined;
        const values = {
            [CONCOURSE_PATHS.workerKey]: privateKey,
            ...(tsaKeyNow === undefined ? { [CONCOURSE_PATHS.tsaPublicKey]: pulumi.output(args.tsaPublicKey).apply(tsaPublicKeyFile) } : {}),
        };
        const { settings, rendered } = partOf(
            args,
            (given: ConcourseWorkerGiven) =>
                planConcourseWorker({
                    ...given,
                    binary: LOCAL_ARTIFACTS.release(given.binary),
                    tsaPublicKey: tsaKeyNow,
                    wrapperBinary: given.wrapperBinary ?? LOCAL_ARTIFACTS.built().wrapper,
                }),
            renderConcourseWorker,
        );
        const admitted = args.admission ? [...this.admit(name, settings.name, args.admission, args.after ?? []).values()] : [];
        this.placeOnHost(rendered, args, {
            values,
            after: [...(args.after ?? []), ...admitted],
            checks: {
                "worker-registration": (checkName, check, after, checkOpts) => {
                    if (args.webPassword === undefined) throw new Error(`${name}: the registration check needs webPassword`);
                    return new WorkerRegistration(
                        checkName,
                        {
                            worker: check.worker,
                            tags: check.tags,
                            team: check.team,
                            unit: check.unit,
                            timeoutSeconds: check.timeoutSeconds,
                            task: check.task,
                            api: pulumi
                                .all([args.webPassword, args.webCa])
                                .apply(([password, ca]) => ({ url: check.url, username: check.username, password, ...(ca ? { ca } : {}) })),
                            connection: hostConnection(args.connection),
                            converged: after.stdout,
                        },
                        checkOpts,
                    );
                },
            },
        });
        this.tags = pulumi.output(settings.tags);
        this.registerOutputs({ files: this.files, steps: this.steps, workerPublicKey: this.workerPublicKey, tags: this.tags });
    }

    /**
     * The worker's key on the web's host, and the step that has the web read its keys again.
     * The worker's own files and steps wait for it, so on delete the worker retires (through the
     * TSA, with this key) before its key goes.
     */
    private admit(name: string, worker: string, admission: WebAdmission, after: pulumi.Resource[]) {
        return createHostResources(renderWorkerAdmission(worker, admission.web), {
            parent: this,
            prefix: admissionPrefix(name),
            connection: admission.connection,
            hostSteps: admission.hostSteps ?? DEFAULT_HOST_STEPS,
            user: admission.user,
            dependsOn: after,
            values: { [workerKeyPath(worker)]: this.workerPublicKey.apply((k) => renderAuthorizedWorkerKeys([k])) },
            // The web placed its script, which outlives every worker's admission.
            placedEarlier: [hostScriptPath("concourse-web.sh")],
        });
    }
}
