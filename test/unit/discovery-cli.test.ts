/**
 * `npm run discover` (dist/cli/discover.js) as a user runs it: from a saved document,
 * locally, and over ssh (a fake ssh on PATH records its arguments and runs the script here).
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { readStackFile } from "../../cli/render";
import { parseStack, parseStackConfig } from "../../stacks/checks/stack";
import { FIXTURES, makeBin, runFixture } from "../fixtures/discovery/run-fixture";
import { HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { stackWith } from "../fixtures/stacks/inventories";

const CLI = path.join(PACKAGE_ROOT, "dist", "cli", "discover.js");

describe("npm run discover", () => {
    let work: string;
    beforeEach(() => {
        work = fs.mkdtempSync(path.join(os.tmpdir(), "discover-cli-"));
    });
    afterEach(() => {
        fs.rmSync(work, { recursive: true, force: true });
    });

    function cli(args: string[], env: NodeJS.ProcessEnv = process.env, input?: string) {
        const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: "utf8", input });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }

    function saved(name: string): string {
        const file = path.join(work, `${name}.json`);
        fs.writeFileSync(file, runFixture(name).stdout);
        return file;
    }

    it("prints a block that, pasted under a host, passes the stack schema and equals the discovered inventory", () => {
        for (const name of ["hgx-h100-8x", "a100-80gb-mig", "amd-mi210", "jetson-agx-orin", "h100-no-driver-sysfs"]) {
            const file = saved(name);
            const r = cli(["--from", file]);
            assert.strictEqual(r.status, 0, r.stderr);
            const block = parseYaml(r.stdout);
            const hosts = parseStackConfig(stackWith({ name: "gpu-a", inventory: block }));
            const expected = parseDiscoveryDocument(fs.readFileSync(file, "utf8")).inventory;
            assert.deepStrictEqual(hosts[0].inventory, expected, name);
        }
    });

    it("prints the block indented as a host's keys are in Pulumi.<stack>.yaml: pasted under `- name:` there, the stack passes its checks", () => {
        for (const name of ["hgx-h100-8x", "mixed-vendors", "no-gpu"]) {
            const r = cli(["--from", saved(name)]);
            assert.strictEqual(r.status, 0, r.stderr);
            for (const line of r.stdout.split("\n").filter((l) => l !== "")) assert.match(line, /^ {6}/, `${name}: every line is indented 6 spaces: ${line}`);
            const dir = path.join(work, name);
            fs.mkdirSync(dir);
            const stack = [
                "config:",
                "  gpu-workers:defaults:",
                "    concourse:",
                "      tsaHost: ci.example.test",
                `      tsaPublicKey: ${TSA_KEY}`,
                "  gpu-workers:hosts:",
                "    - name: gpu-a",
                "      transport:",
                "        ssh:",
                "          host: 10.0.0.10",
                "          privateKeySecret: gpu-a-ssh-key",
                `          hostKey: ${HOST_KEY}`,
                r.stdout,
            ].join("\n");
            fs.writeFileSync(path.join(dir, "Pulumi.pasted.yaml"), stack);
            const hosts = parseStack(readStackFile(dir, "pasted")).hosts;
            assert.deepStrictEqual(hosts[0].inventory, parseDiscoveryDocument(fs.readFileSync(path.join(work, `${name}.json`), "utf8")).inventory, name);
        }
    });

    it("says on stderr, probe by probe, why it found no GPU; stdout stays the block (and --json the same JSON)", () => {
        const file = saved("no-gpu");
        const r = cli(["--from", file]);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, /^ {6}vendor: none$/m);
        const why = [
            `discover: no GPU found on ${file}; what each probe saw:`,
            "  - nvidia-smi: not on PATH (the NVIDIA driver's utilities are not installed, or not on this PATH)",
            "  - NVIDIA kernel driver: not loaded (no /proc/driver/nvidia/version)",
            "  - Jetson: no /etc/nv_tegra_release",
            "  - PCI (lspci -Dnn): no NVIDIA (10de) or AMD graphics (1002) function",
            "  - AMD KFD: no /sys/class/kfd topology (amdgpu's compute interface not loaded), no /dev/kfd",
            "  - /dev/dri: absent",
            "  - amd-smi: not on PATH; rocm-smi: not on PATH",
            "  - Intel: no /sys/class/drm card of an Intel display or 3D controller (vendor 0x8086, class 0300 or 0380)",
            "",
        ].join("\n");
        assert.strictEqual(r.stderr, why);
        const json = cli(["--from", file, "--json"]);
        assert.deepStrictEqual(JSON.parse(json.stdout), { vendor: "none", gpus: [], nvswitches: 0, tegra: false });
        assert.strictEqual(json.stderr, why);
        // A host with a GPU hears nothing of the kind.
        assert.doesNotMatch(cli(["--from", saved("hgx-h100-8x")]).stderr, /no GPU found/);
    });

    it("names what each probe saw when the tools are there but find nothing: a failed nvidia-smi, KFD with only CPU nodes, render nodes", () => {
        const doc = {
            schema: "gpu-workers/discovery/v1",
            sources: {
                "driver-version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05",
                "pci-devices": { "0000:00:02.0": ["0x8086", "0x46a6", "0x030000"] },
                "kfd-nodes": [{ node: "0", properties: "cpu_cores_count 8\nsimd_count 0\n", "mem-banks": [] }],
                "dev-kfd": true,
                "render-nodes": ["renderD128"],
                "rocm-smi": "",
            },
            errors: { "nvidia-smi-query": { exit: 9, output: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n" } },
        };
        const file = path.join(work, "nothing.json");
        fs.writeFileSync(file, JSON.stringify(doc));
        const r = cli(["--from", file]);
        assert.strictEqual(r.status, 0, r.stderr);
        for (const line of [
            "  - nvidia-smi: ran and failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            "  - NVIDIA kernel driver: loaded (/proc/driver/nvidia/version)",
            "  - PCI (/sys/bus/pci/devices): no NVIDIA (10de) or AMD graphics (1002) function",
            "  - AMD KFD: 1 topology node(s), none a GPU, /dev/kfd present",
            "  - /dev/dri: render node(s) renderD128 (not a GPU this project drives without KFD, a vendor tool or an Intel card in sysfs)",
            "  - amd-smi: not on PATH; rocm-smi: ran and listed no GPU",
        ])
            assert.ok(r.stderr.split("\n").includes(line), `stderr names: ${line}\n${r.stderr}`);
    });

    it("--json prints the same inventory block as one JSON document; warnings go to stderr", () => {
        for (const name of ["hgx-h100-8x", "amd-phoenix-780m", "h100-no-driver-sysfs"]) {
            const file = saved(name);
            const r = cli(["--from", file, "--json"]);
            assert.strictEqual(r.status, 0, r.stderr);
            const block = JSON.parse(r.stdout);
            assert.deepStrictEqual(block, parseDiscoveryDocument(fs.readFileSync(file, "utf8")).inventory, name);
            assert.deepStrictEqual(
                parseStackConfig(stackWith({ name: "gpu-a", inventory: block }))[0].inventory,
                block,
                `${name} passes the stack schema as it is`,
            );
        }
        assert.match(cli(["--from", saved("h100-no-driver-sysfs"), "--json"]).stderr, /^discover: warning: no NVIDIA driver loaded/m);
        assert.match(cli(["--from", saved("hgx-h100-8x"), "--json", "--raw"]).stderr, /give only one of --raw and --json/);
    });

    it("puts what discovery could not read in comments next to the values", () => {
        const r = cli(["--from", saved("h100-no-driver-sysfs")]);
        assert.match(r.stdout, /^ {6}# warning: no NVIDIA driver loaded: inventory from PCI only, memory unknown$/m);
        assert.match(r.stdout, /^ {10}memoryMiB: 0 # unknown without a working driver: fill in/m);
        assert.match(r.stdout, /^ {10}pciBusId: "0000:0d:00.0"$/m, "PCI addresses are quoted (YAML 1.1 reads 0000:14:00.0 as a number)");
    });

    it("shows the other vendor's block, commented out, on a mixed host; problems go to stderr too", () => {
        const mixed = cli(["--from", saved("mixed-vendors")]);
        assert.match(
            mixed.stdout,
            / {6}# This host also has AMD GPUs\. For a worker that uses them instead, replace the block above with:\n {6}# vendor: amd\n/,
        );
        const lost = cli(["--from", saved("gpu-fallen-off-bus")]);
        assert.strictEqual(lost.status, 0);
        assert.match(lost.stdout, /^ {6}# PROBLEM: GPU 1 at 0000:0b:00.0 is lost to the driver/m);
        assert.match(lost.stderr, /^discover: PROBLEM: GPU 1 at 0000:0b:00.0 is lost/m);
    });

    it("--raw prints the document, and --from reads it back (also from stdin)", () => {
        const file = saved("a100-80gb-mig");
        const raw = cli(["--from", file, "--raw"]);
        assert.strictEqual(raw.status, 0, raw.stderr);
        const direct = cli(["--from", file]).stdout;
        const viaStdin = cli(["--from", "-"], process.env, raw.stdout).stdout;
        assert.strictEqual(viaStdin.replace(/^ *# gpu-workers discover: .*$/m, ""), direct.replace(/^ *# gpu-workers discover: .*$/m, ""));
    });

    it("--local runs the script here", () => {
        const bin = makeBin(work, path.join(FIXTURES, "rtx-a500-laptop", "tools"));
        const r = cli(["--local"], { PATH: bin, GPU_WORKERS_ROOT: path.join(FIXTURES, "rtx-a500-laptop", "root") });
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(parseYaml(r.stdout).gpus[0].model, "NVIDIA RTX A500 Laptop GPU");
        assert.match(r.stdout, /^ {6}# gpu-workers discover: this machine$/m);
    });

    it("--ssh runs `bash -s` on the host with the script on stdin, passing port and identity", () => {
        const bin = makeBin(work, path.join(FIXTURES, "amd-mi210", "tools"));
        const log = path.join(work, "ssh-args");
        fs.writeFileSync(path.join(bin, "ssh"), `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\nexec bash -s\n`, { mode: 0o755 });
        const key = path.join(work, "id_ed25519");
        fs.writeFileSync(key, "not a real key\n");
        const r = cli(["--ssh", "ops@gpu-a", "--port", "2222", "--identity", key], { PATH: bin, GPU_WORKERS_ROOT: path.join(FIXTURES, "amd-mi210", "root") });
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(fs.readFileSync(log, "utf8").trim().split("\n"), ["-o", "BatchMode=yes", "-p", "2222", "-i", key, "--", "ops@gpu-a", "bash -s"]);
        assert.strictEqual(parseYaml(r.stdout).gpus[0].gfxTarget, "gfx90a");
    });

    it("reports an ssh failure with ssh's own words", () => {
        const bin = makeBin(work, undefined);
        fs.writeFileSync(path.join(bin, "ssh"), "#!/bin/sh\necho 'ssh: connect to host gpu-a port 22: Connection refused' >&2\nexit 255\n", { mode: 0o755 });
        const r = cli(["--ssh", "ops@gpu-a"], { PATH: bin });
        assert.strictEqual(r.status, 1);
        assert.strictEqual(
            r.stderr,
            "discover: ssh ops@gpu-a: the discovery script failed (exit 255): ssh: connect to host gpu-a port 22: Connection refused\n",
        );
    });

    it("exits 2 with a clear message on bad input", () => {
        const cases: [string[], RegExp][] = [
            [[], /^discover: say where to discover: --ssh, --local or --from\nusage:/],
            [["--local", "--from", "x.json"], /^discover: give only one of --ssh, --local and --from/],
            [["--ssh", "ops@gpu-a", "--port", "ssh"], /^discover: --port must be a port number \(1-65535\), got "ssh"/],
            [["--local", "--port", "22"], /^discover: --port and --identity go with --ssh/],
            [["--from"], /^discover: --from needs a value/],
            [["--from", path.join(os.tmpdir(), "no-such-discovery.json")], /^discover: --from .*no-such-discovery\.json: no such file/],
            [["--bogus"], /^discover: unknown argument "--bogus"/],
        ];
        for (const [args, message] of cases) {
            const r = cli(args);
            assert.strictEqual(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
            assert.match(r.stderr, message);
        }
        const notJson = path.join(work, "bad.json");
        fs.writeFileSync(notJson, "Permission denied (publickey).\n");
        const r = cli(["--from", notJson]);
        assert.strictEqual(r.status, 2);
        assert.match(r.stderr, /^discover: .*bad\.json: not JSON \(.*\); it starts with "Permission denied \(publickey\)\."/);
    });
});
