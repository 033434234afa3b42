/**
 * Base of the components that act on one host: given the rendered files and steps, it
 * creates one child resource each (and the program checks the rendering asks for), all
 * waiting for the component's own dependsOn.
 */
import * as pulumi from "@pulumi/pulumi";
import { DEFAULT_HOST_STEPS, HostStepTransport } from "../lib/host/step-transport";
import { ProgramCheck, RenderedComponent, stepResourceName } from "../lib/host/steps";
import type { PlannedPart } from "../lib/links/link";
import { SSH_USER_DEFAULT } from "../lib/host/transport-defaults";
import { CdiSpecCheck } from "../providers/checks/cdi-spec-check";
import { createHostResources, hostConnection, HostConnectionInput } from "../providers/host/resources";
import type { HostCommand } from "../providers/host/step-transport";

/** How every host component reaches its host. */
export interface HostAccessArgs {
    /**
     * SSH connection to the host: GpuHost's `connection` output, or one of your own, whose fields
     * may each be an output (`privateKey: config.requireSecret("sshKey")`).
     * Example: { host: "10.0.0.7", port: 22, user: "root", privateKey, hostKey: "ssh-ed25519 AAAA... root@gpu-c" }.
     */
    connection: pulumi.Input<HostConnectionInput>;
    /** Login user; commands run through `sudo -n` unless it is root. Default: root. */
    user?: string;
    /**
     * What runs the steps: "command" (@pulumi/command's remote.Command and CopyToRemote, its plugin
     * installed) or "builtin" (the program's own SSH client: no plugin, one connection per host).
     * Default: DEFAULT_HOST_STEPS ("command"); GpuHost's `hostSteps` passes on its own.
     */
    hostSteps?: HostStepTransport;
    /** HostDriftGuard's epoch: when a refresh finds drift, every command runs again on `up`. Default: none. */
    epoch?: pulumi.Input<number>;
    /**
     * Paths this component renders that something else on the same host places, with the same
     * content, before its steps run (GpuWorker's plan works them out: an earlier component, or
     * GpuWorker's one set of the program's own files): they are not placed twice.
     * Default: none. Example: ["/usr/local/lib/gpu-workers/install-runc-wrapper.sh"].
     */
    placedEarlier?: string[];
    /**
     * What the host must have done before this component's files in the program's own folders
     * are placed (GpuWorker: its GpuHost and drift guard): they need not wait for the earlier
     * components in the chain, only the steps do. Default: the component's whole dependsOn.
     */
    hostReady?: pulumi.Input<pulumi.Resource>[];
}

/** A leaf component's args: the host, and either the user's terms (it plans for itself) or its part of GpuWorker's one plan of the host. */
export type LeafArgs<Terms, Settings> = HostAccessArgs & (Terms | { planned: PlannedPart<Settings> });

/** Makers of program checks by kind: (resource name, the check, the step it follows, options). */
export type CheckMakers = {
    [K in Exclude<ProgramCheck["kind"], "cdi-spec">]?: (
        name: string,
        check: Extract<ProgramCheck, { kind: K }>,
        after: HostCommand,
        opts: pulumi.CustomResourceOptions,
    ) => pulumi.Resource;
};

function dependsOnList(opts: pulumi.ComponentResourceOptions | undefined): pulumi.Input<pulumi.Resource>[] {
    const d = opts?.dependsOn;
    if (d === undefined) return [];
    return Array.isArray(d) ? d : [d as pulumi.Input<pulumi.Resource>];
}

export abstract class HostStepsComponent extends pulumi.ComponentResource {
    /** Every file this component places, with its host path and mode (content in the preview diff). */
    public files!: pulumi.Output<{ path: string; mode: string }[]>;
    /** The step names this component runs on the host, in order. */
    public steps!: pulumi.Output<string[]>;

    protected constructor(
        type: string,
        private readonly componentName: string,
        private readonly componentOpts: pulumi.ComponentResourceOptions | undefined,
    ) {
        // The component itself waits for nothing: a child registers only once its parent has, and
        // each child waits for what it needs (placeOnHost), so files that need not wait are not held back.
        super(type, componentName, {}, { ...componentOpts, dependsOn: undefined });
    }

    /** Creates the children for `rendered`; subclasses call it once, then registerOutputs. Returns the steps by name. */
    /**
     * `values`: the contents of the files marked secret or generated, by host path.
     * `checks`: how this component makes the program checks other than the CDI spec's.
     * `after`: resources of this component that every file and step waits for (an instance it creates).
     */
    protected placeOnHost(
        rendered: RenderedComponent,
        args: HostAccessArgs,
        extra: { values?: Record<string, pulumi.Input<string>>; checks?: CheckMakers; after?: pulumi.Resource[] } = {},
    ): Map<string, HostCommand> {
        const { values, checks, after: first = [] } = extra;
        const steps = createHostResources(rendered, {
            parent: this,
            prefix: this.componentName,
            connection: hostConnection(args.connection),
            hostSteps: args.hostSteps ?? DEFAULT_HOST_STEPS,
            user: args.user ?? SSH_USER_DEFAULT,
            dependsOn: [...dependsOnList(this.componentOpts), ...first],
            ownFilesDependOn: args.hostReady ? [...args.hostReady, ...first] : undefined,
            values,
            epoch: args.epoch,
            placedEarlier: args.placedEarlier,
        });
        for (const check of rendered.checks ?? []) {
            const after = steps.get(check.after);
            if (!after) throw new Error(`${this.componentName}: check ${check.name} follows step ${check.after}, which this component does not run`);
            const name = stepResourceName(this.componentName, check.name);
            const opts = { parent: this, dependsOn: [after] };
            if (check.kind === "cdi-spec") {
                new CdiSpecCheck(name, { host: this.componentName, path: check.path, ensureOutput: after.stdout }, opts);
            } else {
                const make = checks?.[check.kind];
                if (!make) throw new Error(`${this.componentName}: no way to make the ${check.kind} check ${check.name}`);
                make(name, check, after, opts);
            }
        }
        this.files = pulumi.output(rendered.files.filter((f) => !args.placedEarlier?.includes(f.path)).map((f) => ({ path: f.path, mode: f.mode })));
        this.steps = pulumi.output(rendered.steps.map((s) => s.name));
        return steps;
    }
}
