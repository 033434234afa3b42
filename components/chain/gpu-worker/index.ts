import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { GpuInventory } from "../../lib/gpu/inventory";
import type { HostStepTransport } from "../../lib/host/step-transport";
import { onTransport, Transport } from "../../lib/host/transport";
import { chainDriftCheck } from "../../lib/plan/chain";
import type { LinkComponent } from "../../lib/links/table";
import { HostPlan, planHost, PlannedLink } from "../../lib/plan/host-plan";
import { parseSettings, REGISTRATION_TIMEOUT_SECONDS, WorkerSettings } from "../../lib/settings/settings";
import type { WorkerSettingsLayer } from "../../lib/settings/settings-layer.generated";
import { lxdWorkerTransportSchema, planTransport, sshPlanSchema } from "../../lib/settings/transport-schema";
import { jobMappingAndFoldersProblem, workDirAndDatasetsProblem } from "../../lib/settings/value-patterns";
import type { HostShape, WorkerFabricPartition, WorkerSpec } from "../../lib/settings/worker-spec";
import { driftCheckCommand, HostDriftGuard } from "../../providers/drift";
import { createHostFiles } from "../../providers/host/resources";
import { ArtifactSource, LOCAL_ARTIFACTS } from "../artifacts";
import { ConcourseWorker } from "../concourse-worker";
import { ContainerdRuntime } from "../containerd";
import { ContainerToolkit } from "../container-toolkit";
import { FabricManager } from "../fabric-manager";
import { GpuDriver } from "../gpu-driver";
import { GpuHealth } from "../gpu-health";
import { GpuHost, GpuHostArgs, SshHostTransport } from "../gpu-host";
import type { LxdServerArg } from "../host-access";
import { HostAccessArgs } from "../host-steps-component";
import { RuncWrapper } from "../runc-wrapper";
import type { WebAdmission, WebForWorkers } from "../concourse-web";
import { WorkerValidator } from "../worker-validator";
import { GpuMetrics } from "../gpu-metrics";
import { GpuMps } from "../gpu-mps";

/** A worker host in LXD: its instance (lxdWorkerTransportSchema: each field's doc and default are written there), and how to reach its LXD server. */
export type GpuWorkerLxdTransport = z.input<typeof lxdWorkerTransportSchema> & LxdServerArg;

/**
 * GpuWorker's arguments: the host (transport, inventory) and the worker's settings, which are
 * the settings schema's (components/lib/settings/settings.ts: each field's doc and default are
 * written there, once, and reach each field here as its JSDoc through WorkerSettingsLayer, which
 * the build writes from the schema), plus what only a program can pass (outputs, secrets, the web).
 */
export interface GpuWorkerArgs extends Omit<WorkerSettingsLayer, "concourse"> {
    /** Exactly one of ssh (a machine) or lxd (an instance this worker creates). */
    transport: Transport<SshHostTransport, GpuWorkerLxdTransport>;
    /** What runs every host step of the worker: "command" or "builtin" (HostAccessArgs.hostSteps). Default: DEFAULT_HOST_STEPS. */
    hostSteps?: HostStepTransport;
    /** The declared GPU inventory (inventorySchema.parse(...)); `npm run discover` prints it for a host. */
    inventory: GpuInventory;
    /** The Concourse worker's settings (the schema's `concourse`), with keys, password and web that only a program has. */
    concourse?: Omit<NonNullable<WorkerSettingsLayer["concourse"]>, "tsaPublicKey"> & {
        /** The TSA's host key, as the schema's `concourse.tsaPublicKey` (its `.pub` line); an output works too. Example: "ssh-rsa AAAA... concourse-tsa". Required for the worker (or give `web`). */
        tsaPublicKey?: pulumi.Input<string>;
        /** The worker's TSA private key: an RSA key in PEM (`concourse generate-key -t ssh`), the only kind Concourse reads; generated when absent. Pass a secret. */
        workerPrivateKey?: pulumi.Input<string>;
        /**
         * The web of the same stack (ConcourseWeb's `forWorkers()`): the TSA's host, port and key
         * come from it unless given here, the worker converges after it, and its registration is checked there.
         */
        web?: WebForWorkers;
        /** Check the registration at a web outside this stack: its URL and a user that may list workers. Default: none (or `web`'s). */
        registration?: {
            /** The web's URL (http:// or https://). */
            url: string;
            /** A user of the web that may list workers. */
            username: string;
            /** That user's password. Pass a secret. */
            password: pulumi.Input<string>;
            /** How long to wait for the web to list the worker as planned, in seconds. Default: REGISTRATION_TIMEOUT_SECONDS. */
            timeoutSeconds?: number;
            /** For an https web: the PEM certificate, or the CA, to trust (and only that). Default: the system's CAs. */
            ca?: pulumi.Input<string>;
        };
    };
    /**
     * A worker VM on a board shared through fabricmanager's service VM (SharedGpuBoard sets it
     * from the partition planner): the partition's id (tagged gpu-fabric-partition=ID) and the
     * host PCI address of each of the VM's GPUs. The inventory is then the VM's own view (GPUs
     * 0..N-1). Default: none.
     */
    fabricPartition?: WorkerFabricPartition;
    /**
     * The worker's plan, made from these same arguments (`planHost(workerSpec(name, args))`): a
     * program that validated and planned its whole stack first hands each worker its own, and the
     * worker builds from it, parsing and planning nothing again. Default: planned here from the arguments.
     */
    planned?: HostPlan;
}

