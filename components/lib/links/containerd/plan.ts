/** containerd's GPU runtime handler link: its terms, its plan, and its row of the chain. Pure. */
import { GpuInventory } from "../../gpu/inventory";
import type { Artifact } from "../../host/steps";
import { WORKER_DEFAULTS } from "../../settings/settings";
import type { WorkerSpec } from "../../settings/worker-spec";
import type { LinkDef } from "../link";
import { WRAPPER_PATH } from "../runc-wrapper/render";
import { builtin } from "../terms";
import { ContainerdRuntimeSettings, renderContainerdRuntimeComponent } from "./render";

/** containerd's GPU runtime handler in a user's terms. */
export interface ContainerdRuntimeTerms {
    /** The declared GPU inventory: a host without GPUs gets no CDI in CRI. */
    inventory: GpuInventory;
    /** The CRI runtime handler that calls the wrapper (a Kubernetes RuntimeClass handler). Default: "gpu". */
    runtimeName?: string;
    /** Make it CRI's default runtime. Default: false. */
    default?: boolean;
    /** Turn on CRI's CDI support, for GPUs by CDI id (ContainerToolkit's spec). Default: true. */
    cdi?: boolean;
    /** Where CRI looks for CDI specs. Default: /etc/cdi and /var/run/cdi. */
    cdiSpecDirs?: string[];
    /** Also add Kata Containers' GPU runtime entry (kata-qemu-nvidia-gpu), beside the wrapper's. Default: false. */
    kata?: boolean;
    /** The built containerd-toml to upload, with its sha256. Default: dist/containerd-toml/containerd-toml of this package, hashed by the component. */
    helperBinary?: Artifact;
}

/** The handler's settings: it runs the runc wrapper where RuncWrapper places it. */
export function planContainerdRuntime(terms: ContainerdRuntimeTerms & { helperBinary: Artifact }): ContainerdRuntimeSettings {
    return {
        runtimeName: terms.runtimeName ?? builtin(WORKER_DEFAULTS.containerd?.runtimeName, "containerd.runtimeName"),
        binaryName: WRAPPER_PATH,
        makeDefault: terms.default ?? builtin(WORKER_DEFAULTS.containerd?.default, "containerd.default"),
        enableCdi: (terms.cdi ?? builtin(WORKER_DEFAULTS.toolkit?.cdi, "toolkit.cdi")) && terms.inventory.vendor !== "none",
        ...(terms.cdiSpecDirs !== undefined ? { cdiSpecDirs: terms.cdiSpecDirs } : {}),
        kata: terms.kata ?? builtin(WORKER_DEFAULTS.containerd?.kata, "containerd.kata"),
        helperBinary: terms.helperBinary,
    };
}

/** The worker's containerd runtime handler in a user's terms. */
export function containerdTerms(host: WorkerSpec): ContainerdRuntimeTerms & { helperBinary: Artifact } {
    return {
        inventory: host.inventory,
        runtimeName: host.containerd.runtimeName,
        default: host.containerd.default,
        kata: host.containerd.kata,
        cdi: host.toolkit.cdi,
        helperBinary: host.artifacts.containerdToml,
    };
}

/** Every worker's containerd gets the handler. */
export const containerdLink: LinkDef<ContainerdRuntimeSettings> = {
    suffix: "containerd",
    plan: (host) => planContainerdRuntime(containerdTerms(host)),
    render: renderContainerdRuntimeComponent,
};
