/**
 * From one worker host to the settings of every component in its chain, and the chain itself
 * in order. Pure: planHost (the one plan of a host) builds on it. GpuWorker gives each leaf
 * component the worker's terms (wrapperTerms and the like), which the component plans with
 * the functions used here (leaf-terms.ts), and the other links their settings.
 */
import type { LxdHostShape, WorkerSpec } from "./worker-spec";
import { lxdConfigForWorker, lxdDevicesForWorker, lxdProxyDevice } from "../lxd/devices";
import { LxdDevices } from "../lxd/types";
import { ConcourseWorkerSettings, renderConcourseWorker } from "../render/concourse-worker";
import { ContainerdRuntimeSettings, renderContainerdRuntimeComponent } from "../render/containerd";
import { ContainerToolkitSettings, renderContainerToolkit } from "../render/container-toolkit";
import { FabricManagerSettings, renderFabricManager } from "../render/fabric-manager";
import { GpuDriverSettings, renderGpuDriver } from "../render/gpu-driver";
import { planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { ExpectedFile, renderDriftCheck } from "../render/drift-check";
import { sha256Text } from "../file-hash";
import { Artifact, RenderedComponent } from "../host/steps";
import { renderWorkerValidator, WorkerValidatorSettings } from "../render/worker-validator";
import { renderRuncWrapperComponent, RuncWrapperSettings } from "../render/runc-wrapper";
import {
    ContainerdRuntimeTerms,
    ContainerToolkitTerms,
    planContainerdRuntime,
    planConcourseWorker,
    planContainerToolkit,
    planGpuDriver,
    planRuncWrapper,
    planWorkerValidator,
    RuncWrapperTerms,
    WorkerValidatorTerms,
} from "./leaf-terms";

export interface ChainSettings {
    /** The worker's GPU plan, from the inventory and the selection. */
    plan: WorkerGpuPlan;
    /** Absent on hosts without GPUs. */
    driver?: GpuDriverSettings;
    /** Absent on hosts without GPUs. */
    toolkit?: ContainerToolkitSettings;
    /** containerd's runtime entry for the wrapper. */
    containerd: ContainerdRuntimeSettings;
    /** The runc wrapper and its config. */
    wrapper: RuncWrapperSettings;
    /** The check, after the wrapper, that containers get what the plan says. */
    validator: WorkerValidatorSettings;
    /** Present only where the inventory declares NVSwitches (and fabricmanager is not off). */
    fabricManager?: FabricManagerSettings;
    /** Absent when the stack gives no Concourse binary: the chain stops before the worker. */
    concourse?: ConcourseWorkerSettings;
    /** Why the chain stops before the worker, in one line. */
    stoppedBeforeWorker?: string;
}

export function chainSettings(host: WorkerSpec): ChainSettings {
    const plan = planWorkerGpus(host.inventory, {
        selection: host.selection,
        cdi: host.toolkit.cdi,
        fabricManager: host.fabricManager,
        extraTags: host.concourse.tags,
        driverPin: host.driver.version,
        privilegedMode: host.concourse.privilegedMode,
        ...(host.fabricPartition ? { fabricPartition: host.fabricPartition.id } : {}),
    });
    const gpuVendor = plan.vendor === "none" ? undefined : plan.vendor;
    const settings: ChainSettings = {
        plan,
        containerd: planContainerdRuntime(containerdTerms(host)),
        wrapper: planRuncWrapper(wrapperTerms(host), plan),
        validator: planWorkerValidator(validatorTerms(host), plan),
    };
    if (gpuVendor) {
        settings.driver = planGpuDriver({ vendor: gpuVendor, version: host.driver.version });
        settings.toolkit = planContainerToolkit(toolkitTerms(host), plan);
    }
    if (plan.fabricManager.enabled) settings.fabricManager = { partitions: plan.fabricManager.partitions };
    if (host.concourse.binary) {
        if (host.concourse.tsaHost === undefined)
            throw new Error(`host ${host.name}: concourse.tsaHost is required to run the worker (the TSA's address as the worker reaches it)`);
        settings.concourse = planConcourseWorker({
            name: host.name,
            version: host.concourse.version,
            tsaHost: host.concourse.tsaHost,
            tsaPort: host.concourse.tsaPort,
            tsaPublicKey: host.concourse.tsaPublicKey,
            team: host.concourse.team,
            tags: plan.tags,
            workDir: host.concourse.workDir,
            binary: host.concourse.binary,
            networkMtu: host.concourse.networkMtu,
            privilegedMode: host.concourse.privilegedMode,
            ...(host.registration ? { registration: { ...host.registration, task: host.concourse.taskCheck } } : {}),
            inUserNamespace:
                host.concourse.userNamespace ??
                (host.transport.lxd !== undefined && host.transport.lxd.type === "container" && host.transport.lxd.config["security.privileged"] !== "true"),
            wrapRunc: true,
            runcCves: host.wrapper.runcCves,
            wrapperBinary: host.artifacts.wrapper,
        });
    } else {
        settings.stoppedBeforeWorker = `host ${host.name}: concourse.binary is not set (give {url, sha256} or {path}), so the chain stops before the Concourse worker`;
    }
    return settings;
}

/** The worker's runc wrapper in a user's terms: RuncWrapper alone takes the same (its runtime: nvidia-container-runtime on NVIDIA hosts, whose runtimes list names the real runc). */
export function wrapperTerms(host: WorkerSpec): RuncWrapperTerms & { wrapperBinary: Artifact } {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        datasets: host.datasets,
        privilegedMode: host.concourse.privilegedMode,
        allowSpec: host.wrapper.allow,
        runcCves: host.wrapper.runcCves,
        wrapperBinary: host.artifacts.wrapper,
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

/** The worker's validator in a user's terms. */
export function validatorTerms(host: WorkerSpec): WorkerValidatorTerms {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        datasets: host.datasets,
        driverVersion: host.driver.version,
        ...(host.toolkit.version !== undefined ? { toolkitVersion: host.toolkit.version } : {}),
    };
}

/** The worker's container toolkit in a user's terms. */
export function toolkitTerms(host: WorkerSpec): ContainerToolkitTerms {
    return {
        inventory: host.inventory,
        selection: host.selection,
        cdi: host.toolkit.cdi,
        ...(host.toolkit.version !== undefined ? { version: host.toolkit.version } : {}),
        driverVersion: host.driver.version,
    };
}

/** One link of the chain, in order: the component type, its child name and what it places. */
export interface ChainLink {
    component: "GpuDriver" | "ContainerToolkit" | "ContainerdRuntime" | "RuncWrapper" | "WorkerValidator" | "FabricManager" | "ConcourseWorker";
    name: string;
    rendered: RenderedComponent;
    /** Names of the links this one waits for. */
    dependsOn: string[];
}

/** The chain of one host in order, the way GpuWorker builds it. */
export function renderChain(hostName: string, s: ChainSettings): ChainLink[] {
    const links: ChainLink[] = [];
    const add = (component: ChainLink["component"], suffix: string, rendered: RenderedComponent, dependsOn: string[]) => {
        const name = `${hostName}-${suffix}`;
        links.push({ component, name, rendered, dependsOn });
        return name;
    };
    let previous: string[] = [];
    if (s.driver) previous = [add("GpuDriver", "driver", renderGpuDriver(s.driver), previous)];
    if (s.fabricManager) add("FabricManager", "fabric-manager", renderFabricManager(s.fabricManager), previous);
    if (s.toolkit) previous = [add("ContainerToolkit", "toolkit", renderContainerToolkit(s.toolkit), previous)];
    previous = [add("ContainerdRuntime", "containerd", renderContainerdRuntimeComponent(s.containerd), previous)];
    previous = [add("RuncWrapper", "runc-wrapper", renderRuncWrapperComponent(s.wrapper), previous)];
    // fabricmanager must run before a container can use an NVSwitch board's GPUs.
    const fabricLinks = links.filter((l) => l.component === "FabricManager").map((l) => l.name);
    previous = [add("WorkerValidator", "validate", renderWorkerValidator(s.validator), [...previous, ...fabricLinks])];
    if (s.concourse) {
        const fabric = links.filter((l) => l.component === "FabricManager").map((l) => l.name);
        add("ConcourseWorker", "concourse", renderConcourseWorker(s.concourse), [...previous, ...fabric]);
    }
    return links;
}

/** The GPU, dataset and config of a worker's LXD instance (GpuHost adds the sshd proxy). */
export function lxdInstanceSettings(host: WorkerSpec, lxd: LxdHostShape, plan: WorkerGpuPlan): { config: Record<string, string>; devices: LxdDevices } {
    const hostPci = host.fabricPartition ? Object.fromEntries(host.fabricPartition.hostPciBusIds.map((pci, index) => [index, pci])) : undefined;
    return {
        config: { ...lxdConfigForWorker(plan, { cdi: lxd.gpuCdi, type: lxd.type }), ...lxd.config },
        devices: {
            ...lxdDevicesForWorker(plan, {
                cdi: lxd.gpuCdi,
                datasetSource: lxd.datasetSource,
                datasetFolders: lxd.datasetFolders,
                datasets: host.datasets,
                shiftWritable: lxd.shiftWritable,
                hostPci,
            }),
            ...Object.fromEntries(
                Object.entries(lxd.serverPorts).map(([device, p]) => [device, lxdProxyDevice({ address: "127.0.0.1", port: p.port }, p.server, "instance")]),
            ),
        },
    };
}

/** The drift check of a whole chain: every file it places, and every step's own check. */
export function chainDriftCheck(links: Pick<ChainLink, "rendered">[]): string {
    const files = new Map<string, ExpectedFile>();
    for (const file of links.flatMap((l) => l.rendered.files)) {
        const sha256 = file.secret || file.generated ? null : file.artifact ? file.artifact.sha256 : sha256Text(file.content);
        files.set(file.path, { path: file.path, sha256 });
    }
    const checks = links.flatMap((l) => l.rendered.steps.flatMap((s) => (s.check ? [s.check] : [])));
    return renderDriftCheck([...files.values()], checks);
}
