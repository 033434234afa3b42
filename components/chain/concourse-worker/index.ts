import * as pulumi from "@pulumi/pulumi";
import { CONCOURSE_PATHS, ConcourseWorkerSettings, renderConcourseWorker } from "../../lib/render/concourse-worker";
import { WorkerRegistration } from "../../providers/checks/worker-registration";
import { GeneratedSecret, publicKeyOfPrivateKey } from "../../providers/keys";

/** Concourse reads a worker's key with jwt's ParseRSAPrivateKeyFromPEM: an RSA key in PEM, nothing else. */
function concourseKey(component: string): (key: string) => string {
    return (key) => {
        if (!/-----BEGIN (RSA )?PRIVATE KEY-----/.test(key) || !publicKeyOfPrivateKey(key).startsWith("ssh-rsa ")) {
            throw new Error(`${component}: the worker's key must be an RSA key in PEM (Concourse reads no other; make one with concourse generate-key -t ssh)`);
        }
        return key;
    };
}
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";

export interface ConcourseWorkerArgs extends HostAccessArgs, Omit<ConcourseWorkerSettings, "tsaPublicKey"> {
    /** The TSA's host public key ("ssh-rsa AAAA..."); an output such as ConcourseWeb's `tsaPublicKey` works too. */
    tsaPublicKey: pulumi.Input<string>;
    /** The worker's TSA private key: RSA in PEM, the only form Concourse reads (`concourse generate-key -t ssh`). Generated when absent. Pass a secret. */
    workerPrivateKey?: pulumi.Input<string>;
    /** The web user's password for the registration check (`registration`); pass a secret. */
    webPassword?: pulumi.Input<string>;
    /**
     * What the worker's files and steps wait for, typically the web: the worker starts after it,
     * and is deleted (retired) before it. Not the component's dependsOn: the web admits this
     * worker's key, which must not wait for the web in turn.
     */
    after?: pulumi.Resource[];
}

/**
 * The Concourse worker: the release, keys, its own containerd config, a systemd unit with the
 * tags, and (with `registration`) a check that the web lists it as planned. Deleting it
 * retires the worker and removes what it left on the host.
 */
export class ConcourseWorker extends HostStepsComponent {
    /** The public key the TSA must authorize ("ssh-ed25519 AAAA..."). */
    public readonly workerPublicKey: pulumi.Output<string>;
    public readonly tags: pulumi.Output<string[]>;

    constructor(name: string, args: ConcourseWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:concourse:ConcourseWorker", name, opts);
        const key = args.workerPrivateKey === undefined
            ? new GeneratedSecret(`${name}-key`, { kind: "rsa-private-key", comment: `concourse-worker-${name}` }, { parent: this })
            : undefined;
        const privateKey = key ? key.value : pulumi.secret(args.workerPrivateKey!).apply(concourseKey(name));
        // A key known now is written in the plan; an output (the web's generated key) comes during up.
        const tsaKeyNow = typeof args.tsaPublicKey === "string" ? args.tsaPublicKey : undefined;
        const values = {
            [CONCOURSE_PATHS.workerKey]: privateKey,
            ...(tsaKeyNow === undefined ? { [CONCOURSE_PATHS.tsaPublicKey]: pulumi.output(args.tsaPublicKey).apply((k) => k.trim() + "\n") } : {}),
        };
        this.placeOnHost(renderConcourseWorker({ ...args, tsaPublicKey: tsaKeyNow }), args, { values, after: args.after, checks: {
            "worker-registration": (checkName, check, after, checkOpts) => {
                if (args.webPassword === undefined) throw new Error(`${name}: the registration check needs webPassword`);
                return new WorkerRegistration(checkName, {
                    worker: check.worker, tags: check.tags, team: check.team, unit: check.unit, timeoutSeconds: check.timeoutSeconds,
                    api: pulumi.output(args.webPassword).apply((password) => ({ url: check.url, username: check.username, password })),
                    connection: args.connection,
                    converged: after.stdout,
                }, checkOpts);
            },
        } });
        this.workerPublicKey = key ? key.publicKeyOpenssh : pulumi.unsecret(privateKey.apply((k) => publicKeyOfPrivateKey(k)));
        this.tags = pulumi.output(args.tags);
        this.registerOutputs({ files: this.files, steps: this.steps, workerPublicKey: this.workerPublicKey, tags: this.tags });
    }
}
