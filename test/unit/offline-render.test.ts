/** `npm run render`: the compiled CLI on a stack file, checked file by file. */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { stringify } from "yaml";
import { placeOnce } from "../../components/lib/plan/place-files";
import { HGX_H100_8X, NO_GPU, stackWith } from "../fixtures/stacks/inventories";

const CLI = path.join(__dirname, "..", "..", "cli", "render.js");

function renderStackFile(config: unknown): { status: number | null; stdout: string; stderr: string; out: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-render-"));
    const raw = config as { defaults: unknown; hosts: unknown; allowNoHosts?: unknown };
    const keys: Record<string, unknown> = { "gpu-workers:defaults": raw.defaults, "gpu-workers:hosts": raw.hosts };
    if (raw.allowNoHosts !== undefined) keys["gpu-workers:allowNoHosts"] = raw.allowNoHosts;
    fs.writeFileSync(path.join(dir, "Pulumi.test.yaml"), stringify({ config: keys }));
    const out = path.join(dir, "out");
    const r = spawnSync("node", [CLI, "--stack", "test", "--out", out, "--project-dir", dir], { encoding: "utf8" });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, out };
}

describe("offline render", function () {
    this.timeout(30000);

    it("writes every file at its host path, and a manifest with steps, files and tags", () => {
        const r = renderStackFile(stackWith({ name: "hgx", inventory: HGX_H100_8X, extra: { selection: [0, 1] } }, { name: "cpu", inventory: NO_GPU }));
        assert.strictEqual(r.status, 0, r.stderr);
        const manifest = JSON.parse(fs.readFileSync(path.join(r.out, "hgx", "manifest.json"), "utf8"));
        assert.ok(manifest.tags.includes("gpu-devices=0,1"));
        for (const file of manifest.files) {
            const onDisk = path.join(r.out, "hgx", file.path);
            assert.ok(fs.existsSync(onDisk), `${file.path} is written`);
            if (file.secret) continue;
            assert.strictEqual(crypto.createHash("sha256").update(fs.readFileSync(onDisk)).digest("hex"), file.sha256, file.path);
            assert.strictEqual((fs.statSync(onDisk).mode & 0o777).toString(8).padStart(4, "0"), file.mode, `${file.path} mode`);
        }
        const names = manifest.steps.map((s: { name: string }) => s.name);
        for (const expected of ["hgx-host-discover", "hgx-host-inventory", "hgx-driver-gpu-driver", "hgx-fabric-manager-fabric-manager", "hgx-toolkit-cdi-spec", "hgx-containerd-containerd-runtime", "hgx-runc-wrapper-runc-wrapper", "hgx-concourse-concourse-worker"]) {
            assert.ok(names.includes(expected), `${expected} in ${names.join(", ")}`);
        }
        // Steps are listed after everything they depend on.
        manifest.steps.forEach((step: { name: string; dependsOn: string[] }, i: number) => {
            for (const dep of step.dependsOn.filter((d) => !d.startsWith("file:"))) assert.ok(names.indexOf(dep) >= 0 && names.indexOf(dep) < i, `${step.name} after ${dep}`);
        });
        const unit = fs.readFileSync(path.join(r.out, "hgx", "etc/systemd/system/concourse-worker.service"), "utf8");
        for (const tag of manifest.tags) assert.ok(unit.includes(`--tag=${tag}`), tag);
        const wrapperConfig = JSON.parse(fs.readFileSync(path.join(r.out, "hgx", "etc/gpu-workers/runc-wrapper.json"), "utf8"));
        assert.strictEqual(JSON.stringify(wrapperConfig).includes("nvidia.com/gpu=0,nvidia.com/gpu=1"), true, "the wrapper injects the GPUs the tags name");
        assert.ok(fs.existsSync(path.join(r.out, "cpu", "manifest.json")));
    });

    it("shows secrets as [secret]", () => {
        const r = renderStackFile(stackWith({ name: "k", inventory: NO_GPU }));
        assert.strictEqual(r.status, 0, r.stderr);
        const manifest = JSON.parse(fs.readFileSync(path.join(r.out, "k", "manifest.json"), "utf8"));
        const key = manifest.files.find((f: { path: string }) => f.path === "/etc/concourse/worker_key");
        assert.deepStrictEqual({ sha256: key.sha256, secret: key.secret }, { sha256: "[secret]", secret: true });
        assert.strictEqual(fs.readFileSync(path.join(r.out, "k", "etc/concourse/worker_key"), "utf8"), "[secret]\n");
    });

    it("a bad stack config gives path-precise errors and a non-zero exit", () => {
        const raw = stackWith({ name: "a", inventory: { vendor: "nvidia", gpus: [{ index: -1, model: "X", memoryMiB: 1 }] } });
        const r = renderStackFile(raw);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /hosts\[0\]\.gpus\[0\]\.index: expected a non-negative integer/);
        assert.doesNotMatch(r.stderr, /at .*\.js:\d+/, "no stack trace");
    });

    it("an empty hosts list is refused with a non-zero exit, unless gpu-workers:allowNoHosts is true", () => {
        const { defaults } = stackWith({ name: "a", inventory: NO_GPU });
        const refused = renderStackFile({ defaults, hosts: [] });
        assert.strictEqual(refused.status, 1);
        assert.match(refused.stderr, /hosts: the list is empty, so pulumi up would delete every worker this stack made\. To remove them all, run pulumi destroy/);
        assert.strictEqual(refused.stdout, "");
        const allowed = renderStackFile({ defaults, hosts: [], allowNoHosts: true });
        assert.strictEqual(allowed.status, 0, allowed.stderr);
        assert.match(allowed.stdout, /no hosts \(gpu-workers:allowNoHosts is true\), nothing to render/);
    });

    it("refuses two components placing one path with different contents; identical contents are one file", () => {
        const group = (owner: string, content: string, mode = "0644") => ({ owner, files: [{ path: "/etc/gpu-workers/shared.conf", mode, content }] });
        const same = placeOnce("h", [group("ContainerToolkit", "a\n"), group("ContainerdRuntime", "a\n")]);
        assert.deepStrictEqual(same.placed.map((f) => [f.path, f.owner]), [["/etc/gpu-workers/shared.conf", "ContainerToolkit"]]);
        assert.deepStrictEqual(same.placedEarlier, [[], ["/etc/gpu-workers/shared.conf"]]);
        assert.throws(
            () => placeOnce("h", [group("ContainerToolkit", "a\n"), group("ContainerdRuntime", "b\n")]),
            { message: "host h: /etc/gpu-workers/shared.conf is placed by both ContainerToolkit and ContainerdRuntime with different contents" },
        );
        assert.throws(() => placeOnce("h", [group("A", "a\n"), group("A", "b\n")]), { message: "host h: /etc/gpu-workers/shared.conf is placed twice by A with different contents" });
        assert.throws(() => placeOnce("h", [group("A", "a\n"), group("B", "a\n", "0600")]), /with different modes \(0644, 0600\)/);
    });

    it("refuses unknown arguments", () => {
        const r = spawnSync("node", [CLI, "--stack"], { encoding: "utf8" });
        assert.strictEqual(r.status, 2);
        assert.match(r.stderr, /--stack needs a value/);
    });
});
