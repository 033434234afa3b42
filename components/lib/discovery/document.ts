/**
 * The JSON document host/discover-gpus.sh prints on a host: raw tool output, one key
 * per source, and the failures of tools that exist but did not succeed. This module only
 * checks its shape; the per-source parsers interpret it.
 */
import { z } from "zod";

export const DISCOVERY_SCHEMA = "gpu-workers/discovery/v1";

const kfdNodeSchema = z.object({
    node: z.string(),
    properties: z.string().optional(),
    name: z.string().optional(),
    "mem-banks": z.array(z.string()).default([]),
});

/** Known sources; unknown ones are kept (a newer script may add some) but not used. */
export const sourcesSchema = z
    .object({
        "nvidia-smi-query": z.string().optional(),
        "nvidia-smi-L": z.string().optional(),
        "nvidia-smi": z.string().optional(),
        "nvidia-smi-compute-cap": z.string().optional(),
        "rocm-version": z.string().optional(),
        "nvidia-smi-mig-lgi": z.string().optional(),
        "nvidia-smi-mig-lci": z.string().optional(),
        /** `nvidia-smi -q`, run on hosts with NVSwitches (for the GPUs' module ids). */
        "nvidia-smi-q": z.string().optional(),
        "driver-version": z.string().optional(),
        "nvswitch-devices": z.array(z.string()).optional(),
        tegra: z.string().optional(),
        "device-tree-model": z.string().optional(),
        lspci: z.string().optional(),
        /** sysfs PCI functions of NVIDIA and AMD: address -> [vendor, device, class]. */
        "pci-devices": z.record(z.string(), z.tuple([z.string(), z.string(), z.string()])).optional(),
        "kfd-nodes": z.array(kfdNodeSchema).optional(),
        "dev-kfd": z.boolean().optional(),
        "render-nodes": z.array(z.string()).optional(),
        "amd-smi": z.string().optional(),
        "rocm-smi": z.string().optional(),
        /** Each DRM card of an Intel GPU: its node, PCI address, device id, class, driver and render node. */
        "intel-drm": z
            .array(z.object({ card: z.string(), pci: z.string(), device: z.string(), class: z.string(), driver: z.string(), render: z.string() }))
            .optional(),
        "xpu-smi-discovery": z.string().optional(),
        meminfo: z.string().optional(),
    })
    .loose();

export const toolFailureSchema = z.object({ exit: z.number().int(), output: z.string() });

export const discoveryDocumentSchema = z.object({
    schema: z.literal(DISCOVERY_SCHEMA, { error: `expected schema "${DISCOVERY_SCHEMA}"` }),
    sources: sourcesSchema,
    errors: z.record(z.string(), toolFailureSchema).default({}),
});

export type DiscoveryDocument = z.infer<typeof discoveryDocumentSchema>;
export type DiscoverySources = DiscoveryDocument["sources"];
export type KfdNodeSource = z.infer<typeof kfdNodeSchema>;
export type ToolFailure = z.infer<typeof toolFailureSchema>;

export class DiscoveryDocumentError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "DiscoveryDocumentError";
    }
}

/** Parses the script's stdout (or an already parsed object); throws with every problem and its path. */
export function readDiscoveryDocument(input: unknown, origin = "discovery output"): DiscoveryDocument {
    let raw: unknown = input;
    if (typeof input === "string") {
        const text = input.trim();
        if (text === "") throw new DiscoveryDocumentError(`${origin}: empty (did host/discover-gpus.sh run?)`);
        try {
            raw = JSON.parse(text);
        } catch (err) {
            throw new DiscoveryDocumentError(`${origin}: not JSON (${(err as Error).message}); it starts with ${JSON.stringify(text.slice(0, 80))}`);
        }
    }
    const result = discoveryDocumentSchema.safeParse(raw);
    if (!result.success) {
        const problems = result.error.issues.map((i) => `  - ${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`);
        throw new DiscoveryDocumentError(`${origin}: not a discovery document:\n${problems.join("\n")}`);
    }
    return result.data;
}
