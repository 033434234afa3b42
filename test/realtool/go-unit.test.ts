/**
 * The Go programs' own tests, run by mocha so `npm test` covers them: `go test ./...` in
 * wrapper/ (argument parsing, spec editing, dataset scanning) and in containerd-toml/ (the
 * TOML merge apply-containerd-config.sh runs on hosts).
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { REPO } from "./wrapper-support";

function goBinary(): string {
    const onPath = spawnSync("sh", ["-c", "command -v go"], { encoding: "utf8" }).stdout.trim();
    if (onPath) return onPath;
    if (fs.existsSync("/usr/local/go/bin/go")) return "/usr/local/go/bin/go";
    throw new Error("Go is not installed (no go on PATH nor /usr/local/go/bin/go): wrapper/ and containerd-toml/ need it to build and test");
}

for (const [folder, module] of [["wrapper", "gpu-workers/wrapper"], ["containerd-toml", "gpu-workers/containerd-toml"]]) {
    describe(`Go unit tests (go test ./... in ${folder}/)`, function () {
        this.timeout(300_000);

        it("pass", () => {
            const env: NodeJS.ProcessEnv = { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-count=1 -mod=readonly" };
            if (!env.HOME && !env.GOCACHE) env.GOCACHE = "/tmp/gpu-workers-go-cache";
            const r = spawnSync(goBinary(), ["test", "./..."], { cwd: path.join(REPO, folder), encoding: "utf8", env, timeout: 280_000 });
            assert.strictEqual(r.status, 0, `go test failed:\n${r.stdout}\n${r.stderr}`);
            assert.match(r.stdout, new RegExp(`^ok\\s+${module}`, "m"));
        });
    });
}
