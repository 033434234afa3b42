/**
 * `npm run fly`'s fly (ensure_fly in scripts/dev-env.sh, with real bash and curl): kept while its
 * `fly --version` is the web's version (/api/v1/info), downloaded again from /api/v1/cli when it
 * is not. The web is a stand-in over HTTP on the loopback (a real Concourse web is in the e2e
 * suite, with a release), and so is fly: test/support/fly-stand-in.c, built per version, which
 * prints its version as fly does and records every call.
 */
import * as assert from "assert";
import { execFile, execFileSync } from "child_process";
import * as fs from "fs";
import * as http from "http";
import type { AddressInfo } from "net";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { makeScratch, scratchName } from "../support/scratch";
import { ensureCommands } from "../support/tools";

/** A Concourse web as fly.sh sees it: its version at /api/v1/info, a fly at /api/v1/cli; every request recorded. */
class StandInWeb {
    readonly requests: string[] = [];
    /** The version /api/v1/info answers, and the fly binary /api/v1/cli serves. */
    info: unknown = {};
    cli: Buffer = Buffer.alloc(0);
    private server?: http.Server;
    url = "";

    async start(): Promise<void> {
        this.server = http.createServer((req, res) => {
            this.requests.push(`${req.method} ${req.url}`);
            if (req.method === "GET" && req.url === "/api/v1/info") {
                res.writeHead(200, { "Content-Type": "application/json" });
                res.end(JSON.stringify(this.info));
            } else if (req.method === "GET" && req.url === "/api/v1/cli?arch=amd64&platform=linux") {
                res.writeHead(200, { "Content-Type": "application/octet-stream" });
                res.end(this.cli);
            } else {
                res.writeHead(404);
                res.end("not found\n");
            }
        });
        await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
        this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    }

    async stop(): Promise<void> {
        await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    }

    /** The requests since the last call. */
    take(): string[] {
        return this.requests.splice(0);
    }
}

const INFO = "GET /api/v1/info";
const CLI = "GET /api/v1/cli?arch=amd64&platform=linux";

describe("npm run fly: the kept fly is the web's version (ensure_fly, real bash and curl, a stand-in web and fly)", function () {
    this.timeout(60000);
    const scratch = scratchName("gw-fly-");
    const web = new StandInWeb();
    /** Where ensure_fly keeps fly, and the file every stand-in fly records its calls in. */
    const keep = path.join(scratch, "keep");
    const calls = path.join(scratch, "calls");
    const fly = path.join(keep, "fly");

    /** The stand-in fly of `version`, built. */
    const flyOf = (version: string): Buffer => {
        const out = path.join(scratch, `fly-${version}`);
        if (!fs.existsSync(out)) {
            execFileSync(
                "gcc",
                ["-O2", "-Wall", `-DVERSION="${version}"`, `-DRECORD="${calls}"`, "-o", out, path.join(PACKAGE_ROOT, "test", "support", "fly-stand-in.c")],
                { stdio: ["ignore", "ignore", "inherit"] },
            );
        }
        return fs.readFileSync(out);
    };

    /** Runs ensure_fly against the stand-in web (asynchronously: the web answers from this process). */
    const ensureFly = (): Promise<{ code: number; stdout: string; stderr: string }> =>
        new Promise((resolve) => {
            const script = `. "${path.join(PACKAGE_ROOT, "scripts", "dev-env.sh")}" && ensure_fly "$1" "$2"`;
            execFile("bash", ["-c", script, "bash", web.url, keep], { encoding: "utf8" }, (error, stdout, stderr) =>
                resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
            );
        });

    const version = () => execFileSync(fly, ["--version"], { encoding: "utf8" }).trim();

    before(async () => {
        ensureCommands(["curl", "gcc", "node"], ["curl", "gcc", "libc6-dev"]);
        makeScratch(scratch);
        await web.start();
    });

    after(async () => {
        await web.stop();
        fs.rmSync(scratch, { recursive: true, force: true });
    });

    it("with no fly kept, downloads the web's", async () => {
        web.info = { version: "8.2.5", worker_version: "2.5" };
        web.cli = flyOf("8.2.5");
        const r = await ensureFly();
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(r.stdout, `${fly}\n`);
        assert.deepStrictEqual(web.take(), [INFO, CLI]);
        assert.strictEqual(version(), "8.2.5");
        assert.strictEqual((fs.statSync(fly).mode & 0o777).toString(8), "755");
    });

    it("keeps a fly of the web's version: asks the web its version, downloads nothing, runs only fly --version", async () => {
        fs.writeFileSync(calls, "");
        const before = fs.statSync(fly).mtimeMs;
        const r = await ensureFly();
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(r.stdout, `${fly}\n`);
        assert.deepStrictEqual(web.take(), [INFO]);
        assert.strictEqual(fs.statSync(fly).mtimeMs, before, "the kept fly is not rewritten");
        assert.strictEqual(fs.readFileSync(calls, "utf8"), "--version\n");
    });

    it("downloads fly again once the web is of another release, and says why", async () => {
        web.info = { version: "8.3.0", worker_version: "2.5" };
        web.cli = flyOf("8.3.0");
        const r = await ensureFly();
        assert.strictEqual(r.code, 0, r.stderr);
        assert.strictEqual(r.stdout, `${fly}\n`);
        assert.deepStrictEqual(web.take(), [INFO, CLI]);
        assert.strictEqual(version(), "8.3.0");
        assert.match(r.stderr, new RegExp(`the kept ${fly} is fly 8\\.2\\.5, the web is 8\\.3\\.0: downloading fly again`));
        assert.ok(!fs.existsSync(`${fly}.part`));
    });

    it("downloads fly again when the kept one does not run", async () => {
        fs.writeFileSync(fly, "#!/bin/sh\nexit 3\n");
        const r = await ensureFly();
        assert.strictEqual(r.code, 0, r.stderr);
        assert.deepStrictEqual(web.take(), [INFO, CLI]);
        assert.strictEqual(version(), "8.3.0");
        assert.match(r.stderr, /is a fly whose --version fails, the web is 8\.3\.0/);
    });

    it("refuses a download of another version than the web's, and keeps the fly it had", async () => {
        web.info = { version: "8.4.0" };
        web.cli = flyOf("8.3.1");
        const r = await ensureFly();
        assert.notStrictEqual(r.code, 0);
        assert.strictEqual(r.stdout, "");
        assert.match(r.stderr, new RegExp(`${web.url}/api/v1/cli gave fly 8\\.3\\.1, but the web is 8\\.4\\.0`));
        assert.deepStrictEqual(web.take(), [INFO, CLI]);
        assert.strictEqual(version(), "8.3.0");
        assert.ok(!fs.existsSync(`${fly}.part`));
    });

    it("fails, naming the URL, when the web says no version", async () => {
        web.info = { worker_version: "2.5" };
        const r = await ensureFly();
        assert.notStrictEqual(r.code, 0);
        assert.strictEqual(r.stdout, "");
        assert.match(r.stderr, new RegExp(`${web.url}/api/v1/info: no version in its answer`));
        assert.deepStrictEqual(web.take(), [INFO]);
    });

    it("fails, naming the URL, when the web does not answer", async () => {
        const url = web.url;
        await web.stop();
        const r = await ensureFly();
        assert.notStrictEqual(r.code, 0);
        assert.match(r.stderr, new RegExp(`could not read the web's version from ${url}/api/v1/info`));
    });
});
