/**
 * From one worker host to the settings of every component in its chain, and the chain itself
 * in order. Pure: planHost (the one plan of a host) builds on it, and GpuWorker hands each
 * link's settings to that link's component.
 */
import type { LxdHostShape, WorkerSpec } from "./worker-spec";
import { lxdConfigForWorker, lxdDevicesForWorker, lxdProxyDevice } from "../lxd/devices";
import { LxdDevices } from "../lxd/types";
import { ConcourseWorkerSettings, renderConcourseWorker } from "../render/concourse-worker";
import { ContainerdRuntimeSettings, renderConcourseContainerdConfig, renderContainerdRuntimeComponent } from "../render/containerd";
import { CDI_SPEC_PATHS, ContainerToolkitSettings, NVIDIA_RUNTIME_BINARY, renderContainerToolkit } from "../render/container-toolkit";
import { FabricManagerSettings, renderFabricManager } from "../render/fabric-manager";
import { GpuDriverSettings, renderGpuDriver } from "../render/gpu-driver";
import { PlanError, planWorkerGpus, WorkerGpuPlan } from "../gpu/plan";
import { vendorRepository } from "../repos/vendor-repos";
import { toolkitVersion, toolkitVersionProblems } from "../toolkit/versions";
import { ExpectedFile, renderDriftCheck } from "../render/drift-check";
import { sha256File, sha256Text } from "../file-hash";
import { RenderedComponent } from "../host/steps";
import { renderWorkerValidator, WorkerValidatorSettings } from "../render/worker-validator";
import { TOOLKITS } from "../toolkit/versions";
import { renderRuncWrapperComponent, RUNC_REAL_PATH, RuncWrapperSettings, WRAPPER_BUILD_OUTPUT, WRAPPER_PATH, wrapperSha256 } from "../render/runc-wrapper";

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
    // nvidia-container-runtime sits between the wrapper and runc on NVIDIA hosts; its own
    // runtimes list names the real runc, so nothing can loop back to the wrapper.
    const realRuntime = gpuVendor === "nvidia" ? NVIDIA_RUNTIME_BINARY : RUNC_REAL_PATH;
    const settings: ChainSettings = {
        plan,
        containerd: { runtimeName: host.containerd.runtimeName, binaryName: WRAPPER_PATH, makeDefault: host.containerd.default, enableCdi: host.toolkit.cdi && gpuVendor !== undefined },
        // full and fuse-only both give a privileged step CAP_SYS_ADMIN, which the wrapper refuses unless allowed.
        wrapper: { plan, datasets: host.datasets, realRuntime, allowPrivileged: host.concourse.privilegedMode !== "ignore" },
        validator: validatorSettings(host, plan),
    };
    if (gpuVendor) {
        const version = toolkitVersion(gpuVendor, host.toolkit.version);
        if (version !== "preinstalled") {
            const problems = toolkitVersionProblems(gpuVendor, version);
            if (problems.length > 0) throw new PlanError("toolkit.version", problems.join("; "));
        }
        const driverRepository = host.driver.version === "preinstalled" ? undefined : vendorRepository("driver", gpuVendor);
        settings.driver = { vendor: gpuVendor, version: host.driver.version, ...(driverRepository ? { repository: driverRepository } : {}) };
        const toolkitRepository = version === "preinstalled" ? undefined : vendorRepository("toolkit", gpuVendor);
        settings.toolkit = {
            vendor: gpuVendor,
            version,
            ...(toolkitRepository ? { repository: toolkitRepository } : {}),
            cdi: host.toolkit.cdi,
            tegra: host.inventory.tegra,
            cdiDevices: plan.cdiDevices,
            realRuntime: RUNC_REAL_PATH,
            driverVersion: host.driver.version,
        };
        settings.validator.toolkit = { package: TOOLKITS[gpuVendor].package, version };
        if (host.toolkit.cdi) settings.validator.cdiSpec = CDI_SPEC_PATHS[gpuVendor];
    }
    if (plan.fabricManager.enabled) settings.fabricManager = { partitions: plan.fabricManager.partitions };
    if (host.concourse.binary) {
        if (host.concourse.tsaHost === undefined) throw new Error(`host ${host.name}: concourse.tsaHost is required to run the worker (the TSA's address as the worker reaches it)`);
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
            networkMtu: host.concourse.networkMtu,
            privilegedMode: host.concourse.privilegedMode,
            ...(host.registration ? { registration: { ...host.registration, task: host.concourse.taskCheck } } : {}),
            inUserNamespace: host.concourse.userNamespace ?? (host.transport.lxd !== undefined && host.transport.lxd.type === "container" && host.transport.lxd.config["security.privileged"] !== "true"),
            wrapRunc: { wrapper: WRAPPER_PATH, sha256: wrapperSha256(settings.wrapper.wrapperBinary ?? WRAPPER_BUILD_OUTPUT) },
        };
    } else {
        settings.stoppedBeforeWorker = `host ${host.name}: concourse.binary is not set (give {url, sha256} or {path}), so the chain stops before the Concourse worker`;
    }
    return settings;
}

/** What the validator expects: the whole inventory from the driver, the plan's selection, env and devices in a container. */
function validatorSettings(host: WorkerSpec, plan: WorkerGpuPlan): WorkerValidatorSettings {
    const inv = host.inventory;
    const pinned = host.driver.version === "preinstalled" ? undefined : host.driver.version;
    const driverVersion = pinned ?? inv.driverVersion;
    // The declared CUDA version belongs to the declared driver, not to a pin of another branch.
    const sameBranch = !pinned || !inv.driverVersion || pinned.split(".")[0] === inv.driverVersion.split(".")[0];
    return {
        vendor: inv.vendor,
        gpus: inv.gpus.map((g) => ({ index: g.index, ...(g.uuid ? { uuid: g.uuid } : {}) })),
        selected: plan.selected.map((g) => g.index),
        ...(driverVersion ? { driverVersion } : {}),
        ...(inv.cudaVersion && sameBranch ? { cudaVersion: inv.cudaVersion } : {}),
        wrapper: WRAPPER_PATH,
        env: plan.env,
        unsetEnv: plan.unsetEnv,
        deviceNodes: plan.deviceNodes,
        datasets: host.datasets,
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
            ...lxdDevicesForWorker(plan, { cdi: lxd.gpuCdi, datasetSource: lxd.datasetSource, datasetFolders: lxd.datasetFolders, datasets: host.datasets, shiftWritable: lxd.shiftWritable, hostPci }),
            ...Object.fromEntries(Object.entries(lxd.serverPorts).map(([device, p]) => [device, lxdProxyDevice({ address: "127.0.0.1", port: p.port }, p.server, "instance")])),
        },
    };
}

/** The drift check of a whole chain: every file it places, and every step's own check. */
export function chainDriftCheck(links: Pick<ChainLink, "rendered">[]): string {
    const files = new Map<string, ExpectedFile>();
    for (const file of links.flatMap((l) => l.rendered.files)) {
        const sha256 = file.secret || file.generated ? null : file.localPath ? sha256File(file.localPath) : sha256Text(file.content);
        files.set(file.path, { path: file.path, sha256 });
    }
    const checks = links.flatMap((l) => l.rendered.steps.flatMap((s) => (s.check ? [s.check] : [])));
    return renderDriftCheck([...files.values()], checks);
}
