/**
 * Pure renderer of CDI specs. The result is validated by ./schema before it is returned,
 * so a spec this project writes is one every CDI runtime accepts. Without an explicit
 * cdiVersion it declares the lowest version its features need (as nvidia-ctk and the CDI
 * producer API do), so runtimes with an older CDI library still read it.
 */
import { stringify } from "yaml";
import { CdiContainerEdits, CdiDeviceNode, CdiHook, CdiMount, CdiSpec, CdiVersion, minimumCdiVersion, validateCdiSpec } from "./schema";

export interface CdiEditsInput {
    /** Variables as a map (rendered KEY=VALUE, sorted) or as KEY=VALUE entries. */
    env?: Record<string, string> | string[];
    deviceNodes?: CdiDeviceNode[];
    mounts?: CdiMount[];
    hooks?: CdiHook[];
    additionalGids?: number[];
}

export interface CdiDeviceInput extends CdiEditsInput {
    name: string;
    annotations?: Record<string, string>;
}

export interface CdiSpecInput {
    /** vendor/class, e.g. nvidia.com/gpu. */
    kind: string;
    devices: CdiDeviceInput[];
    /** Edits applied when any device of the spec is requested. */
    containerEdits?: CdiEditsInput;
    annotations?: Record<string, string>;
    /** Defaults to the lowest version the content needs. */
    cdiVersion?: CdiVersion;
    format?: "yaml" | "json";
}

function edits(input: CdiEditsInput | undefined): CdiContainerEdits {
    const out: CdiContainerEdits = {};
    if (!input) return out;
    if (input.env !== undefined) {
        out.env = Array.isArray(input.env)
            ? [...input.env]
            : Object.keys(input.env)
                  .sort()
                  .map((k) => `${k}=${(input.env as Record<string, string>)[k]}`);
    }
    if (input.deviceNodes?.length) out.deviceNodes = input.deviceNodes.map((n) => ({ ...n }));
    if (input.mounts?.length) out.mounts = input.mounts.map((m) => ({ ...m, ...(m.options ? { options: [...m.options] } : {}) }));
    if (input.hooks?.length) out.hooks = input.hooks.map((h) => ({ ...h }));
    if (input.additionalGids?.length) out.additionalGids = [...input.additionalGids];
    return out;
}

/** The spec as a plain object, validated. */
export function buildCdiSpec(input: CdiSpecInput): CdiSpec {
    const body: Omit<CdiSpec, "cdiVersion"> = {
        kind: input.kind,
        ...(input.annotations ? { annotations: { ...input.annotations } } : {}),
        devices: input.devices.map((d) => ({
            name: d.name,
            ...(d.annotations ? { annotations: { ...d.annotations } } : {}),
            containerEdits: edits(d),
        })),
    };
    const common = edits(input.containerEdits);
    if (Object.keys(common).length > 0) body.containerEdits = common;
    const spec: CdiSpec = { cdiVersion: input.cdiVersion ?? minimumCdiVersion(body), ...body };
    return validateCdiSpec(spec, `CDI spec ${input.kind}`);
}

/** The spec as YAML (default) or JSON text, validated. */
export function renderCdiSpec(input: CdiSpecInput): string {
    const spec = buildCdiSpec(input);
    if (input.format === "json") return JSON.stringify(spec, null, 2) + "\n";
    return "---\n" + stringify(spec, { lineWidth: 0 });
}
