/**
 * The CdiSpecCheck provider's operations, loaded when the provider runs. The CDI rules are
 * judged on the host: generate-cdi.sh runs cdi-check (the CDI project's own library, which
 * runtimes read specs with) on the spec before installing it, and fails the update naming
 * every problem. What is left here is what the library cannot say: that the host's script did
 * judge this spec (it prints the library's verdict before the spec), and the spec's kind and
 * device names, recorded as outputs.
 */
import { parse as parseYaml } from "yaml";

/** The line generate-cdi.sh prints right before the spec's text. */
export const CDI_SPEC_MARKER = "generate-cdi: the spec runtimes read:";
/** The line generate-cdi.sh prints once the CDI library accepted the spec at PATH. */
export const cdiLibraryVerdict = (path: string) => `generate-cdi: the CDI library accepts ${path}`;

export interface CdiSpecCheckInputs {
    host: string;
    /** The spec's path on the host, for messages. */
    path: string;
    /** stdout of `generate-cdi.sh ensure`. */
    ensureOutput: string;
}

/** The spec's text: everything after the marker line. */
export function specFromEnsureOutput(stdout: string): string | undefined {
    const lines = stdout.split("\n");
    const at = lines.indexOf(CDI_SPEC_MARKER);
    return at < 0 ? undefined : lines.slice(at + 1).join("\n");
}

function verify(inputs: CdiSpecCheckInputs): { kind: string; devices: string[] } {
    const where = `${inputs.host}:${inputs.path}`;
    const lines = inputs.ensureOutput.split("\n");
    const at = lines.indexOf(CDI_SPEC_MARKER);
    if (at < 0) throw new Error(`${where}: generate-cdi.sh printed no spec (no line "${CDI_SPEC_MARKER}")`);
    if (!lines.slice(0, at).includes(cdiLibraryVerdict(inputs.path)))
        throw new Error(
            `${where}: generate-cdi.sh printed no verdict of the CDI library on the spec (no line "${cdiLibraryVerdict(inputs.path)}"; a script from before cdi-check?)`,
        );
    let spec: unknown;
    try {
        spec = parseYaml(lines.slice(at + 1).join("\n"));
    } catch (err) {
        throw new Error(`${where}: the spec generate-cdi.sh printed is not YAML or JSON: ${(err as Error).message.split("\n")[0]}`, { cause: err });
    }
    const { kind, devices } = (spec ?? {}) as { kind?: unknown; devices?: unknown };
    const names = Array.isArray(devices) ? devices.map((d) => (d as { name?: unknown } | null)?.name) : [];
    if (typeof kind !== "string" || names.length === 0 || names.some((n) => typeof n !== "string"))
        throw new Error(`${where}: the spec generate-cdi.sh printed has no kind or device names to record`);
    return { kind, devices: names as string[] };
}

export async function create(inputs: CdiSpecCheckInputs) {
    return { id: `${inputs.host}:${inputs.path}`, outs: { ...inputs, ...verify(inputs) } };
}

export async function diff(_id: string, olds: CdiSpecCheckInputs, news: CdiSpecCheckInputs) {
    return { changes: olds.ensureOutput !== news.ensureOutput || olds.path !== news.path };
}

export async function update(_id: string, _olds: CdiSpecCheckInputs, news: CdiSpecCheckInputs) {
    return { outs: { ...news, ...verify(news) } };
}
