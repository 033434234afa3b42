/**
 * The validator step: after the chain has converged, host/validate-worker.sh checks that the
 * driver agrees with the inventory, then starts containers through containerd, the runc
 * wrapper and the runtime behind it (the host's root read-only as their root file system) and
 * checks from inside what they get: the selected GPUs and no other, also when a container asks
 * for all of them; device nodes a non-root user opens through its group; the datasets and
 * their modes; the environment. Pure.
 */
import { hostScriptFile } from "../../host/scripts";
import { RenderedComponent, shellCommand } from "../../host/steps";

export interface WorkerValidatorSettings {
    /** The GPUs' vendor, or none for a worker without GPUs (only the datasets and env are checked). */
    vendor: "nvidia" | "amd" | "intel" | "none";
    /** Every declared GPU (the driver must list exactly these), with its UUID where declared. */
    gpus: { index: number; uuid?: string }[];
    /** The worker's GPUs: a container must see exactly these. */
    selected: number[];
    /** The driver version the host must run: the pin, or the inventory's driverVersion. */
    driverVersion?: string;
    /** The CUDA version nvidia-smi must report (the inventory's cudaVersion). */
    cudaVersion?: string;
    /** The toolkit package and the version it must be at ("preinstalled": any). */
    toolkit?: {
        /** The toolkit's Debian package. */
        package: string;
        /** The version it must be at. */
        version: string;
    };
    /** The CDI spec whose changes make a refresh run the validator again. */
    cdiSpec?: string;
    /** The runc wrapper containerd's GPU runtime entry names. */
    wrapper: string;
    /** containerd's socket. Default /run/containerd/containerd.sock. */
    socket?: string;
    /** What the wrapper sets and removes in every container, and the device nodes it adds. */
    env: Record<string, string>;
    /** Variables the wrapper removes from every container. */
    unsetEnv: string[];
    /** Device nodes the wrapper adds to every container. */
    deviceNodes: string[];
    /** The datasets a container must get, in their modes. */
    datasets: {
        /** The dataset root, read-only in the container. */
        root: string;
        /** Folder-name endings that mount read-write. */
        writableSuffixes: string[];
    };
}

export const VALIDATOR_SCRIPT = "validate-worker.sh";

/** The script's options; every expectation is in them, so a change of any runs it again. */
export function validatorArgs(s: WorkerValidatorSettings): string[] {
    const args = ["--vendor", s.vendor, "--wrapper", s.wrapper];
    if (s.gpus.length > 0) args.push("--gpus", s.gpus.map((g) => (g.uuid ? `${g.index}:${g.uuid}` : `${g.index}`)).join(","));
    if (s.selected.length > 0) args.push("--selected", s.selected.join(","));
    if (s.driverVersion) args.push("--driver", s.driverVersion);
    if (s.cudaVersion) args.push("--cuda", s.cudaVersion);
    if (s.toolkit) args.push("--toolkit-package", s.toolkit.package, "--toolkit-version", s.toolkit.version);
    if (s.cdiSpec) args.push("--cdi-spec", s.cdiSpec);
    if (s.socket) args.push("--socket", s.socket);
    for (const [name, value] of Object.entries(s.env).sort(([a], [b]) => a.localeCompare(b))) args.push("--env", `${name}=${value}`);
    for (const name of s.unsetEnv) args.push("--unset", name);
    for (const node of s.deviceNodes) args.push("--device", node);
    args.push("--datasets-root", s.datasets.root);
    for (const suffix of s.datasets.writableSuffixes) args.push("--writable-suffix", suffix);
    return args;
}

export function renderWorkerValidator(s: WorkerValidatorSettings): RenderedComponent {
    const script = hostScriptFile(VALIDATOR_SCRIPT);
    const args = validatorArgs(s);
    return {
        files: [script],
        steps: [
            {
                name: "validate",
                create: shellCommand([script.path, "ensure", ...args]),
                remove: shellCommand([script.path, "remove"]),
                // A refresh notices a driver, toolkit or CDI spec changed since the last validation.
                check: shellCommand([script.path, "check", ...args]),
                dependsOn: [script.path],
            },
        ],
    };
}
