/**
 * A member stack's config file, `Pulumi.<member>.yaml` in its work folder, made from the fleet
 * stack's own file as written: its secrets settings (the passphrase's salt, or a KMS provider and
 * its encrypted key), its environments and every value, secure ones as their ciphertext, with the
 * member's hosts and part set. The member's stack then decrypts what the fleet's does, with no
 * run of the CLI and no secret ever in plain text on a command line.
 */
import * as fs from "fs";
import * as path from "path";
import { parse, stringify } from "yaml";
import { StackConfigError } from "../../stacks/config/stack";
import { racksOf } from "../../stacks/config/racks";
import type { FleetPlan, Rack } from "./members";

/** A stack file as Pulumi writes it: `config`, beside its secrets settings and `environment`. */
export interface StackFile {
    config?: Record<string, unknown>;
    [setting: string]: unknown;
}

const NS = "gpu-workers";
/** The settings in a stack file that hold the key its secure values were encrypted with. */
const KEY_SETTINGS = ["encryptionsalt", "encryptedkey"];

/** The project's name and its stacks' config folder, as its Pulumi.yaml gives them. */
export function projectOf(projectDir: string): { name: string; stackConfigDir: string } {
    const project = (parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8")) ?? {}) as { name?: unknown; stackConfigDir?: unknown };
    return {
        name: typeof project.name === "string" ? project.name : "",
        stackConfigDir: path.resolve(projectDir, typeof project.stackConfigDir === "string" ? project.stackConfigDir : "."),
    };
}

/** A stack's file in a folder; `stack` may be fully qualified (`org/project/name`). */
export function stackFilePath(dir: string, stack: string, ext = ".yaml"): string {
    return path.join(dir, `Pulumi.${stack.split("/").pop()!}${ext}`);
}

/** The fleet stack's file, read as written, from the project's stacks' config folder. */
export function readFleetStackFile(stackConfigDir: string, stack: string): StackFile {
    const file = [".yaml", ".yml"].map((ext) => stackFilePath(stackConfigDir, stack, ext)).find((f) => fs.existsSync(f));
    if (!file)
        throw new StackConfigError([
            `stack ${stack}: no ${path.basename(stackFilePath(stackConfigDir, stack))} in ${stackConfigDir}: fleet makes each rack's config from that file`,
        ]);
    const parsed: unknown = parse(fs.readFileSync(file, "utf8"));
    if (parsed !== null && (typeof parsed !== "object" || Array.isArray(parsed)))
        throw new StackConfigError([`${file}: a stack file is a mapping (config:, and its secrets settings)`]);
    return (parsed ?? {}) as StackFile;
}

function hasSecureValue(value: unknown): boolean {
    if (Array.isArray(value)) return value.some(hasSecureValue);
    if (value === null || typeof value !== "object") return false;
    const entries = Object.entries(value);
    if (entries.length === 1 && entries[0][0] === "secure") return true;
    return entries.some(([, v]) => hasSecureValue(v));
}

/** A key of ours as the file may write it: namespaced, or bare in a project named as our namespace. */
function keysOf(config: Record<string, unknown>, key: string, projectName: string): string[] {
    return Object.keys(config).filter((k) => k === `${NS}:${key}` || (projectName === NS && k === key));
}

/**
 * The member's stack file: the fleet's with `gpu-workers:hosts` cut to the member's own (in the
 * form the fleet's file gives them: a list, or JSON text), `gpu-workers:fleetMember` set, and
 * `allowNoHosts` where none is left. A rack's state then changes with its own hosts' config, not
 * every host's: the engine keeps the config in each stack's dynamic provider. Throws where the fleet's secure values are encrypted by a key
 * its file does not hold (a backend's own secrets manager): no other stack could decrypt them.
 */
export function memberStackFile(
    fleetFile: StackFile,
    member: Rack,
    fleet: Pick<FleetPlan, "stack" | "projectDir" | "webStack">,
    projectName: string,
): StackFile {
    const config = { ...(fleetFile.config ?? {}) };
    if (hasSecureValue(config) && !KEY_SETTINGS.some((s) => typeof fleetFile[s] === "string"))
        throw new StackConfigError([
            `stack ${fleet.stack}: its secrets are encrypted by its backend's own key, which its stack file does not hold; fleet gives each rack's stack the fleet's secrets as they are encrypted there, so it needs a key in the file (pulumi stack change-secrets-provider passphrase, or a cloud KMS key)`,
        ]);
    const hostKeys = keysOf(config, "hosts", projectName);
    const written = hostKeys.length > 0 ? config[hostKeys[0]] : undefined;
    const hosts = (typeof written === "string" ? (JSON.parse(written) as unknown) : written) ?? [];
    const list = Array.isArray(hosts) ? hosts : [];
    const racks = racksOf(list);
    const own = member.web ? [] : list.filter((_, i) => racks[i] === member.name);
    for (const key of [...hostKeys, ...keysOf(config, "fleetMember", projectName), ...keysOf(config, "allowNoHosts", projectName)]) delete config[key];
    const hasWeb = keysOf(config, "web", projectName).length > 0;
    const part = member.web ? { web: true } : { rack: member.name, ...(hasWeb ? { webStack: fleet.webStack } : {}) };
    config[`${NS}:hosts`] = typeof written === "string" ? JSON.stringify(own) : own;
    config[`${NS}:fleetMember`] = JSON.stringify({ ...part, fleet: fleet.stack, projectDir: fleet.projectDir });
    // The web's stack holds no host; a rack whose hosts have all gone (moved, or removed from the stack) is converged empty: its workers retire.
    if (own.length === 0) config[`${NS}:allowNoHosts`] = true;
    return { ...fleetFile, config };
}

/** Writes the member's stack file into its work folder, where it differs from what is there. */
export function writeMemberStackFile(workDir: string, stackName: string, file: StackFile): void {
    const target = stackFilePath(workDir, stackName);
    const text = stringify(file);
    if (!fs.existsSync(target) || fs.readFileSync(target, "utf8") !== text) fs.writeFileSync(target, text, { mode: 0o600 });
}
