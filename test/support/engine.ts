/**
 * What end-to-end tests and benchmarks need to drive the real Pulumi engine: the engine on
 * PATH (built by bootstrap-engine.sh when none is installed), a private LXD daemon with the
 * Debian 12 image, and stacks of this program in a temp project with a file backend.
 */
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { LXD_SSHD_DROP_IN, renderSshdDropIn } from "../../components/lib/render/lxd-access";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { generateOpensshKeyPair } from "../../components/providers/keys/openssh";
import { makeScratch, scratchName } from "./scratch";
import { ensureCommands } from "./tools";

export const PASSPHRASE = "e2e-passphrase-not-in-state";

/** Puts the engine on PATH; returns the environment every pulumi call gets. */
export function ensureEngine(stateDir: string): Record<string, string> {
    const bin = execFileSync("bash", [path.join(PACKAGE_ROOT, "scripts", "bootstrap-engine.sh")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
        .trim()
        .split("\n")
        .pop()!;
    process.env.PATH = `${bin}:${process.env.PATH}`;
    fs.mkdirSync(stateDir, { recursive: true });
    return {
        PULUMI_BACKEND_URL: `file://${stateDir}`,
        PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_HOME: path.join(stateDir, ".pulumi-home"),
    };
}

export class TestLxd {
    readonly socket: string;
    constructor(readonly dir: string) {
        this.socket = path.join(dir, "unix.socket");
    }

    start(): void {
        ensureCommands(["lxd", "lxc", "debootstrap"], ["lxd", "lxd-client", "debootstrap"]);
        execFileSync("bash", [path.join(PACKAGE_ROOT, "scripts", "lxd-test-daemon.sh"), "start", this.dir], { stdio: ["ignore", "ignore", "inherit"] });
        execFileSync("bash", [path.join(PACKAGE_ROOT, "scripts", "lxd-build-image.sh"), "import", "debian-12"], {
            env: { ...process.env, LXD_DIR: this.dir },
            stdio: ["ignore", "ignore", "inherit"],
        });
    }

    stop(): void {
        spawnSync("bash", [path.join(PACKAGE_ROOT, "scripts", "lxd-test-daemon.sh"), "stop", this.dir], { stdio: "ignore" });
    }

    lxc(...args: string[]): string {
        return execFileSync("lxc", args, { env: { ...process.env, LXD_DIR: this.dir }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    }

    /**
     * A machine to reach over SSH, as bare metal would be: an instance made here with `lxc`,
     * our key authorized, a host key we know, sshd on 127.0.0.1:port through a proxy device.
     * Returns the stack's host entry (ssh transport) and the secret it names.
     */
    sshHost(
        instance: string,
        port: number,
        hostName: string,
        workDir: string,
        config: Record<string, string> = {},
    ): { host: Record<string, unknown>; secrets: Record<string, string> } {
        const sshd = ["sshd", "proxy", `listen=tcp:127.0.0.1:${port}`, "connect=tcp:127.0.0.1:22", "bind=host"];
        const machine = this.sshMachine(instance, hostName, workDir, config, [sshd]);
        return {
            host: { name: hostName, transport: { ssh: { host: "127.0.0.1", port, ...machine.ssh } }, vendor: "none" },
            secrets: machine.secrets,
        };
    }

    /**
     * A machine with sshd as sshHost makes it, with only the devices given (`[name, type,
     * key=value...]`, added before it starts): reached however they let it be. Returns the
     * transport's key fields (`privateKeySecret`, `hostKey`) and the secret it names.
     */
    sshMachine(
        instance: string,
        hostName: string,
        workDir: string,
        config: Record<string, string>,
        devices: string[][],
    ): { ssh: { privateKeySecret: string; hostKey: string }; secrets: Record<string, string> } {
        const userKey = generateOpensshKeyPair(hostName);
        const hostKey = generateOpensshKeyPair(`${hostName}-host`);
        this.lxc("init", "gpu-workers/debian-12", instance, ...Object.entries(config).flatMap(([k, v]) => ["-c", `${k}=${v}`]));
        const files = path.join(workDir, instance);
        fs.mkdirSync(files, { recursive: true });
        const push = (content: string, target: string, mode: string) => {
            const local = path.join(files, path.basename(target));
            fs.writeFileSync(local, content);
            this.lxc("file", "push", "--create-dirs", "--mode", mode, local, `${instance}${target}`);
        };
        push(userKey.publicKeyOpenssh + "\n", "/root/.ssh/authorized_keys", "0600");
        push(hostKey.privateKeyOpenssh, "/etc/ssh/ssh_host_ed25519_key", "0600");
        push(renderSshdDropIn(), LXD_SSHD_DROP_IN, "0644");
        for (const device of devices) this.lxc("config", "device", "add", instance, ...device);
        this.lxc("start", instance);
        execFileSync("sh", ["-c", `for i in $(seq 60); do lxc exec "$1" -- systemctl is-active --quiet ssh && exit 0; sleep 1; done; exit 1`, "sh", instance], {
            env: { ...process.env, LXD_DIR: this.dir },
            stdio: "ignore",
        });
        const secret = `${hostName}-ssh-key`;
        return {
            ssh: { privateKeySecret: secret, hostKey: hostKey.publicKeyOpenssh.split(" ").slice(0, 2).join(" ") },
            secrets: { [secret]: userKey.privateKeyOpenssh },
        };
    }

    /** Runs a shell command inside an instance; returns stdout. */
    exec(instance: string, script: string): string {
        return this.lxc("exec", instance, "--", "sh", "-c", script);
    }
}

/** A project folder whose program is the compiled index.js of this checkout (or of another built one). */
export function makeProject(dir: string, programRoot: string = PACKAGE_ROOT): string {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
        path.join(dir, "Pulumi.yaml"),
        [
            "name: gpu-workers",
            "runtime:",
            "  name: nodejs",
            "  options:",
            "    typescript: false",
            `main: ${path.join(programRoot, "dist", "index.js")}`,
            "",
        ].join("\n"),
    );
    const modules = path.join(dir, "node_modules");
    if (!fs.existsSync(modules)) fs.symlinkSync(path.join(PACKAGE_ROOT, "node_modules"), modules);
    return dir;
}

export interface StackConfig {
    defaults: unknown;
    hosts: unknown[];
    /** gpu-workers:web, when the stack has a web node. */
    web?: unknown;
    secrets?: Record<string, string>;
    /** gpu-workers:hostSteps. Default: builtin, which needs no plugin (command needs pulumi-resource-command on PATH). */
    hostSteps?: "command" | "builtin";
}

/** A stack of the program with this config (structured values are handed over as JSON). */
export async function makeStack(projectDir: string, name: string, env: Record<string, string>, config: StackConfig): Promise<Stack> {
    const stack = await LocalWorkspace.createOrSelectStack({ stackName: name, workDir: projectDir }, { envVars: env });
    await setStackConfig(stack, config);
    return stack;
}

export async function setStackConfig(stack: Stack, config: StackConfig): Promise<void> {
    if (config.web === undefined) await stack.removeConfig("gpu-workers:web").catch(() => undefined);
    await stack.setAllConfig({
        "gpu-workers:defaults": { value: JSON.stringify(config.defaults) },
        "gpu-workers:hosts": { value: JSON.stringify(config.hosts) },
        "gpu-workers:hostSteps": { value: config.hostSteps ?? "builtin" },
        ...(config.web === undefined ? {} : { "gpu-workers:web": { value: JSON.stringify(config.web) } }),
        ...Object.fromEntries(Object.entries(config.secrets ?? {}).map(([k, v]) => [`gpu-workers:${k}`, { value: v, secret: true }])),
    });
}

/**
 * A folder for a stack's dataset source: never under /tmp, where the stack refuses it (any
 * user could plant a folder there that every task then mounts). The caller removes it.
 */
export function datasetSourceDir(prefix: string): string {
    const parent = "/var/lib/gpu-workers-tests";
    fs.mkdirSync(parent, { recursive: true, mode: 0o755 });
    const dir = fs.mkdtempSync(path.join(parent, prefix));
    fs.chmodSync(dir, 0o755);
    return dir;
}

export function tempDir(prefix: string): string {
    return makeTempDir(tempDirName(prefix));
}

/** A fresh name for a temp folder, made by nothing yet (a describe body may name one; its before hook makes it). */
export const tempDirName = scratchName;

/** Makes the folder `dir` names; returns it. */
export function makeTempDir(dir: string): string {
    // Short: LXD's socket paths must stay under 108 bytes. Traversable: an unprivileged
    // container's root must reach the instance folders below it.
    return makeScratch(dir, 0o711);
}
