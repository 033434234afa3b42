/**
 * A dynamic resource whose provider is a rendered module (lazy-provider.ts) rather than an object
 * for Pulumi's closure serializer: the same type token and the same `__provider` input as
 * `pulumi.dynamic.Resource` gives, which is what the engine's Node.js dynamic provider reads.
 */
import * as pulumi from "@pulumi/pulumi";

/** The input the Node.js dynamic provider loads the provider from. */
const PROVIDER_KEY = "__provider";

export abstract class LazyProviderResource extends pulumi.CustomResource {
    /** `provider` is lazyProvider(...)'s text; the resource's type is `pulumi-nodejs:dynamic/<module>:<type>`. */
    constructor(provider: string, name: string, props: pulumi.Inputs, opts: pulumi.CustomResourceOptions | undefined, module: string, type: string) {
        if (PROVIDER_KEY in props) throw new Error(`a dynamic resource must not define ${PROVIDER_KEY}`);
        super(`pulumi-nodejs:dynamic/${module}:${type}`, name, { ...props, [PROVIDER_KEY]: provider }, opts);
    }
}