export class GpuWorkerArgsError extends Error {}

/** How a worker's spec and plan are made. */
export interface WorkerPlanning {
    /** Where the digests of the files uploaded from here come from. Default: LOCAL_ARTIFACTS (this checkout's, hashed once per run). */
    artifacts?: ArtifactSource;
    /**
     * The arguments' settings are whole as parseSettings returned them (a program's config stage
     * parsed them, with the components' schema or its extension): taken as they are, not parsed again.
     */
    settingsParsed?: boolean;
}

/** The worker's settings with defaults applied and checked, and its host as planning sees it. */
export function workerSpec(name: string, args: GpuWorkerArgs, planning: WorkerPlanning = {}): WorkerSpec {
    const { transport, hostSteps: _steps, planned: _planned, inventory, concourse, fabricPartition, ...rest } = args;
    const artifacts = planning.artifacts ?? LOCAL_ARTIFACTS;
    const { workerPrivateKey: _secret, web, registration, tsaPublicKey, ...given } = concourse ?? {};
    // The web of the stack fills in the TSA where the worker names none; a key known only at up is rendered then.
    const concourseSettings = {
        ...given,
        ...((given.tsaHost ?? web?.tsaHost) ? { tsaHost: given.tsaHost ?? web?.tsaHost } : {}),
        ...((given.tsaPort ?? web?.tsaPort) ? { tsaPort: given.tsaPort ?? web?.tsaPort } : {}),
        ...(typeof tsaPublicKey === "string" ? { tsaPublicKey } : {}),
    };
    const layer = { ...rest, ...(concourse ? { concourse: concourseSettings } : {}) };
    const parsed = planning.settingsParsed ? { success: true as const, data: layer as WorkerSettings } : parseSettings([layer]);
    const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    const workDir = parsed.success ? workDirAndDatasetsProblem(parsed.data.concourse.workDir, parsed.data.datasets.root) : undefined;
    if (workDir) problems.push(`concourse.workDir: ${workDir}`);
    const mapping = parsed.success ? parsed.data.metrics.dcgmJobMappingDir : undefined;
    const mappingProblem =
        parsed.success && mapping !== undefined ? jobMappingAndFoldersProblem(mapping, parsed.data.datasets.root, parsed.data.concourse.workDir) : undefined;
    if (mappingProblem) problems.push(`metrics.dcgmJobMappingDir: ${mappingProblem}`);
    if (parsed.success && parsed.data.concourse.binary) {
        if (parsed.data.concourse.tsaHost === undefined) problems.push("concourse.tsaHost: required to run the worker (or give concourse.web)");
        if (tsaPublicKey === undefined && web === undefined) problems.push("concourse.tsaPublicKey: required to run the worker (or give concourse.web)");
    }
    const host: { data: HostShape } | { problems: string[] } = planTransport(transport, { ssh: sshPlanSchema, lxd: lxdWorkerTransportSchema });
    if ("problems" in host) problems.push(...host.problems);
    if (!parsed.success || !("data" in host) || problems.length > 0) throw new GpuWorkerArgsError(`GpuWorker ${name}: ${problems.join("; ")}`);
    const check = registration ?? (web ? { url: web.url, username: web.username } : undefined);
    const { binary, ...concourseSpec } = parsed.data.concourse;
    return {
        ...parsed.data,
        name,
        transport: host.data,
        inventory,
        concourse: { ...concourseSpec, ...(binary ? { binary: artifacts.release(binary) } : {}) },
        artifacts: artifacts.built(),
        ...(check
            ? { registration: { url: check.url, username: check.username, timeoutSeconds: registration?.timeoutSeconds ?? REGISTRATION_TIMEOUT_SECONDS } }
            : {}),
        ...(fabricPartition ? { fabricPartition } : {}),
    };
}

