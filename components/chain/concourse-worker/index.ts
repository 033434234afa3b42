import * as pulumi from "@pulumi/pulumi";
import { HostAccessArgs, HostStepsComponent } from "../host-steps-component";
import { SshKeyPair } from "../../providers/keys";
import { CONCOURSE_PATHS, ConcourseWorkerSettings, renderConcourseWorker } from "../../lib/render/concourse-worker";

export interface ConcourseWorkerArgs extends HostAccessArgs, ConcourseWorkerSettings {
    /** The worker's TSA private key (OpenSSH format). Generated (ED25519) when absent. */
    workerPrivateKey?: pulumi.Input<string>;
}

/** The Concourse worker: binaries, keys, its own containerd config, a systemd unit with the tags. */
export class ConcourseWorker extends HostStepsComponent {
    /** The public key to authorize on the TSA (team authorized keys). */
    public readonly workerPublicKey: pulumi.Output<string>;
    public readonly tags: pulumi.Output<string[]>;

    constructor(name: string, args: ConcourseWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:concourse:ConcourseWorker", name, opts);
        const key = args.workerPrivateKey === undefined
            ? new SshKeyPair(`${name}-key`, { comment: `concourse-worker-${name}` }, { parent: this })
            : undefined;
        const privateKey = key ? key.privateKeyOpenssh : pulumi.secret(args.workerPrivateKey!);
        this.placeOnHost(renderConcourseWorker(args), args, { [CONCOURSE_PATHS.workerKey]: privateKey });
        this.workerPublicKey = key ? key.publicKeyOpenssh : pulumi.output("(supplied by the stack)");
        this.tags = pulumi.output(args.tags);
        this.registerOutputs({ files: this.files, steps: this.steps, workerPublicKey: this.workerPublicKey, tags: this.tags });
    }
}
