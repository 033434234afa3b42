/** A dynamic provider's module text (lazyProvider), loaded the way the engine's Node.js dynamic provider loads it. */
import type * as pulumi from "@pulumi/pulumi";

export function loadedProvider(module: string): Required<pulumi.dynamic.ResourceProvider> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a dependency of Pulumi's with no types of its own; the provider process loads the module with it
    const requireFromString = require("require-from-string") as (code: string) => { handler(): Required<pulumi.dynamic.ResourceProvider> };
    return requireFromString(module).handler();
}
