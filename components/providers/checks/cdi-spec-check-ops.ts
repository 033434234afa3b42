/**
 * The CdiSpecCheck provider's operations, loaded when the provider runs: the CDI spec that the
 * vendor's tool generated on the host (printed by generate-cdi.sh ensure after its marker
 * line) must pass the project's CDI validator, or the update fails naming every problem.
 */
import { validateCdiSpec } from "../../lib/cdi/schema";

/** The line generate-cdi.sh prints right before the spec's text. */
export const CDI_SPEC_MARKER = "generate-cdi: the spec runtimes read:";

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
    const text = specFromEnsureOutput(inputs.ensureOutput);
    if (text === undefined) throw new Error(`${where}: generate-cdi.sh printed no spec to check (no line "${CDI_SPEC_MARKER}")`);
    const spec = validateCdiSpec(text, where);
    return { kind: spec.kind, devices: spec.devices.map((d) => d.name) };
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
