/**
 * Dynamic providers whose code lives in a module loaded at call time.
 *
 * The engine's Node.js dynamic provider runs a resource's provider from the text that resource
 * holds in its state (`__provider`: a module whose `handler()` returns the provider), in a
 * separate process (cwd = the Pulumi program folder). That text is rendered here
 * (providerModule): the code of makeLazyProvider, called with strings only, the provider's id and
 * where the registry is, as an absolute path and relative to the program folder. Each method
 * `require()`s the registry at call time (relative path first, so a moved checkout still works;
 * then the absolute one) and loads the operations by id, so the operations can move between
 * releases. When the program runs from TypeScript sources (ts-node), the provider process has no
 * TS loader, so one is installed from the project's own `typescript` package.
 *
 * The text is rendered rather than left to Pulumi's closure serializer, which loads the
 * TypeScript compiler into the program to read a function (0.35 s of CPU, on the way to a host's
 * first step) and writes a larger module of the same code.
 *
 * The operations module exports any of check, diff, create, read, update and remove (for delete).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- makeLazyProvider's code runs in the provider process, so it require()s at call
   time. (A directive here rather than on each line: the comments inside its body are rendered with it into every resource's state.) */
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";
import type { ProviderId, ProviderOperations } from "./registry";

/**
 * Builds a provider whose methods load provider `id` through the registry at `registryPath` (no
 * extension) and call its operation (registry.ts's providerOf fills in the ones it leaves out).
 * Its code runs in the provider process, rendered by providerModule with plain strings for its
 * arguments, so it refers to nothing outside itself: modules are require()d inside, and the types
 * are erased. Where the registry is TypeScript sources and no loader is installed, it transpiles
 * on require with the project's compiler. Its text goes into every dynamic resource's state
 * twice (inputs and outputs), and the engine writes the whole state after every step: keep it
 * short, and comments out of its body.
 */
export function makeLazyProvider(id: string, registryPath: string, registryFromProgram: string, label: string): pulumi.dynamic.ResourceProvider {
    const load = (): ProviderOperations => {
        const nodePath = require("path") as typeof import("path");
        const fs = require("fs") as typeof import("fs");
        const places = [nodePath.resolve(process.cwd(), registryFromProgram), registryPath];
        const found = places.find((c) => fs.existsSync(`${c}.js`) || fs.existsSync(`${c}.ts`));
        if (!found)
            throw new Error(
                `${label} provider: cannot find its implementation at ${places.join(" or ")}; run pulumi from the project that defined the resource`,
            );
        if (!fs.existsSync(`${found}.js`) && !require.extensions[".ts"]) {
            const ts = require(require.resolve("typescript", { paths: [process.cwd(), nodePath.dirname(found)] })) as typeof import("typescript");
            require.extensions[".ts"] = (m, file) => {
                const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
                (m as NodeJS.Module & { _compile(code: string, file: string): void })._compile(
                    ts.transpileModule(fs.readFileSync(file, "utf8"), { fileName: file, compilerOptions: options }).outputText,
                    file,
                );
            };
        }
        return (require(found) as typeof import("./registry")).providerOf(id, label);
    };
    const ops: Record<string, unknown> = {};
    for (const op of ["check", "diff", "create", "read", "update", "delete"] as const)
        ops[op] = async (...args: unknown[]) => (load()[op] as (...a: unknown[]) => unknown)(...args);
    return ops as unknown as pulumi.dynamic.ResourceProvider;
}

/**
 * The text of the module the dynamic provider process loads for a resource: makeLazyProvider's
 * own code, called with the provider's id, where the registry is, and its label.
 */
export function providerModule(id: string, registryPath: string, registryFromProgram: string, label: string): string {
    const args = [id, registryPath, registryFromProgram, label].map((arg) => JSON.stringify(arg)).join(", ");
    // Without its indentation: the code holds no text that spans lines.
    return `exports.handler = () => (${makeLazyProvider.toString().replace(/\n\s+/g, "\n")})(${args});\n`;
}

const REGISTRY = path.join(__dirname, "registry");

/** The provider module of `id` (providerModule), found through this package's registry. */
export function lazyProvider(id: ProviderId, label: string): string {
    return providerModule(id, REGISTRY, path.relative(process.cwd(), REGISTRY), label);
}