/** The one plan of a worker from its arguments: its spec (the settings parsed once), then planHost. */
export function planWorker(name: string, args: GpuWorkerArgs, planning: WorkerPlanning = {}): HostPlan {
    return planHost(workerSpec(name, args, planning));
}

/**
 * A whole GPU worker on one host: GpuHost, then GpuDriver -> ContainerToolkit ->
 * ContainerdRuntime -> RuncWrapper -> ConcourseWorker -> GpuHealth (and FabricManager on
 * NVSwitch boards, GpuMps after the wrapper in allocation mode mps), each waiting for the one
 * before it. The resources come from planHost, the plan the offline render writes out
 * (`planned`, when the program made it already).
 */
export class GpuWorker extends pulumi.ComponentResource {
    /** The host's name (this component's name). */
    public readonly hostName: string;
    public readonly tags: pulumi.Output<string[]>;
    public readonly connection: GpuHost["connection"];
    /** The worker's public TSA key, when the chain reaches the worker. */
    public readonly workerPublicKey?: pulumi.Output<string>;
    /** Set when the chain stops before the Concourse worker, saying why. */
    public readonly stoppedBeforeWorker?: string;

    constructor(name: string, args: GpuWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("gpu-workers:worker:GpuWorker", name, {}, opts);
        this.hostName = name;
        const plan = args.planned ?? planWorker(name, args);
        const gpuHost = new GpuHost(
            plan.hostComponent,
            {
                transport: onTransport<SshHostTransport, GpuWorkerLxdTransport, GpuHostArgs["transport"]>(args.transport, {
                    ssh: (ssh) => ({ ssh }),
                    lxd: ({ server }) => ({ lxd: { server, ...plan.hostTransport.lxd! } }),
                }),
                inventory: args.inventory,
                hostSteps: args.hostSteps,
                driverVersion: plan.verify.driverPin,
                warnOnly: plan.verify.warnOnly,
            },
            { parent: this, dependsOn: opts?.dependsOn },
        );
        // The guard touches no host until a refresh, so it waits for nothing but its connection (an
        // LXD instance's): the engine starts the Node.js dynamic provider for it while discovery
        // runs, not after, and it holds every registration while it starts.
        const guard = new HostDriftGuard(
            `${name}-drift`,
            {
                connection: gpuHost.connection,
                command: driftCheckCommand(gpuHost.user),
                check: chainDriftCheck(plan.links),
            },
            { parent: this },
        );
        const access: HostAccessArgs = {
            connection: gpuHost.connection,
            user: gpuHost.user,
            hostSteps: gpuHost.hostSteps,
            epoch: guard.epoch,
            hostReady: [gpuHost, guard],
        };
        // Every link's files in the program's own folders, by one set as soon as the host is verified (plan.ownFiles).
        const ownFiles = [
            ...new Set(
                createHostFiles(plan.ownFiles, {
                    parent: this,
                    prefix: name,
                    connection: gpuHost.connection,
                    hostSteps: gpuHost.hostSteps,
                    user: gpuHost.user,
                    dependsOn: [gpuHost, guard],
                    epoch: guard.epoch,
                }).values(),
            ),
        ];

        const c = args.concourse ?? {};
        const worker: ConcourseExtras = {
            tsaPublicKey: c.tsaPublicKey ?? c.web?.tsaPublicKey,
            workerPrivateKey: c.workerPrivateKey,
            webPassword: c.registration?.password ?? c.web?.password,
            webCa: c.registration ? c.registration.ca : c.web?.ca,
            after: c.web?.resource ? [c.web.resource] : [],
            admission: c.web?.admission,
        };
        const created = new Map<string, pulumi.Resource>();
        let concourse: ConcourseWorker | undefined;
        for (const link of plan.links) {
            const dependsOn = [gpuHost, guard, ...ownFiles, ...link.dependsOn.map((d) => created.get(d)!)];
            const resource = createLink(link, { ...access, placedEarlier: link.placedEarlier }, worker, { parent: this, dependsOn });
            if (resource instanceof ConcourseWorker) concourse = resource;
            created.set(link.name, resource);
        }
        this.tags = pulumi.output(plan.gpu.tags);
        this.connection = gpuHost.connection;
        this.workerPublicKey = concourse?.workerPublicKey;
        this.stoppedBeforeWorker = plan.stoppedBeforeWorker;
        if (plan.stoppedBeforeWorker) void pulumi.log.warn(plan.stoppedBeforeWorker, this);
        this.registerOutputs({ tags: this.tags, workerPublicKey: this.workerPublicKey });
    }
}

