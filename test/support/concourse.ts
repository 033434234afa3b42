/**
 * Real Concourse for the tests: the official release, supplied (scripts/concourse-release.sh:
 * GPU_WORKERS_CONCOURSE_RELEASE), and fly as a web serves it (`/api/v1/cli`), logged in to that
 * web as a target of its own. Without a release, the tests that need one are pending (supplied.ts).
 */
import { spawn, spawnSync, SpawnSyncReturns } from "child_process";
import * as fs from "fs";
import * as http from "http";
import * as https from "https";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

/** A release tarball in Concourse's own layout, and its version. */
export interface ConcourseRelease {
    tarball: string;
    version: string;
}

/** concourse-release.sh's status when no release is supplied. */
const NOT_SUPPLIED = 3;

let found: { release?: ConcourseRelease } | undefined;

/**
 * The supplied release (once per process), or undefined when none is; a release that is supplied
 * but unusable throws, naming why.
 */
export function suppliedRelease(): ConcourseRelease | undefined {
    if (found) return found.release;
    const r = spawnSync("bash", [path.join(PACKAGE_ROOT, "scripts", "concourse-release.sh")], { encoding: "utf8", timeout: 600_000 });
    if (r.status === NOT_SUPPLIED) {
        found = {};
        return undefined;
    }
    if (r.status !== 0) throw new Error(`scripts/concourse-release.sh exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
    const [tarball, version] = r.stdout.trim().split("\n");
    found = { release: { tarball, version } };
    return found.release;
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

/** A TSA key for workers that never reach a web (the e2e stacks without one). */
export const PLACEHOLDER_TSA_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGUyZS10ZXN0LXRzYS1rZXktcGxhY2Vob2xkZXIxMjM0";

/**
 * The `concourse` defaults of an e2e stack's workers: the supplied release where there is one
 * (without, each chain ends at its validator), MTU 1500 (LXD's own, which the worker can set).
 */
export function e2eConcourseDefaults(extra: Record<string, unknown> = {}): Record<string, unknown> {
    const release = suppliedRelease();
    return { ...(release ? { version: release.version, binary: { path: release.tarball } } : {}), networkMtu: 1500, ...extra };
}

/** GETs `url`, trusting `ca` where given; the body, or an error naming the status. */
function download(url: string, ca?: string): Promise<Buffer> {
    return new Promise((resolve, reject) => {
        const get = url.startsWith("https:") ? https.get : http.get;
        const request = get(url, ca ? { ca } : {}, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${url}: ${res.statusCode}`))));
        });
        request.on("error", reject);
        request.setTimeout(60_000, () => request.destroy(new Error(`GET ${url}: no answer in 60 s`)));
    });
}

export class Fly {
    /** fly keeps its targets in ~/.flyrc: a HOME of its own keeps the tests' apart from anyone's. */
    private readonly home = fs.mkdtempSync(path.join(os.tmpdir(), "gw-fly-"));

    private constructor(
        readonly target: string,
        readonly bin: string,
    ) {}

    /** fly for linux/amd64 as the web at `url` serves it (what `fly sync` downloads), into a folder of its own. */
    static async fromWeb(target: string, url: string, ca?: string): Promise<Fly> {
        // The web unpacks fly from its fly-assets tarball and sends the program itself.
        const program = await download(`${url}/api/v1/cli?arch=amd64&platform=linux`, ca);
        if (!program.subarray(0, 4).equals(ELF_MAGIC)) throw new Error(`${url}/api/v1/cli gave no Linux program (${program.length} bytes)`);
        const bin = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gw-fly-bin-")), "fly");
        fs.writeFileSync(bin, program, { mode: 0o755 });
        return new Fly(target, bin);
    }

    run(args: string[], timeoutMs = 180_000): SpawnSyncReturns<string> {
        return spawnSync(this.bin, ["-t", this.target, ...args], { encoding: "utf8", env: { ...process.env, HOME: this.home }, timeout: timeoutMs });
    }

    /** Runs fly in the background: `output()` is what it printed so far (stdout and stderr), `done` its exit. */
    start(args: string[]): { output: () => string; done: Promise<{ status: number | null; output: string }> } {
        const child = spawn(this.bin, ["-t", this.target, ...args], { env: { ...process.env, HOME: this.home }, stdio: ["ignore", "pipe", "pipe"] });
        let text = "";
        child.stdout.on("data", (b: Buffer) => (text += b.toString()));
        child.stderr.on("data", (b: Buffer) => (text += b.toString()));
        const done = new Promise<{ status: number | null; output: string }>((resolve) => child.on("close", (status) => resolve({ status, output: text })));
        return { output: () => text, done };
    }

    /** Runs fly and fails with its output unless it exits 0. */
    ok(args: string[], timeoutMs?: number): string {
        const r = this.run(args, timeoutMs);
        if (r.status !== 0) throw new Error(`fly ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
        return r.stdout;
    }

    /** Logs in as a user would type it; a failure names the user, never the password. */
    login(url: string, username: string, password: string): void {
        // One argument: a password of an earlier release may begin with "-", which fly reads after -p as an option.
        const r = this.run(["login", "-c", url, "-u", username, `--password=${password}`]);
        if (r.status !== 0) throw new Error(`fly login -c ${url} -u ${username} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    }

    workers(): { name: string; state: string; tags: string[] | null; team: string }[] {
        return JSON.parse(this.ok(["workers", "--json"]));
    }

    cleanup(): void {
        fs.rmSync(this.home, { recursive: true, force: true });
        fs.rmSync(path.dirname(this.bin), { recursive: true, force: true });
    }
}

/** fly logged in to a web: fly from the web itself, then `fly login` with the stack's user. */
export async function flyFor(target: string, web: { url: string; username: string; password: string }, ca?: string): Promise<Fly> {
    const fly = await Fly.fromWeb(target, web.url, ca);
    fly.login(web.url, web.username, web.password);
    return fly;
}
