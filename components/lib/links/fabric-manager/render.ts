import { combine, OWNERSHIP_SCRIPT, scriptStep } from "../../host/scripts";
import { RenderedComponent } from "../../host/steps";

export interface FabricManagerSettings {
    /** Fabric partitions to activate (shared NVSwitch multi-tenancy); empty: the whole fabric for this host. */
    partitions: number[];
    /** Shared NVSwitch mode (FABRIC_MODE=1) even without partitions: fabricmanager in a board's service VM. Default: false. */
    shared?: boolean;
}

export const FABRIC_MANAGER_CONFIG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg";

/**
 * fabricmanager.cfg. FABRIC_MODE 0 gives the whole fabric to this host (bare metal);
 * 1 is shared NVSwitch multi-tenancy, where partitions are activated through the FM API.
 * Both listeners stay on loopback.
 */
export function renderFabricManagerConfig(settings: FabricManagerSettings): string {
    const values: [string, string | number][] = [
        ["LOG_LEVEL", 4],
        ["LOG_FILE_NAME", "/var/log/fabricmanager.log"],
        ["LOG_APPEND_TO_LOG", 1],
        ["LOG_FILE_MAX_SIZE", 1024],
        ["LOG_USE_SYSLOG", 0],
        ["DAEMONIZE", 1],
        ["BIND_INTERFACE_IP", "127.0.0.1"],
        ["STARTING_TCP_PORT", 16000],
        ["FABRIC_MODE", settings.shared || settings.partitions.length > 0 ? 1 : 0],
        ["FABRIC_MODE_RESTART", 0],
        ["STATE_FILE_NAME", "/var/tmp/fabricmanager.state"],
        ["FM_CMD_BIND_INTERFACE", "127.0.0.1"],
        ["FM_CMD_PORT_NUMBER", 6666],
        ["FM_STAY_RESIDENT_ON_FAILURES", 0],
        ["ACCESS_LINK_FAILURE_MODE", 0],
        ["TRUNK_LINK_FAILURE_MODE", 0],
        ["NVSWITCH_FAILURE_MODE", 0],
        ["ABORT_CUDA_JOBS_ON_FM_EXIT", 1],
        ["TOPOLOGY_FILE_PATH", "/usr/share/nvidia/nvswitch"],
        ["DATABASE_PATH", "/usr/share/nvidia/nvswitch"],
    ];
    return "# Rendered by gpu-workers: changes here are replaced on the next pulumi up.\n" + values.map(([k, v]) => `${k}=${v}`).join("\n") + "\n";
}

export function renderFabricManager(settings: FabricManagerSettings): RenderedComponent {
    return combine(
        { files: [{ path: FABRIC_MANAGER_CONFIG, mode: "0644", content: renderFabricManagerConfig(settings) }], steps: [] },
        scriptStep({
            name: "fabric-manager",
            script: "fabric-manager.sh",
            args: ["--config", FABRIC_MANAGER_CONFIG, ...settings.partitions.flatMap((id) => ["--partition", String(id)])],
            // remove puts the package's own config back before it restarts the service.
            removeArgs: ["--config", FABRIC_MANAGER_CONFIG],
            dependsOn: [FABRIC_MANAGER_CONFIG],
            helpers: [OWNERSHIP_SCRIPT],
        }),
    );
}