/** What the worker link takes besides its settings: keys and password that only `up` knows, and the web it waits for. */
interface ConcourseExtras {
    tsaPublicKey?: pulumi.Input<string>;
    workerPrivateKey?: pulumi.Input<string>;
    webPassword?: pulumi.Input<string>;
    webCa?: pulumi.Input<string>;
    after: pulumi.Resource[];
    admission?: WebAdmission;
}

/** Makes one link's component from its part of the host's plan. */
type LinkMaker<K extends LinkComponent> = (
    link: Extract<PlannedLink, { component: K }>,
    access: HostAccessArgs,
    worker: ConcourseExtras,
    o: pulumi.ComponentResourceOptions,
) => pulumi.Resource;

/** Every link of the table (lib/links/table.ts) to its component, which takes its part of the plan: the compiler holds this to every link. */
const LINK_COMPONENTS: { [K in LinkComponent]: LinkMaker<K> } = {
    GpuDriver: (link, access, _worker, o) => new GpuDriver(link.name, { ...access, planned: link }, o),
    FabricManager: (link, access, _worker, o) => new FabricManager(link.name, { ...access, planned: link }, o),
    ContainerToolkit: (link, access, _worker, o) => new ContainerToolkit(link.name, { ...access, planned: link }, o),
    ContainerdRuntime: (link, access, _worker, o) => new ContainerdRuntime(link.name, { ...access, planned: link }, o),
    RuncWrapper: (link, access, _worker, o) => new RuncWrapper(link.name, { ...access, planned: link }, o),
    GpuMps: (link, access, _worker, o) => new GpuMps(link.name, { ...access, planned: link }, o),
    WorkerValidator: (link, access, _worker, o) => new WorkerValidator(link.name, { ...access, planned: link }, o),
    GpuMetrics: (link, access, _worker, o) => new GpuMetrics(link.name, { ...access, planned: link }, o),
    ConcourseWorker: (link, access, worker, o) =>
        new ConcourseWorker(
            link.name,
            {
                ...access,
                planned: link,
                tsaPublicKey: link.settings.tsaPublicKey ?? worker.tsaPublicKey!,
                workerPrivateKey: worker.workerPrivateKey,
                webPassword: worker.webPassword,
                webCa: worker.webCa,
                after: worker.after,
                admission: worker.admission,
            },
            o,
        ),
    GpuHealth: (link, access, _worker, o) => new GpuHealth(link.name, { ...access, planned: link }, o),
};

function createLink<K extends LinkComponent>(
    link: Extract<PlannedLink, { component: K }>,
    access: HostAccessArgs,
    worker: ConcourseExtras,
    o: pulumi.ComponentResourceOptions,
): pulumi.Resource {
    return (LINK_COMPONENTS[link.component] as LinkMaker<K>)(link, access, worker, o);
}
