/**
 * Base of the components that act on one host: given the rendered files and steps,
 * it creates one child resource each, all waiting for the component's own dependsOn.
 */
import * as pulumi from "@pulumi/pulumi";
import { createHostResources, HostConnection } from "./host-resources";
import { RenderedComponent } from "./host-steps";
import type { HostCommand } from "./remote/host-command";

/** How every host component reaches its host. */
export interface HostAccessArgs {
    /** SSH connection to the host (GpuHost's `connection` output). */
    connection: pulumi.Input<HostConnection>;
    /** Login user; commands run through `sudo -n` unless it is root. Default root. */
    user?: string;
    /** HostDriftGuard's epoch: when a refresh finds drift, every command runs again on `up`. */
    epoch?: pulumi.Input<number>;
}

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

    protected constructor(type: string, private readonly componentName: string, private readonly componentOpts: pulumi.ComponentResourceOptions | undefined) {
        super(type, componentName, {}, componentOpts);
    }

    /** Creates the children for `rendered`; subclasses call it once, then registerOutputs. Returns the steps by name. */
    protected placeOnHost(rendered: RenderedComponent, args: HostAccessArgs, secrets?: Record<string, pulumi.Input<string>>): Map<string, HostCommand> {
        const steps = createHostResources(rendered, {
            parent: this,
            prefix: this.componentName,
            connection: args.connection,
            user: args.user ?? "root",
            dependsOn: dependsOnList(this.componentOpts),
            secrets,
            epoch: args.epoch,
        });
        this.files = pulumi.output(rendered.files.map((f) => ({ path: f.path, mode: f.mode })));
        this.steps = pulumi.output(rendered.steps.map((s) => s.name));
        return steps;
    }
}
