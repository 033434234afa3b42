/**
 * The GPU inventory of one host: declared in the stack, verified on the host by discovery.
 * This zod schema is the one definition of its shape; the stack schema, the discovery
 * parser and the planner all use it.
 */
import { z } from "zod";

const nonNegativeInt = z
    .number({ error: "expected a non-negative integer" })
    .int({ error: "expected a non-negative integer" })
    .nonnegative({ error: "expected a non-negative integer" });

export const COMPUTE_CAPABILITY_PATTERN = /^[0-9]{1,2}\.[0-9]$/;
/** A driver version as nvidia-smi prints it (550.54.15), or a ROCm release (6.2.2). */
export const DRIVER_VERSION_PATTERN = /^[0-9]+(\.[0-9]+)+$/;
/** The CUDA version the driver supports, as the nvidia-smi header prints it (12.4). */
export const CUDA_VERSION_PATTERN = /^[0-9]+\.[0-9]+$/;

/** The kernel drivers of Intel GPUs: i915 (Gen9 to Alchemist, Flex and Max), xe (Battlemage, Lunar Lake and newer). */
export const INTEL_DRIVERS = ["i915", "xe"] as const;

export const MIG_PROFILE_PATTERN = /^([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+[a-z.]+)?$/;

/** One MIG device on a GPU, as `nvidia-smi -L` lists it ("MIG 3g.40gb Device 0"). */
export const migInstanceSchema = z.strictObject({
    /** MIG device index within its GPU; CDI and NVIDIA_VISIBLE_DEVICES name it `<gpu>:<index>`. */
    index: nonNegativeInt,
    /** Profile name, e.g. `1g.10gb`, `3g.40gb`. */
    profile: z.string().regex(MIG_PROFILE_PATTERN, { error: "expected a MIG profile such as 1g.10gb or 1c.3g.20gb" }),
    /** GPU instance id. */
    gi: nonNegativeInt,
    /** Compute instance id within the GPU instance. */
    ci: nonNegativeInt,
    uuid: z
        .string()
        .regex(/^MIG-[0-9a-fA-F-]+$/, { error: "expected a MIG UUID such as MIG-2f4e..." })
        .optional(),
});

export const gpuSchema = z.strictObject({
    /** Index as the driver numbers it (nvidia-smi index, or KFD node order for AMD). */
    index: nonNegativeInt,
    /** Marketing name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3". */
    model: z.string().min(1, { error: "expected the GPU model name" }),
    /** Total memory in MiB (nvidia-smi memory.total; for integrated parts the carve-out). */
    memoryMiB: nonNegativeInt,
    uuid: z
        .string()
        .regex(/^GPU-[0-9a-fA-F-]+$/, { error: "expected a GPU UUID such as GPU-5e8f..." })
        .optional(),
    /** PCI bus id, e.g. 00000000:18:00.0. */
    pciBusId: z
        .string()
        .regex(/^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/, { error: "expected a PCI bus id such as 0000:18:00.0" })
        .optional(),
    /** Integrated (shares host memory: Tegra, AMD APUs) rather than a discrete card. */
    integrated: z.boolean().default(false),
    /** AMD only: the gfx target the KFD reports, e.g. gfx90a, gfx1103. */
    gfxTarget: z
        .string()
        .regex(/^gfx[0-9a-f]{3,4}$/, { error: "expected an AMD gfx target such as gfx1103" })
        .optional(),
    /** AMD and Intel: the DRM render node, e.g. renderD128 (AMD's defaults to renderD<128+index>; Intel's is required). */
    renderNode: z
        .string()
        .regex(/^renderD[0-9]+$/, { error: "expected a render node such as renderD128" })
        .optional(),
    /** Intel only: the DRM card node, e.g. card0 (sysfs `device/drm/`). */
    cardNode: z
        .string()
        .regex(/^card[0-9]+$/, { error: "expected a card node such as card0" })
        .optional(),
    /** Intel only: the kernel driver bound to the GPU (the `device/driver` link in sysfs): i915 or xe. */
    driver: z.enum(INTEL_DRIVERS, { error: "expected i915 or xe" }).optional(),
    /** Intel only: the PCI device id (sysfs `device/device`), e.g. 0x56c0 for a Flex 170. */
    pciDeviceId: z
        .string()
        .regex(/^0x[0-9a-f]{4}$/, { error: "expected a PCI device id such as 0x56c0" })
        .optional(),
    /** MIG devices configured on this GPU (empty when MIG is off). */
    mig: z.array(migInstanceSchema).default([]),
    /** NVIDIA only: the compute capability nvidia-smi reports (compute_cap), e.g. "9.0" for H100; it decides the family tag. */
    computeCapability: z.string().regex(COMPUTE_CAPABILITY_PATTERN, { error: "expected a compute capability such as 9.0" }).optional(),
    /**
     * NVIDIA boards with NVSwitches: the GPU's module id (1-8 on an HGX H100), as `nvidia-smi -q`
     * reports it ("Module ID"). Fabric partitions name GPUs by module id, not by index.
     */
    moduleId: z
        .number({ error: "expected a module id (1 or more)" })
        .int({ error: "expected a module id (1 or more)" })
        .min(1, { error: "expected a module id (1 or more)" })
        .optional(),
});

export const inventorySchema = z
    .strictObject({
        /** The GPUs' vendor; none for a host without GPUs. */
        vendor: z.enum(["nvidia", "amd", "intel", "none"], { error: "expected nvidia, amd, intel or none" }),
        /** Every GPU of the host, by index (`npm run discover` prints them). */
        gpus: z.array(gpuSchema).default([]),
        /** Number of NVSwitches (HGX boards); fabricmanager runs only where this is above 0. */
        nvswitches: nonNegativeInt.default(0),
        /** NVIDIA integrated GPU on Tegra/Jetson: CDI must be generated in csv mode. */
        tegra: z.boolean().default(false),
        /**
         * The driver the host runs: NVIDIA's kernel driver (550.54.15), or for AMD the ROCm
         * release (6.2.2). Discovery prints it; it gives the gpu-driver-major tag.
         */
        driverVersion: z.string().regex(DRIVER_VERSION_PATTERN, { error: "expected a driver version such as 550.54.15" }).optional(),
        /** NVIDIA only: the highest CUDA version the driver supports (nvidia-smi's header), e.g. 12.4. */
        cudaVersion: z.string().regex(CUDA_VERSION_PATTERN, { error: "expected a CUDA version such as 12.4" }).optional(),
    })
    .superRefine((inv, ctx) => {
        if (inv.vendor === "none" && inv.gpus.length > 0) {
            ctx.addIssue({ code: "custom", path: ["gpus"], message: "vendor none declares no GPUs; remove them or set the vendor" });
        }
        if (inv.vendor !== "none" && inv.gpus.length === 0) {
            ctx.addIssue({ code: "custom", path: ["gpus"], message: `vendor ${inv.vendor} needs at least one GPU` });
        }
        const seen = new Set<number>();
        const modules = new Set<number>();
        inv.gpus.forEach((gpu, i) => {
            if (seen.has(gpu.index)) ctx.addIssue({ code: "custom", path: ["gpus", i, "index"], message: `duplicate GPU index ${gpu.index}` });
            seen.add(gpu.index);
            if (gpu.moduleId !== undefined) {
                if (modules.has(gpu.moduleId)) ctx.addIssue({ code: "custom", path: ["gpus", i, "moduleId"], message: `duplicate module id ${gpu.moduleId}` });
                modules.add(gpu.moduleId);
                if (inv.vendor !== "nvidia") ctx.addIssue({ code: "custom", path: ["gpus", i, "moduleId"], message: "moduleId is for NVIDIA GPUs only" });
            }
            if (inv.vendor === "intel") intelGpuIssues(gpu).forEach((issue) => ctx.addIssue({ ...issue, path: ["gpus", i, ...issue.path] }));
            else
                for (const field of ["cardNode", "driver", "pciDeviceId"] as const)
                    if (gpu[field] !== undefined) ctx.addIssue({ code: "custom", path: ["gpus", i, field], message: `${field} is for Intel GPUs only` });
            if (gpu.renderNode && inv.vendor !== "amd" && inv.vendor !== "intel")
                ctx.addIssue({ code: "custom", path: ["gpus", i, "renderNode"], message: "renderNode is for AMD and Intel GPUs only" });
            if (gpu.gfxTarget && inv.vendor !== "amd")
                ctx.addIssue({ code: "custom", path: ["gpus", i, "gfxTarget"], message: "gfxTarget is for AMD GPUs only" });
            if (gpu.computeCapability && inv.vendor !== "nvidia")
                ctx.addIssue({
                    code: "custom",
                    path: ["gpus", i, "computeCapability"],
                    message: "computeCapability is for NVIDIA GPUs only (AMD GPUs are told apart by gfxTarget)",
                });
            if (gpu.mig.length > 0 && inv.vendor !== "nvidia")
                ctx.addIssue({ code: "custom", path: ["gpus", i, "mig"], message: "MIG is for NVIDIA GPUs only" });
            const migIndexes = new Set<number>();
            gpu.mig.forEach((m, j) => {
                if (migIndexes.has(m.index)) ctx.addIssue({ code: "custom", path: ["gpus", i, "mig", j, "index"], message: `duplicate MIG index ${m.index}` });
                migIndexes.add(m.index);
            });
        });
        if (inv.nvswitches > 0 && inv.vendor !== "nvidia") {
            ctx.addIssue({ code: "custom", path: ["nvswitches"], message: "NVSwitches exist on NVIDIA boards only" });
        }
        if (inv.cudaVersion && inv.vendor !== "nvidia") {
            ctx.addIssue({ code: "custom", path: ["cudaVersion"], message: "cudaVersion is for NVIDIA hosts only" });
        }
        if (inv.driverVersion && inv.vendor === "none") {
            ctx.addIssue({ code: "custom", path: ["driverVersion"], message: "vendor none has no GPU driver" });
        }
        if (inv.tegra && inv.vendor !== "nvidia") {
            ctx.addIssue({ code: "custom", path: ["tegra"], message: "tegra is for NVIDIA integrated GPUs only" });
        }
    });

/** What an Intel GPU must say: the nodes a container gets, the address its by-path links and LXD passthrough use, its driver. */
function intelGpuIssues(gpu: z.infer<typeof gpuSchema>): { code: "custom"; path: string[]; message: string }[] {
    const issues: { code: "custom"; path: string[]; message: string }[] = [];
    const need = (field: "cardNode" | "renderNode" | "pciBusId" | "driver", what: string) => {
        if (gpu[field] === undefined) issues.push({ code: "custom", path: [field], message: `an Intel GPU needs its ${what} (npm run discover prints it)` });
    };
    need("cardNode", "card node, e.g. card0");
    need("renderNode", "render node, e.g. renderD128");
    need("pciBusId", "PCI bus id, e.g. 0000:4d:00.0");
    need("driver", "driver, i915 or xe");
    return issues;
}

export type MigInstance = z.infer<typeof migInstanceSchema>;
export type Gpu = z.infer<typeof gpuSchema>;
export type GpuInventory = z.infer<typeof inventorySchema>;
/** What the user may write (defaults not yet applied). */
export type GpuInventoryInput = z.input<typeof inventorySchema>;
