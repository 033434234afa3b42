/**
 * A dynamic resource that waits, after the worker step, until the web lists the worker as
 * running with the tags and team of its plan, and fails the `up` with what it reports otherwise.
 */
import * as pulumi from "@pulumi/pulumi";
import { lazyProvider } from "../lazy-provider";
import { LazyProviderResource } from "../lazy-resource";
import type { WorkerRegistrationInputs } from "./worker-registration-ops";

// A dynamic provider: it asks the Concourse web (an HTTP API) whether the worker is running, and waits; a remote command cannot wait on the web.
const provider = lazyProvider("worker-registration", "worker registration");

export class WorkerRegistration extends LazyProviderResource {
    /** The worker's state as the web last reported it (running). */
    declare public readonly state: pulumi.Output<string>;

    constructor(name: string, args: { [K in keyof WorkerRegistrationInputs]: pulumi.Input<WorkerRegistrationInputs[K]> }, opts?: pulumi.CustomResourceOptions) {
        super(
            provider,
            name,
            { ...args, api: pulumi.secret(args.api), connection: pulumi.secret(args.connection), state: undefined },
            {
                ...opts,
                additionalSecretOutputs: ["api", "connection"],
            },
            "gpu-workers",
            "WorkerRegistration",
        );
    }
}
