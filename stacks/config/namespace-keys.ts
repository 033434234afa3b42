/**
 * The keys of the project's config namespace (`gpu-workers:`): the program reads eight of them
 * and the secret keys that settings name. Another key that looks like one of them, or holds
 * settings (an object or a list), is a mistake: a typo such as `gpu-workers:default` would
 * otherwise be ignored, and none of its settings would apply. Other text is let be: a secret of
 * a host since removed from the stack, say.
 */
import { isPlainObject } from "../../components/program";

const NAMESPACE = "gpu-workers:";

/** The project's own config keys (besides the secret keys the settings name). */
export const STACK_KEYS = ["defaults", "hosts", "web", "allowNoHosts", "kubernetes", "hostSteps", "fleet", "fleetMember"] as const;

/** A key of the project's namespace, without `gpu-workers:`, and whether it holds a setting (an object or a list), not text. */
export interface NamespaceKey {
    name: string;
    structured: boolean;
}

/**
 * The keys of the project's namespace in a config map (Pulumi's, or a stack file's `config:`),
 * each with whether it holds a setting: a JSON object or list (as Pulumi hands values over), or
 * a YAML one that is no `secure:` value. The values themselves are not kept.
 */
export function namespaceKeysOf(config: Record<string, unknown>): NamespaceKey[] {
    const structured = (value: unknown): boolean => {
        if (typeof value !== "string") return isPlainObject(value) ? !("secure" in value) : Array.isArray(value);
        try {
            const parsed: unknown = JSON.parse(value);
            return typeof parsed === "object" && parsed !== null;
        } catch {
            return false;
        }
    };
    return Object.entries(config)
        .filter(([k]) => k.startsWith(NAMESPACE))
        .map(([k, v]) => ({ name: k.slice(NAMESPACE.length), structured: structured(v) }));
}

/** The config keys the settings name as holding secrets (privateKeySecret, passwordSecret, ...). */
function secretKeysNamed(value: unknown, into = new Set<string>()): Set<string> {
    if (Array.isArray(value)) for (const v of value) secretKeysNamed(v, into);
    else if (isPlainObject(value)) {
        for (const [k, v] of Object.entries(value)) {
            if (k.endsWith("Secret") && typeof v === "string") into.add(v);
            else secretKeysNamed(v, into);
        }
    }
    return into;
}

/** How many single-letter edits make `a` into `b`. */
function editDistance(a: string, b: string): number {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
        const next = [i];
        for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
        row = next;
    }
    return row[b.length];
}

/** The mistaken keys among `keys`, one line each; `settings` are the stack's values, for the secret keys they name. */
export function unknownKeyProblems(keys: NamespaceKey[], settings: unknown): string[] {
    const secrets = secretKeysNamed(settings);
    const known = STACK_KEYS.map((k) => `${NAMESPACE}${k}`).join(", ");
    return keys.flatMap(({ name, structured }) => {
        if ((STACK_KEYS as readonly string[]).includes(name) || secrets.has(name)) return [];
        const near = STACK_KEYS.find((k) => editDistance(name.toLowerCase(), k.toLowerCase()) <= 2);
        if (!near && !structured) return [];
        return [
            `${NAMESPACE}${name}: unknown key${near ? ` (did you mean ${NAMESPACE}${near}?)` : ", and it holds settings"}; the project reads ${known}, and the secret keys that settings name (privateKeySecret, passwordSecret, ...)`,
        ];
    });
}
