/**
 * Real Concourse for the tests: the release tarball assembled from the kit beside the repo
 * (scripts/concourse-release.sh), and fly from the same kit, logged in to a web as a target of its own.
 */
import { execFileSync, spawnSync, SpawnSyncReturns } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";

function dev(fn: string): string {
    return execFileSync("bash", ["-c", `. ${JSON.stringify(path.join(PACKAGE_ROOT, "scripts", "dev-env.sh"))} && ${fn}`], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
        timeout: 600_000,
    })
        .trim()
        .split("\n")
        .pop()!;
}

/** The release tarball in Concourse's layout (built once, cached by content). */
export function concourseRelease(): string {
    return execFileSync("bash", [path.join(PACKAGE_ROOT, "scripts", "concourse-release.sh")], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
        timeout: 600_000,
    }).trim();
}

export class Fly {
    readonly bin = dev("ensure_fly");
    /** fly keeps its targets in ~/.flyrc: a HOME of its own keeps the tests' apart from anyone's. */
    private readonly home = fs.mkdtempSync(path.join(os.tmpdir(), "gw-fly-"));

    constructor(readonly target: string) {}

    run(args: string[], timeoutMs = 180_000): SpawnSyncReturns<string> {
        return spawnSync(this.bin, ["-t", this.target, ...args], { encoding: "utf8", env: { ...process.env, HOME: this.home }, timeout: timeoutMs });
    }

    /** Runs fly and fails with its output unless it exits 0. */
    ok(args: string[], timeoutMs?: number): string {
        const r = this.run(args, timeoutMs);
        if (r.status !== 0) throw new Error(`fly ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
        return r.stdout;
    }

    /** Logs in as a user would type it; a failure names the user, never the password. */
    login(url: string, username: string, password: string): void {
        const r = this.run(["login", "-c", url, "-u", username, "-p", password]);
        if (r.status !== 0) throw new Error(`fly login -c ${url} -u ${username} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    }

    workers(): { name: string; state: string; tags: string[] | null; team: string }[] {
        return JSON.parse(this.ok(["workers", "--json"]));
    }

    cleanup(): void {
        fs.rmSync(this.home, { recursive: true, force: true });
    }
}
