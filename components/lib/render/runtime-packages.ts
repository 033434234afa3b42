/**
 * The step that installs a container runtime the host lacks from the distribution's packages
 * (host/runtime-packages.sh): the chain configures containerd and runc, and assumes neither.
 */
import { OWNERSHIP_SCRIPT, scriptStep } from "../host/scripts";
import { RenderedComponent } from "../host/steps";

/** The step's name; a component's own steps that need the packages depend on it. */
export const RUNTIME_PACKAGES_STEP = "runtime-packages";

/** `commands`: each command the component needs, with the Debian package that brings it. */
export function renderRuntimePackages(commands: Record<string, string>): RenderedComponent {
    const pairs = Object.entries(commands).map(([command, pkg]) => `${command}=${pkg}`);
    const rendered = scriptStep({ name: RUNTIME_PACKAGES_STEP, script: "runtime-packages.sh", args: pairs, helpers: [OWNERSHIP_SCRIPT] });
    // A refresh notices the runtime removed by hand, and the next up puts it back.
    rendered.steps[0].check = `${rendered.files[0].path} check ${pairs.join(" ")}`;
    return rendered;
}
