/**
 * The Go programs' own tests, run by mocha so `npm test` covers them: `go test ./...` in
 * wrapper/ (argument parsing, spec editing, dataset scanning), in containerd-toml/ (the
 * TOML merge apply-containerd-config.sh runs on hosts) and in cdi-check/ (the CDI library's
 * verdict on the specs generate-cdi.sh writes). And where go's caches go when the
 * environment gives go no HOME: a private folder of the checkout, never a fixed /tmp path.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { makeScratch, scratchName } from "../support/scratch";
import { goBinary as goBinaryFor } from "../support/tools";
import { REPO } from "./wrapper-support";

const goBinary = () => goBinaryFor("wrapper/, containerd-toml/ and cdi-check/ need it to build and test");

/** The environment without HOME and the other places go would put its caches (a service's). */
function homeless(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of ["HOME", "XDG_CACHE_HOME", "GOCACHE", "GOPATH", "GOMODCACHE"]) delete env[key];
    return { ...env, ...extra };
}

const CACHES = path.join(REPO, "scripts", "go-caches.sh");
/** What go_private_caches makes of an environment: the variables it exports, or its refusal. */
function privateCaches(root: string, env: NodeJS.ProcessEnv) {
    return spawnSync("bash", ["-c", `. "$1" && go_private_caches "$2" && echo "GOCACHE=\${GOCACHE:-}" && echo "GOPATH=\${GOPATH:-}"`, "bash", CACHES, root], {
        encoding: "utf8",
        env,
    });
}

for (const [folder, module] of [
    ["wrapper", "gpu-workers/wrapper"],
    ["containerd-toml", "gpu-workers/containerd-toml"],
    ["cdi-check", "gpu-workers/cdi-check"],
]) {
    describe(`Go unit tests (go test ./... in ${folder}/)`, function () {
        this.timeout(300_000);

        it("pass", () => {
            // The same caches the build takes (scripts/go-caches.sh) where the environment has no HOME.
            const r = spawnSync("bash", ["-c", `. "$1" && go_private_caches "$2" && exec "$3" test ./...`, "bash", CACHES, REPO, goBinary()], {
                cwd: path.join(REPO, folder),
                encoding: "utf8",
                env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-count=1 -mod=readonly" },
                timeout: 280_000,
            });
            assert.strictEqual(r.status, 0, `go test failed:\n${r.stdout}\n${r.stderr}`);
            assert.match(r.stdout, new RegExp(`^ok\\s+${module}`, "m"));
        });
    });
}

describe("go's caches without HOME (scripts/go-caches.sh)", function () {
    this.timeout(300_000);
    const scratch = scratchName("gw-gocache-");
    before(() => makeScratch(scratch));
    after(() => fs.rmSync(scratch, { recursive: true, force: true }));

    it("go a folder of the checkout's .dev that only this user can enter; a HOME or GOCACHE given is left alone", () => {
        const root = path.join(scratch, "checkout");
        fs.mkdirSync(root);
        const r = privateCaches(root, homeless());
        assert.strictEqual(r.status, 0, r.stderr);
        const dir = path.join(root, ".dev", `go-${process.getuid!()}`);
        assert.deepStrictEqual(r.stdout.trim().split("\n"), [`GOCACHE=${dir}/build`, `GOPATH=${dir}/path`]);
        assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700);
        assert.deepStrictEqual(
            privateCaches(root, homeless({ HOME: "/home/someone" }))
                .stdout.trim()
                .split("\n"),
            ["GOCACHE=", "GOPATH="],
        );
        assert.deepStrictEqual(
            privateCaches(root, homeless({ GOCACHE: "/c" }))
                .stdout.trim()
                .split("\n"),
            ["GOCACHE=/c", `GOPATH=${dir}/path`],
        );
    });

    it("refuse a cache folder that another user made, or a link", () => {
        const root = path.join(scratch, "taken");
        const dir = path.join(root, ".dev", `go-${process.getuid!()}`);
        fs.mkdirSync(dir, { recursive: true });
        fs.chownSync(dir, 65534, 65534);
        const r = privateCaches(root, homeless());
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /\.dev\/go-\d+ is not a folder of this user/);
        fs.rmSync(dir, { recursive: true });
        fs.symlinkSync(scratch, dir);
        assert.notStrictEqual(privateCaches(root, homeless()).status, 0, "a link is refused too");
    });

    it("the builds use them: the wrapper and containerd-toml build without HOME, and no fixed /tmp cache appears", () => {
        const fixed = ["/tmp/gpu-workers-go-cache", "/tmp/gpu-workers-go-mod"];
        for (const f of fixed) fs.rmSync(f, { recursive: true, force: true });
        const output = path.join(scratch, "runc-wrapper");
        // A variant always builds (the plain output is skipped when up to date).
        const wrapper = spawnSync(
            "bash",
            [path.join(REPO, "scripts", "build-wrapper.sh"), "--output", output, "--config-path", path.join(scratch, "wrapper.json")],
            { encoding: "utf8", env: homeless(), timeout: 280_000 },
        );
        assert.strictEqual(wrapper.status, 0, wrapper.stderr);
        assert.ok(fs.existsSync(output));
        const toml = spawnSync("bash", [path.join(REPO, "scripts", "build-containerd-toml.sh"), "--output", path.join(scratch, "containerd-toml")], {
            encoding: "utf8",
            env: { ...homeless(), GOFLAGS: "-mod=mod" },
            timeout: 280_000,
        });
        assert.strictEqual(toml.status, 0, toml.stderr);
        for (const f of fixed) assert.ok(!fs.existsSync(f), `${f} is not used`);
        assert.ok(fs.existsSync(path.join(REPO, ".dev", `go-${process.getuid!()}`, "build")), "the checkout's private cache is");
    });
});
