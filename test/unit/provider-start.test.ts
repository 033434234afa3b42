/**
 * stacks/provider-start.ts: the invoke that makes the engine start the dynamic provider is on its
 * way by the time startDynamicProvider resolves (the program loads its modules right after, and a
 * synchronous require holds the event loop), and its "unknown function" answer is dropped.
 */
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { startDynamicProvider } from "../../stacks/provider-start";

describe("startDynamicProvider", () => {
    it("has asked for a function of the dynamic provider's package when it resolves, and drops its failure", async () => {
        const asked: string[] = [];
        await pulumi.runtime.setMocks(
            {
                newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }),
                call: (args) => {
                    asked.push(args.token);
                    // What the Node.js dynamic provider answers to every invoke.
                    throw new Error(`unknown function ${args.token}`);
                },
            },
            "gpu-workers",
            "test",
            false,
        );
        let unhandled: unknown;
        const onUnhandled = (reason: unknown) => (unhandled = reason);
        process.on("unhandledRejection", onUnhandled);
        try {
            await startDynamicProvider();
            assert.deepStrictEqual(asked, ["pulumi-nodejs:dynamic:startEarly"]);
            await new Promise((resolve) => setTimeout(resolve, 50));
            assert.strictEqual(unhandled, undefined);
        } finally {
            process.off("unhandledRejection", onUnhandled);
        }
    });
});
