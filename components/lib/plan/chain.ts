/**
 * From one worker host to the settings of every component in its chain, and the chain itself
 * in order. Pure: planHost (the one plan of a host) builds on it, and GpuWorker hands each
 * link's settings to that link's component.
 */
import type { LxdHostShape, WorkerSpec } from "./worker-spec";
import { lxdConfigForWorker, lxdDevicesForWorker } from "../lxd/devices";
import { LxdDevices } from "../lxd/types";
import { ConcourseWorkerSettings, renderConcourseWorker } from "../render/concourse-worker";
import { ContainerdRuntimeSettings, renderConcourseContainerdConfig, renderContainerdRuntimeComponent } from "../render/containerd";
import { ContainerToolkitSettings, NVIDIA_RUNTIME_BINARY, renderContainerToolkit } from "../render/container-toolkit";
import { FabricManagerSettings, renderFabricManager } from "../render/fabric-manager";
import { GpuDriverSettings, renderGpuDriver } from "../render/gpu-driver";
import { planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { ExpectedFile, renderDriftCheck } from "../render/drift-check";
import { sha256File, sha256Text } from "../file-hash";
import { RenderedComponent } from "../host/steps";
import { renderRuncWrapperComponent, RUNC_REAL_PATH, RuncWrapperSettings, WRAPPER_BUILD_OUTPUT, WRAPPER_PATH, wrapperSha256 } from "../render/runc-wrapper";

export interface ChainSettings {
    plan: WorkerGpuPlan;
    /** Absent on hosts without GPUs. */
    driver?: GpuDriverSettings;
    toolkit?: ContainerToolkitSettings;
    containerd: ContainerdRuntimeSettings;
    wrapper: RuncWrapperSettings;
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
        ...(host.fabricPartition ? { fabricPartition: host.fabricPartition.id } : {}),
    });
    const gpuVendor = plan.vendor === "none" ? undefined : plan.vendor;
    // nvidia-container-runtime sits between the wrapper and runc on NVIDIA hosts; its own
    // runtimes list names the real runc, so nothing can loop back to the wrapper.
    const realRuntime = gpuVendor === "nvidia" ? NVIDIA_RUNTIME_BINARY : RUNC_REAL_PATH;
    const settings: ChainSettings = {
        plan,
        containerd: { runtimeName: host.containerd.runtimeName, binaryName: WRAPPER_PATH, makeDefault: host.containerd.default, enableCdi: host.toolkit.cdi && gpuVendor !== undefined },
        wrapper: { plan, datasets: host.datasets, realRuntime },
    };
    if (gpuVendor) {
        settings.driver = { vendor: gpuVendor, version: host.driver.version };
        settings.toolkit = {
            vendor: gpuVendor,
            version: host.toolkit.version,
            cdi: host.toolkit.cdi,
            tegra: host.inventory.tegra,
            cdiDevices: plan.cdiDevices,
            realRuntime: RUNC_REAL_PATH,
            driverVersion: host.driver.version,
        };
    }
    if (plan.fabricManager.enabled) settings.fabricManager = { partitions: plan.fabricManager.partitions };
    if (host.concourse.binary) {
        settings.concourse = {
            name: host.name,
            version: host.concourse.version,
            tsaHost: host.concourse.tsaHost,
            tsaPort: host.concourse.tsaPort,
            tsaPublicKey: host.concourse.tsaPublicKey,
            team: host.concourse.team,
            tags: plan.tags,
            workDir: host.concourse.workDir,
            binary: host.concourse.binary,
            containerdConfig: renderConcourseContainerdConfig(),
            wrapRunc: { wrapper: WRAPPER_PATH, sha256: wrapperSha256(settings.wrapper.wrapperBinary ?? WRAPPER_BUILD_OUTPUT) },
        };
    } else {
        settings.stoppedBeforeWorker = `host ${host.name}: concourse.binary is not set (give {url, sha256} or {path}), so the chain stops before the Concourse worker`;
    }
    return settings;
}

/** One link of the chain, in order: the component type, its child name and what it places. */
export interface ChainLink {
    component: "GpuDriver" | "ContainerToolkit" | "ContainerdRuntime" | "RuncWrapper" | "FabricManager" | "ConcourseWorker";
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
        devices: lxdDevicesForWorker(plan, { cdi: lxd.gpuCdi, datasetSource: lxd.datasetSource, datasets: host.datasets, shiftWritable: lxd.shiftWritable, hostPci }),
    };
}

/** The drift check of a whole chain: every file it places, and every step's own check. */
export function chainDriftCheck(links: Pick<ChainLink, "rendered">[]): string {
    const files = new Map<string, ExpectedFile>();
    for (const file of links.flatMap((l) => l.rendered.files)) {
        const sha256 = file.secret ? null : file.localPath ? sha256File(file.localPath) : sha256Text(file.content);
        files.set(file.path, { path: file.path, sha256 });
    }
    const checks = links.flatMap((l) => l.rendered.steps.flatMap((s) => (s.check ? [s.check] : [])));
    return renderDriftCheck([...files.values()], checks);
}
