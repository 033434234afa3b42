/**
 * Dynamic providers whose code lives in a module loaded at call time.
 *
 * Pulumi serializes the provider object into the stack state and later runs it in a separate
 * process (cwd = the Pulumi program folder). Whatever its methods capture is serialized by
 * value, so they capture nothing but strings: the provider's id and where the registry is,
 * as an absolute path and relative to the program folder. Each method `require()`s the
 * registry at call time (relative path first, so a moved checkout still works; then the
 * absolute one) and loads the operations by id, so the operations can move between releases.
 * When the program runs from TypeScript sources (ts-node), the provider process has no TS
 * loader, so one is installed from the project's own `typescript` package.
 *
 * The operations module exports any of check, diff, create, read, update and remove (for delete).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- the provider's closures require() at call time; an import would be captured.
   (A directive here rather than on each line: comments inside the closures are serialized with them.) */
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";
import type { ProviderId } from "./registry";

/** What an operations module exports: the provider's operations, with `remove` for delete. */
type ProviderOps = Omit<pulumi.dynamic.ResourceProvider, "delete"> & { remove?: pulumi.dynamic.ResourceProvider["delete"] };

/** Builds a provider whose methods load provider `id` through the registry at `registryPath` (no extension). */
export function makeLazyProvider(id: string, registryPath: string, registryFromProgram: string, label: string): pulumi.dynamic.ResourceProvider {
    // Everything below runs in the provider process: plain strings are its only captures, so
    // modules are require()d inside (an import would be captured); the types are erased.
    // Comments inside the closures are serialized with them into every resource's state: keep them out.
    const load = (): ProviderOps => {
        const nodePath = require("path") as typeof import("path");
        const fs = require("fs") as typeof import("fs");
        const candidates = [nodePath.resolve(process.cwd(), registryFromProgram), registryPath];
        const found = candidates.find((c: string) => fs.existsSync(`${c}.js`) || fs.existsSync(`${c}.ts`));
        if (!found)
            throw new Error(
                `${label} provider: cannot find its implementation at ${candidates.join(" or ")}; run pulumi from the project that defined the resource`,
            );
        if (!fs.existsSync(`${found}.js`) && !require.extensions[".ts"]) {
            // TypeScript sources without a loader: transpile on require with the project's compiler.
            const ts = require(require.resolve("typescript", { paths: [process.cwd(), nodePath.dirname(found)] })) as typeof import("typescript");
            require.extensions[".ts"] = (m, filename) => {
                const source = fs.readFileSync(filename, "utf8");
                const out = ts.transpileModule(source, {
                    fileName: filename,
                    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
                });
                (m as NodeJS.Module & { _compile(code: string, filename: string): void })._compile(out.outputText, filename);
            };
        }
        return (require(found) as typeof import("./registry")).loadProviderModule(id) as ProviderOps;
    };
    return {
        // Inputs and outputs are typed by Pulumi's ResourceProvider (untyped values from state).
        async check(olds, news) {
            const m = load();
            // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- Pulumi's untyped inputs, passed through unread
            return m.check ? m.check(olds, news) : { inputs: news };
        },
        async diff(id, olds, news) {
            const m = load();
            return m.diff ? m.diff(id, olds, news) : {};
        },
        async create(inputs) {
            return load().create(inputs);
        },
        async read(id, props) {
            const m = load();
            // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- Pulumi's untyped state, passed through unread
            return m.read ? m.read(id, props) : { id, props };
        },
        async update(id, olds, news) {
            const m = load();
            if (!m.update) throw new Error(`${label} provider: ${id} cannot be updated in place`);
            return m.update(id, olds, news);
        },
        async delete(id, props) {
            const m = load();
            if (m.remove) await m.remove(id, props);
        },
    };
}

const REGISTRY = path.join(__dirname, "registry");

/** The provider of `id`, found through this package's registry. */
export function lazyProvider(id: ProviderId, label: string): pulumi.dynamic.ResourceProvider {
    return makeLazyProvider(id, REGISTRY, path.relative(process.cwd(), REGISTRY), label);
}
