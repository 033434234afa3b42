/**
 * Where each dynamic provider's operations live. A provider serialized into a stack's state
 * names its operations by id and finds them through this file, so the modules can move
 * between releases without breaking stacks made before. This file itself never moves.
 *
 * Stacks made before providers were named this way hold the module paths of that layout
 * (EARLIER_PATHS); the build writes a stub at each of those paths that loads by id.
 */
import * as fs from "fs";
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";

export const PROVIDER_MODULES = {
    "host-command": "./host/legacy-host-command-ops",
    "ssh-command": "./host/ssh-command-ops",
    "ssh-upload": "./host/ssh-upload-ops",
    "ssh-key": "./keys/ssh-key-ops",
    "generated-secret": "./keys/generated-secret-ops",
    "worker-registration": "./checks/worker-registration-ops",
    "host-drift-guard": "./drift/host-drift-ops",
    "lxd-instance": "./lxd/instance-ops",
    "inventory-check": "./checks/inventory-check-ops",
    "cdi-spec-check": "./checks/cdi-spec-check-ops",
} as const;

export type ProviderId = keyof typeof PROVIDER_MODULES;

/** Module paths (under the compiled package, no extension) that providers in older state still require. */
export const EARLIER_PATHS: Record<string, ProviderId> = {
    "components/remote/host-command-ops": "host-command",
    "components/keys/ssh-key-ops": "ssh-key",
    "components/drift/host-drift-ops": "host-drift-guard",
    "components/lxd/instance-ops": "lxd-instance",
    "components/gpu-host/inventory-check-ops": "inventory-check",
    "components/container-toolkit/cdi-spec-check-ops": "cdi-spec-check",
};

/** The operations module of a provider. */
export function loadProviderModule(id: string): unknown {
    const relative = (PROVIDER_MODULES as Record<string, string>)[id];
    if (!relative) throw new Error(`no dynamic provider named ${id} (known: ${Object.keys(PROVIDER_MODULES).join(", ")})`);
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module is chosen by id at call time, so it cannot be a static import
    return require(path.join(__dirname, relative));
}

/** What an operations module exports: the provider's operations, with `remove` for delete. */
type ProviderOps = Omit<pulumi.dynamic.ResourceProvider, "delete"> & { remove?: pulumi.dynamic.ResourceProvider["delete"] };

/** Every operation of a dynamic provider but configure, which these providers never need. */
export type ProviderOperations = Required<Omit<pulumi.dynamic.ResourceProvider, "configure">>;

/**
 * Provider `id` with every operation the engine may call: those its module leaves out do what the
 * engine does without them (check and read keep what they are given, diff leaves the decision to
 * the engine, delete does nothing), and update, left out, refuses.
 */
export function providerOf(id: string, label: string): ProviderOperations {
    const m = loadProviderModule(id) as ProviderOps;
    return {
        check: async (olds, news: unknown) => (m.check ? m.check(olds, news) : { inputs: news }),
        diff: async (resourceId, olds, news) => (m.diff ? m.diff(resourceId, olds, news) : {}),
        create: async (inputs) => m.create(inputs),
        read: async (resourceId, props: unknown) => (m.read ? m.read(resourceId, props) : { id: resourceId, props }),
        update: async (resourceId, olds, news) => {
            if (!m.update) throw new Error(`${label} provider: ${resourceId} cannot be updated in place`);
            return m.update(resourceId, olds, news);
        },
        delete: async (resourceId, props) => {
            if (m.remove) await m.remove(resourceId, props);
        },
    };
}

/** Writes the stubs of EARLIER_PATHS under `compiledRoot` (the folder holding components/). */
export function writeEarlierPathStubs(compiledRoot: string): string[] {
    const registry = path.join(compiledRoot, "components", "providers", "registry");
    return Object.entries(EARLIER_PATHS).map(([earlier, id]) => {
        const file = path.join(compiledRoot, `${earlier}.js`);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const target = path.relative(path.dirname(file), registry);
        fs.writeFileSync(
            file,
            `// Written by the build: providers in state made before the layout moved load "${id}" from here.\nmodule.exports = require(${JSON.stringify(target)}).loadProviderModule(${JSON.stringify(id)});\n`,
        );
        return file;
    });
}
