/**
 * Starts the engine's Node.js dynamic provider while the program is still loading.
 *
 * The engine starts a provider's process when the first resource that needs it registers, and
 * registers nothing else until the process answers: for the Node.js dynamic provider that is a
 * new `node` loading the Pulumi SDK, 0.6 to 0.8 s here. Our first dynamic resource (a host's
 * drift guard or inventory check) comes only after the program's modules have loaded, so that
 * wait came on top of the load. An invoke addressed to the provider makes the engine start the
 * same process at once (the default provider, which the resources use after it), and both then
 * run side by side.
 *
 * The provider implements no function, so the invoke ends in "unknown function" (in the engine's
 * debug log only); that answer is expected and dropped. Nothing is added to the state but the
 * default provider, which the first dynamic resource would add anyway.
 *
 * Only the SDK's invoke module is loaded here, which the language host has loaded already: the
 * package's index (through its automation API, about 0.4 s) is the slowest module the program
 * loads, and `@pulumi/pulumi/runtime` loads it too (through its closure serializer).
 */
import { invoke } from "@pulumi/pulumi/runtime/invoke";

/** The token asked for: any function of the provider's package does; this one says why in the debug log. */
const START_TOKEN = "pulumi-nodejs:dynamic:startEarly";

/**
 * Asks the engine for the dynamic provider, and resolves once the request is on its way: the SDK
 * sends it from the event loop, so the caller must let that turn before loading its modules
 * synchronously (a `require` holds the loop until it returns).
 */
export async function startDynamicProvider(): Promise<void> {
    invoke(START_TOKEN, {}).then(
        () => undefined,
        () => undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 0));
}
