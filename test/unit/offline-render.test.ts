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
import { HOST_KEY } from "../fixtures/ssh-keys/keys";

const CLI = path.join(__dirname, "..", "..", "cli", "render.js");

/** The folders the cases render into, removed once they have run. */
const made: string[] = [];
function tempDir(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(dir);
    return dir;
}

function renderStackFile(config: unknown): { status: number | null; stdout: string; stderr: string; out: string } {
    const dir = tempDir("gw-render-");
    const raw = config as { defaults: unknown; hosts: unknown; allowNoHosts?: unknown; web?: unknown };
    const keys: Record<string, unknown> = { "gpu-workers:defaults": raw.defaults, "gpu-workers:hosts": raw.hosts };
    if (raw.allowNoHosts !== undefined) keys["gpu-workers:allowNoHosts"] = raw.allowNoHosts;
    if (raw.web !== undefined) keys["gpu-workers:web"] = raw.web;
    fs.writeFileSync(path.join(dir, "Pulumi.test.yaml"), stringify({ config: keys }));
    const out = path.join(dir, "out");
    const r = spawnSync("node", [CLI, "--stack", "test", "--out", out, "--project-dir", dir], { encoding: "utf8" });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, out };
}

describe("offline render", function () {
    after(() => {
        for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
    });
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
        for (const expected of [
            "hgx-host-discover",
            "hgx-host-inventory",
            "hgx-driver-gpu-driver",
            "hgx-fabric-manager-fabric-manager",
            "hgx-toolkit-cdi-spec",
            "hgx-containerd-containerd-runtime",
            "hgx-runc-wrapper-runc-wrapper",
            "hgx-concourse-concourse-worker",
        ]) {
            assert.ok(names.includes(expected), `${expected} in ${names.join(", ")}`);
        }
        // Steps are listed after everything they depend on.
        manifest.steps.forEach((step: { name: string; dependsOn: string[] }, i: number) => {
            for (const dep of step.dependsOn.filter((d) => !d.startsWith("file:")))
                assert.ok(names.indexOf(dep) >= 0 && names.indexOf(dep) < i, `${step.name} after ${dep}`);
        });
        const unit = fs.readFileSync(path.join(r.out, "hgx", "etc/systemd/system/concourse-worker.service"), "utf8");
        for (const tag of manifest.tags) assert.ok(unit.includes(`--tag=${tag}`), tag);
        const wrapperConfig = JSON.parse(fs.readFileSync(path.join(r.out, "hgx", "etc/gpu-workers/runc-wrapper.json"), "utf8"));
        assert.strictEqual(JSON.stringify(wrapperConfig).includes("nvidia.com/gpu=0,nvidia.com/gpu=1"), true, "the wrapper injects the GPUs the tags name");
        assert.ok(fs.existsSync(path.join(r.out, "cpu", "manifest.json")));
    });

    it("allocation {mode: exclusive} in defaults: the wrapper's allocation block and the capacity tags; a worker without GPUs gets neither", () => {
        const raw = stackWith({ name: "hgx", inventory: HGX_H100_8X, extra: { selection: [0, 1, 2, 3] } }, { name: "cpu", inventory: NO_GPU });
        (raw.defaults as Record<string, unknown>).allocation = { mode: "exclusive" };
        const r = renderStackFile(raw);
        assert.strictEqual(r.status, 0, r.stderr);
        const read = (host: string, file: string) => fs.readFileSync(path.join(r.out, host, file), "utf8");
        const config = JSON.parse(read("hgx", "etc/gpu-workers/runc-wrapper.json"));
        assert.strictEqual(config.allocation.mode, "exclusive");
        assert.strictEqual(config.allocation.replicas, 1);
        assert.deepStrictEqual(
            config.allocation.units.map((u: { visible: string }) => u.visible),
            ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=2", "nvidia.com/gpu=3"],
        );
        assert.deepStrictEqual(config.env, {});
        const manifest = JSON.parse(read("hgx", "manifest.json"));
        for (const tag of ["gpu-share=exclusive", "gpu-slots=4"]) {
            assert.ok(manifest.tags.includes(tag), tag);
            assert.ok(read("hgx", "etc/systemd/system/concourse-worker.service").includes(`--tag=${tag}`), tag);
        }
        assert.ok(!read("cpu", "etc/gpu-workers/runc-wrapper.json").includes("allocation"));
        assert.deepStrictEqual(JSON.parse(read("cpu", "manifest.json")).tags, []);
    });

    it("the example HGX stack: the board (domain, seed, vfio unit, partitions 1 and 2) and its two worker VMs", () => {
        const out = tempDir("gw-render-hgx-");
        const r = spawnSync("node", [CLI, "--project-dir", path.join(__dirname, "..", "..", "..", "examples", "stacks"), "--stack", "hgx", "--out", out], {
            encoding: "utf8",
        });
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, /^hgx-a: 6 files, 5 steps/m);
        assert.match(r.stdout, /fabric partition 1 \(modules 1, 2, 3, 4; 0000:0d:00\.0, 0000:0e:00\.0, 0000:0f:00\.0, 0000:10:00\.0\) -> hgx-a-w1/);
        assert.match(r.stdout, /fabric partition 2 \(modules 5, 6, 7, 8; 0000:11:00\.0, 0000:12:00\.0, 0000:13:00\.0, 0000:14:00\.0\) -> hgx-a-w2/);
        const board = JSON.parse(fs.readFileSync(path.join(out, "hgx-a", "manifest.json"), "utf8"));
        assert.deepStrictEqual(board.tags, [], "the board is no worker");
        assert.deepStrictEqual(
            board.partitions.map((p: { partition: number }) => p.partition),
            [1, 2],
        );
        assert.deepStrictEqual(
            board.steps.map((s: { name: string }) => s.name),
            [
                "hgx-a-host-discover",
                "hgx-a-host-inventory",
                "hgx-a-fabric-vm-nvswitch-vfio",
                "hgx-a-fabric-vm-nvswitch-vfio-at-boot",
                "hgx-a-fabric-vm-service-vm",
            ],
        );
        const domain = fs.readFileSync(path.join(out, "hgx-a", "etc/gpu-workers/fabric-vm/hgx-a-fabric/domain.xml"), "utf8");
        assert.strictEqual((domain.match(/managed="no"/g) ?? []).length, 5, "4 NVSwitch functions and the memory controller");
        for (const f of [
            "etc/gpu-workers/fabric-vm/hgx-a-fabric/seed/user-data",
            "etc/gpu-workers/fabric-vm/hgx-a-fabric/seed/meta-data",
            "etc/systemd/system/gpu-workers-nvswitch-vfio.service",
            "usr/local/lib/gpu-workers/nvswitch-vfio.sh",
            "usr/local/lib/gpu-workers/fabric-service-vm.sh",
        ]) {
            assert.ok(fs.existsSync(path.join(out, "hgx-a", f)), f);
        }
        for (const [worker, partition] of [
            ["hgx-a-w1", 1],
            ["hgx-a-w2", 2],
        ] as const) {
            const m = JSON.parse(fs.readFileSync(path.join(out, worker, "manifest.json"), "utf8"));
            assert.ok(m.tags.includes(`gpu-fabric-partition=${partition}`) && m.tags.includes("gpu-count=4"), m.tags.join(" "));
            assert.deepStrictEqual(m.steps[0].dependsOn, ["hgx-a-fabric-vm-service-vm"], `${worker}'s VM waits for the service VM`);
            assert.match(m.steps[0].run, /^LXD: create virtual-machine .* with the SSH keys in its cloud-init\.user-data/);
        }
    });

    it("shows secrets as [secret]", () => {
        const r = renderStackFile(stackWith({ name: "k", inventory: NO_GPU }));
        assert.strictEqual(r.status, 0, r.stderr);
        const manifest = JSON.parse(fs.readFileSync(path.join(r.out, "k", "manifest.json"), "utf8"));
        const key = manifest.files.find((f: { path: string }) => f.path === "/etc/concourse/worker_key");
        assert.deepStrictEqual({ sha256: key.sha256, secret: key.secret }, { sha256: "[secret]", secret: true });
        assert.strictEqual(fs.readFileSync(path.join(r.out, "k", "etc/concourse/worker_key"), "utf8"), "[secret]\n");
    });

    it("a binary uploaded from here is written once and linked at every host's path; a release not there yet is named, not read", () => {
        const raw = stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU });
        raw.defaults.concourse.binary = { path: "not-built-yet.tgz" } as never;
        const r = renderStackFile(raw);
        assert.strictEqual(r.status, 0, r.stderr);
        const wrapper = ["a", "b"].map((h) => fs.statSync(path.join(r.out, h, "usr/local/lib/gpu-workers/runc-wrapper")));
        assert.strictEqual(wrapper[0].ino, wrapper[1].ino, "one copy of the wrapper for both hosts");
        assert.strictEqual(wrapper[0].nlink, 2);
        const manifest = JSON.parse(fs.readFileSync(path.join(r.out, "a", "manifest.json"), "utf8"));
        const release = manifest.files.find((f: { path: string }) => f.path.endsWith("concourse.tgz"));
        assert.strictEqual(release.sha256, "[not on this machine yet]");
        assert.match(r.stdout, /note: \S+concourse\.tgz is uploaded from \S+not-built-yet\.tgz, which is not there yet/);
    });

    it("a bad stack config gives path-precise errors and a non-zero exit", () => {
        const raw = stackWith({ name: "a", inventory: { vendor: "nvidia", gpus: [{ index: -1, model: "X", memoryMiB: 1 }] } });
        const r = renderStackFile(raw);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /hosts\[0\]\.gpus\[0\]\.index: expected a non-negative integer/);
        assert.doesNotMatch(r.stderr, /at .*\.js:\d+/, "no stack trace");
    });

    it("says loudly when the web serves plain HTTP beyond loopback, in its output and manifest; not once it has a certificate", () => {
        const { defaults } = stackWith({ name: "a", inventory: NO_GPU });
        const ssh = { host: "10.0.0.5", privateKeySecret: "ci-key", hostKey: HOST_KEY };
        const plain = renderStackFile({ defaults, hosts: [], allowNoHosts: true, web: { name: "ci", transport: { ssh } } });
        assert.strictEqual(plain.status, 0, plain.stderr);
        assert.match(plain.stdout, /^ {2}WARNING: web ci serves plain HTTP on 0\.0\.0\.0 \(http:\/\/10\.0\.0\.5:8080\): the main team's password/m);
        assert.match(JSON.parse(fs.readFileSync(path.join(plain.out, "ci", "manifest.json"), "utf8")).warnings[0], /plain HTTP/);
        const tls = renderStackFile({
            defaults,
            hosts: [],
            allowNoHosts: true,
            web: { name: "ci", transport: { ssh }, tls: { certificateSecret: "ci-cert", keySecret: "ci-key" } },
        });
        assert.strictEqual(tls.status, 0, tls.stderr);
        assert.doesNotMatch(tls.stdout, /WARNING/);
        assert.match(fs.readFileSync(path.join(tls.out, "ci", "etc/concourse/web.env"), "utf8"), /^CONCOURSE_EXTERNAL_URL=https:\/\/10\.0\.0\.5:443$/m);
    });

    it("an empty hosts list is refused with a non-zero exit, unless gpu-workers:allowNoHosts is true", () => {
        const { defaults } = stackWith({ name: "a", inventory: NO_GPU });
        const refused = renderStackFile({ defaults, hosts: [] });
        assert.strictEqual(refused.status, 1);
        assert.match(
            refused.stderr,
            /hosts: the list is empty, so pulumi up would delete every worker this stack made\. To remove them all, run pulumi destroy/,
        );
        assert.strictEqual(refused.stdout, "");
        const allowed = renderStackFile({ defaults, hosts: [], allowNoHosts: true });
        assert.strictEqual(allowed.status, 0, allowed.stderr);
        assert.match(allowed.stdout, /no hosts \(gpu-workers:allowNoHosts is true\), nothing to render/);
    });

    it("refuses two components placing one path with different contents; identical contents are one file", () => {
        const group = (owner: string, content: string, mode = "0644") => ({ owner, files: [{ path: "/etc/gpu-workers/shared.conf", mode, content }] });
        const same = placeOnce("h", [group("ContainerToolkit", "a\n"), group("ContainerdRuntime", "a\n")]);
        assert.deepStrictEqual(
            same.placed.map((f) => [f.path, f.owner]),
            [["/etc/gpu-workers/shared.conf", "ContainerToolkit"]],
        );
        assert.deepStrictEqual(same.placedEarlier, [[], ["/etc/gpu-workers/shared.conf"]]);
        assert.throws(() => placeOnce("h", [group("ContainerToolkit", "a\n"), group("ContainerdRuntime", "b\n")]), {
            message: "host h: /etc/gpu-workers/shared.conf is placed by both ContainerToolkit and ContainerdRuntime with different contents",
        });
        assert.throws(() => placeOnce("h", [group("A", "a\n"), group("A", "b\n")]), {
            message: "host h: /etc/gpu-workers/shared.conf is placed twice by A with different contents",
        });
        assert.throws(() => placeOnce("h", [group("A", "a\n"), group("B", "a\n", "0600")]), /with different modes \(0644, 0600\)/);
    });

    it("refuses unknown arguments, naming them, with the usage", () => {
        const r = spawnSync("node", [CLI, "--stack"], { encoding: "utf8" });
        assert.strictEqual(r.status, 2);
        assert.match(r.stderr, /--stack needs a value/);
        const unknown = spawnSync("node", [CLI, "--stack", "s", "--out", "o", "--bogus"], { encoding: "utf8" });
        assert.strictEqual(unknown.status, 2);
        assert.match(unknown.stderr, /^render: unknown argument --bogus\nusage: npm run render/);
        const lone = spawnSync("node", [CLI, "--stack", "s", "--out", "o", "--expect-no-changes"], { encoding: "utf8" });
        assert.strictEqual(lone.status, 2);
        assert.match(lone.stderr, /--expect-no-changes goes with --against/);
    });

    it("--help prints the usage with every option, and exits 0", () => {
        for (const flag of ["--help", "-h"]) {
            const r = spawnSync("node", [CLI, flag], { encoding: "utf8" });
            assert.strictEqual(r.status, 0, r.stderr);
            assert.strictEqual(r.stderr, "");
            assert.match(r.stdout, /^usage: npm run render -- --stack NAME/);
            for (const option of ["--stack NAME", "--out DIR", "--project-dir DIR", "--against REV|DIR", "--expect-no-changes", "-h, --help"])
                assert.match(r.stdout, new RegExp(`^ {2}${option.replace(/[|]/g, "\\$&")} `, "m"), option);
        }
    });

    it("shows each host's computed tags on the console, as its manifest has them", () => {
        const r = renderStackFile(stackWith({ name: "hgx", inventory: HGX_H100_8X, extra: { selection: [0, 1] } }, { name: "cpu", inventory: NO_GPU }));
        assert.strictEqual(r.status, 0, r.stderr);
        const tags = JSON.parse(fs.readFileSync(path.join(r.out, "hgx", "manifest.json"), "utf8")).tags as string[];
        assert.ok(tags.includes("gpu-devices=0,1") && tags.includes("gpu-count=2"), tags.join(" "));
        assert.match(r.stdout, new RegExp(`^hgx: \\d+ files, \\d+ steps -> \\S+\\n  tags: ${tags.join(" ")}$`, "m"));
        assert.match(r.stdout, /^cpu: \d+ files, \d+ steps -> \S+\n {2}tags: none$/m);
    });

    it("a reused --out: the folder of a host the stack no longer has is removed; folders the render did not write are left, or stop it", () => {
        const dir = tempDir("gw-render-stale-");
        const out = path.join(dir, "out");
        const render = (config: unknown) => {
            const raw = config as { defaults: unknown; hosts: unknown };
            fs.writeFileSync(
                path.join(dir, "Pulumi.test.yaml"),
                stringify({ config: { "gpu-workers:defaults": raw.defaults, "gpu-workers:hosts": raw.hosts } }),
            );
            return spawnSync("node", [CLI, "--stack", "test", "--out", out, "--project-dir", dir], { encoding: "utf8" });
        };
        const first = render(stackWith({ name: "a", inventory: NO_GPU }, { name: "b", inventory: NO_GPU }));
        assert.strictEqual(first.status, 0, first.stderr);
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(out, ".gpu-workers-render.json"), "utf8")), { hosts: ["a", "b"] });
        // A user's own folder and file beside the render's.
        fs.mkdirSync(path.join(out, "notes"));
        fs.writeFileSync(path.join(out, "notes", "keep.txt"), "mine\n");
        fs.writeFileSync(path.join(out, "README"), "mine\n");

        const second = render(stackWith({ name: "a", inventory: NO_GPU }));
        assert.strictEqual(second.status, 0, second.stderr);
        assert.match(second.stdout, /^b: removed \S+\/out\/b \(an earlier render's; the stack has no such host now\)$/m);
        assert.ok(!fs.existsSync(path.join(out, "b")), "b's folder is gone");
        assert.ok(fs.existsSync(path.join(out, "a", "manifest.json")));
        assert.strictEqual(fs.readFileSync(path.join(out, "notes", "keep.txt"), "utf8"), "mine\n");
        assert.strictEqual(fs.readFileSync(path.join(out, "README"), "utf8"), "mine\n");
        assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(out, ".gpu-workers-render.json"), "utf8")), { hosts: ["a"] });

        // A host named as a folder the render never wrote: the render stops and the folder stays.
        const third = render(stackWith({ name: "a", inventory: NO_GPU }, { name: "notes", inventory: NO_GPU }));
        assert.strictEqual(third.status, 1);
        assert.match(third.stderr, /\/out\/notes is in the way: the render did not write it/);
        assert.strictEqual(fs.readFileSync(path.join(out, "notes", "keep.txt"), "utf8"), "mine\n");
        assert.ok(!fs.existsSync(path.join(out, "notes", "manifest.json")));
    });
});
