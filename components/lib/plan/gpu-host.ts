/**
 * GpuHost's own part of a host's plan: reaching the host (host-access.ts), the discovery it
 * runs, and the check of the declared inventory. The GpuHost component and planHost both take
 * it from here.
 */
import { sha256Text } from "../file-hash";
import { asRoot, HostFile, stepResourceName } from "../host/steps";
import { readHostScript } from "../host/scripts";
import { AccessShape, HostAccessPlan, planHostAccess, PlannedStep } from "./host-access";

export type { AccessShape, PlannedStep } from "./host-access";

export interface GpuHostPlan {
    /** Login user on the host. */
    user: string;
    /** Discovery: the command run over SSH, with the script on its stdin. */
    discover: { command: string; script: string };
    lxd?: HostAccessPlan["lxd"];
    steps: PlannedStep[];
    files: HostFile[];
}

export const DISCOVER_SCRIPT = "discover-gpus.sh";

/** `name` is GpuHost's own name (a worker's is `<host>-host`). */
export function planGpuHost(name: string, transport: AccessShape): GpuHostPlan {
    const access = planHostAccess(name, "GpuHost", transport);
    const script = readHostScript(DISCOVER_SCRIPT);
    const command = asRoot(access.user, "bash -s");
    const discover = stepResourceName(name, "discover");
    const steps: PlannedStep[] = [
        ...access.steps,
        {
            name: discover,
            component: "GpuHost",
            dependsOn: access.steps.map((s) => s.name),
            run: `${command} (stdin: host/${DISCOVER_SCRIPT}, sha256 ${sha256Text(script)})`,
        },
        {
            name: stepResourceName(name, "inventory"),
            component: "GpuHost",
            dependsOn: [discover],
            run: "compare the discovered inventory with the declared one (in the program)",
        },
    ];
    return { user: access.user, discover: { command, script }, lxd: access.lxd, steps, files: access.files };
}
