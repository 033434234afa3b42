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
