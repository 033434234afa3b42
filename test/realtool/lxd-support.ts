/**
 * Shared by the LXD real-tool tests: a private LXD daemon per test file (its own LXD_DIR, its
 * own log), images from scripts/lxd-build-image.sh, and the provider as Pulumi runs it
 * (serialized, then loaded back).
 */
import * as fs from "fs";
import * as net from "net";
import * as path from "path";
import { execFileSync, spawnSync } from "child_process";
import { ensureCommands } from "../support/tools";

/** An instance or profile as the daemon returns it: the fields the tests read. */
export interface DaemonRecord {
    name: string;
    status: string;
    config: Record<string, string>;
    devices: Record<string, Record<string, string>>;
}

export const REPO = path.resolve(__dirname, "../../..");
const SCRIPTS_DIR = path.join(REPO, "scripts");

/** Installs what every LXD real-tool test needs (Debian 12 package names). */
export function ensureLxdTools(extra: { commands: string[]; packages: string[] } = { commands: [], packages: [] }): void {
    ensureCommands(
        ["lxd", "lxc", "busybox", "debootstrap", "openssl", ...extra.commands],
        ["lxd", "lxd-client", "busybox-static", "debootstrap", "openssl", ...extra.packages],
    );
}

export class TestDaemon {
    readonly socket: string;
    private constructor(readonly dir: string) {
        this.socket = path.join(dir, "unix.socket");
    }

    /** Starts a daemon in a fresh short folder under /tmp (LXD's socket paths must stay short). */
    static start(): TestDaemon {
        const dir = fs.mkdtempSync("/tmp/gw-lxd-");
        const daemon = new TestDaemon(dir);
        try {
            execFileSync("bash", [path.join(SCRIPTS_DIR, "lxd-test-daemon.sh"), "start", dir], {
                encoding: "utf8",
                stdio: ["ignore", "pipe", "pipe"],
                timeout: 120_000,
            });
        } catch (e) {
            daemon.stop();
            throw new Error(`could not start a test LXD daemon in ${dir}: ${(e as { stderr?: string }).stderr ?? String(e)}`, { cause: e });
        }
        return daemon;
    }

    get env(): NodeJS.ProcessEnv {
        return { ...process.env, LXD_DIR: this.dir };
    }

    /** Runs lxc against this daemon; throws with lxc's stderr on failure. */
    lxc(...args: string[]): string {
        const r = spawnSync("lxc", args, { env: this.env, encoding: "utf8", timeout: 120_000 });
        if (r.status !== 0) throw new Error(`lxc ${args.join(" ")} failed (${r.status}): ${r.stderr.trim()}`);
        return r.stdout;
    }

    /** lxc with its exit status and output, for commands expected to fail. */
    lxcResult(...args: string[]): { status: number | null; stdout: string; stderr: string } {
        const r = spawnSync("lxc", args, { env: this.env, encoding: "utf8", timeout: 120_000 });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }

    /** GET through `lxc query`: what the daemon itself says, independent of our client. */
    query(apiPath: string): DaemonRecord {
        return JSON.parse(this.lxc("query", apiPath)) as DaemonRecord;
    }

    instanceExists(name: string): boolean {
        return this.lxcResult("query", `/1.0/instances/${name}`).status === 0;
    }

    /** Imports an image built (or cached) by scripts/lxd-build-image.sh; returns its fingerprint. */
    importImage(kind: "busybox" | "debian-12", timeoutMs = 900_000): string {
        const out = execFileSync("bash", [path.join(SCRIPTS_DIR, "lxd-build-image.sh"), "import", kind], {
            env: this.env,
            encoding: "utf8",
            stdio: ["ignore", "pipe", "pipe"],
            timeout: timeoutMs,
        });
        return out.trim().split("\n").pop()!;
    }

    /** Stops the daemon and removes its folder (only once nothing is mounted below it). */
    stop(): void {
        spawnSync("bash", [path.join(SCRIPTS_DIR, "lxd-test-daemon.sh"), "stop", this.dir], { stdio: "ignore", timeout: 180_000 });
        const mounted = fs
            .readFileSync("/proc/self/mounts", "utf8")
            .split("\n")
            .some((l) => (l.split(" ")[1] ?? "").startsWith(`${this.dir}/`));
        if (mounted) {
            console.error(`lxd test daemon: ${this.dir} still has mounts; left in place`);
            return;
        }
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

/** A TCP port nobody listens on right now, on loopback. */
export async function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once("error", reject);
        s.listen(0, "127.0.0.1", () => {
            const port = (s.address() as net.AddressInfo).port;
            s.close(() => resolve(port));
        });
    });
}

/** The host uid that root inside the instance maps to (from LXD's volatile.idmap.current). */
export function mappedRootUid(instance: DaemonRecord): number {
    const map: { Isuid: boolean; Hostid: number; Nsid: number; Maprange: number }[] = JSON.parse(instance.config["volatile.idmap.current"] ?? "[]");
    const entry = map.find((m) => m.Isuid && m.Nsid === 0);
    return entry ? entry.Hostid : 0;
}
