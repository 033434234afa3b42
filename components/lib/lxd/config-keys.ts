/**
 * Which instance config keys the program hands LXD: an allow-list, each refused key named with
 * why. LXD passes some keys on unchecked to what runs as root on its server, so a key that is
 * not known to be harmless is refused, whoever gives it (the stack's `transport.lxd.config`, a
 * component's `config`, or the program itself). Pure.
 */

/** The keys and key families allowed, as they read in a message. */
export const ALLOWED_LXD_CONFIG = [
    "limits.*",
    "boot.*",
    "environment.*",
    "snapshots.*",
    "user.* (your own metadata)",
    "security.nesting",
    "security.idmap.isolated",
    "security.idmap.size",
    "security.protection.delete",
    "security.protection.shift",
    "security.secureboot",
    "security.csm",
    "nvidia.runtime",
    "nvidia.driver.capabilities",
    "nvidia.require.cuda",
    "nvidia.require.driver",
    "cloud-init.user-data",
    "cloud-init.vendor-data",
    "cloud-init.network-config",
];

/** Keys refused for what they do, by prefix or whole name (the first that matches says why). */
const REFUSED: [RegExp, string][] = [
    [
        /^raw\./,
        "LXD hands it on unchecked: an LXC hook or a QEMU option runs as root on the LXD server, and raw.idmap can map the instance's root to the server's",
    ],
    [/^security\.privileged$/, "the instance's root would be the LXD server's root"],
    [/^security\.idmap\.base$/, "it picks the server's uids the instance's users map to, which may be the server's own users"],
    [/^linux\.kernel_modules$/, "LXD loads those kernel modules on the server"],
    [/^security\.syscalls\.intercept\./, "the LXD server then mounts, loads BPF or creates device nodes for the instance"],
    [/^(volatile|image)\./, "LXD manages it itself"],
    [/^user\.(user-data|vendor-data|network-config|meta-data)$/, "it is cloud-init's older name of a key: give the user-data as cloud-init.user-data"],
];

const ALLOWED: RegExp[] = [
    /^limits\.[a-z0-9_.-]+$/,
    /^boot\.[a-z0-9_.-]+$/,
    /^environment\.[A-Za-z_][A-Za-z0-9_]*$/,
    /^snapshots\.[a-z0-9_.-]+$/,
    /^user\.[a-z0-9_.-]+$/,
    /^security\.(nesting|idmap\.isolated|idmap\.size|protection\.delete|protection\.shift|secureboot|csm)$/,
    /^nvidia\.(runtime|driver\.capabilities|require\.cuda|require\.driver)$/,
    /^cloud-init\.(user-data|vendor-data|network-config)$/,
];

/** Why the program will not hand LXD the instance config key `key`, or undefined. */
export function lxdConfigKeyProblem(key: string): string | undefined {
    const refused = REFUSED.find(([pattern]) => pattern.test(key));
    if (refused) return `${key} is refused: ${refused[1]}`;
    if (ALLOWED.some((pattern) => pattern.test(key))) return undefined;
    return `${key} is not among the keys gpu-workers hands LXD (${ALLOWED_LXD_CONFIG.join(", ")})`;
}
