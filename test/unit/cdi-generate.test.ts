/**
 * host/generate-cdi.sh with fake nvidia-ctk, amd-ctk and nvidia-smi on PATH: the fakes
 * record every call and write the captured specs in test/fixtures/discovery/cdi/. The specs
 * are judged by the real cdi-check (the CDI library; built by `npm run build`). Asserted:
 * the flags, regeneration only when the driver or GPU layout or the spec itself changed,
 * a spec the library refuses failing with every problem and leaving the spec in place, and
 * the message when a selected device is missing.
 */
import * as assert from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { CDI_CHECK_BUILD_OUTPUT } from "../../components/lib/links/container-toolkit/render";
import { cdiLibraryVerdict, specFromEnsureOutput } from "../../components/providers/checks/cdi-spec-check-ops";
import { ensureCommands } from "../support/tools";

const SCRIPT = path.join(PACKAGE_ROOT, "host", "generate-cdi.sh");
const CDI_FIXTURES = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery", "cdi");
const CDI_CORPUS = path.join(PACKAGE_ROOT, "test", "fixtures", "cdi-corpus");
const SYSTEM_TOOLS = [
    "bash",
    "sh",
    "sed",
    "grep",
    "head",
    "tr",
    "cut",
    "mktemp",
    "rm",
    "mkdir",
    "mv",
    "chmod",
    "cp",
    "sha256sum",
    "dirname",
    "basename",
    "cat",
    "uname",
    "awk",
    "rmdir",
];

const FAKE_NVIDIA_CTK = `#!/bin/sh
echo "nvidia-ctk $*" >> "$FAKE_LOG"
case "$1 $2" in
  "cdi generate")
    out=""; class=gpu
    for a in "$@"; do
      case "$a" in --output=*) out=\${a#--output=} ;; --class=*) class=\${a#--class=} ;; esac
    done
    if [ -n "\${FAKE_FAIL:-}" ]; then echo "ERRO[0000] failed to generate CDI spec: fake failure" >&2; exit 1; fi
    sed "s|^kind: nvidia.com/gpu$|kind: nvidia.com/$class|" "$FAKE_SPEC" > "$out"
    echo "INFO[0000] Generated CDI spec with version 0.5.0" >&2 ;;
  "cdi list")
    # What the CDI registry would list: kind=name of every device in the spec folder.
    for f in "$FAKE_CDI_DIR"/*.yaml; do
      [ -f "$f" ] || continue
      awk '/^kind: / { kind = $2 } /^  name: / { gsub(/"/, "", $2); names[n++] = $2 } END { for (i = 0; i < n; i++) print kind "=" names[i] }' "$f"
    done
    echo "INFO[0000] Found some CDI devices" >&2 ;;
  *) echo "fake nvidia-ctk: unexpected $*" >&2; exit 97 ;;
esac
`;

const FAKE_AMD_CTK = `#!/bin/sh
echo "amd-ctk $*" >> "$FAKE_LOG"
case "$1 $2" in
  "cdi generate") out=\${3#--output=}; cp "$FAKE_SPEC" "$out" ;;
  *) echo "fake amd-ctk: unexpected $*" >&2; exit 97 ;;
esac
`;

const FAKE_NVIDIA_SMI = `#!/bin/sh
case "$*" in
  "--query-gpu=driver_version --format=csv,noheader") cat "$FAKE_DRIVER" ;;
  "-L") cat "$FAKE_LIST" ;;
  *) echo "fake nvidia-smi: unexpected $*" >&2; exit 97 ;;
esac
`;

interface Run {
    status: number | null;
    stdout: string;
    stderr: string;
}

describe("generate-cdi.sh", () => {
    let work: string;
    let bin: string;
    let cdiDir: string;
    let state: string;
    let root: string;
    let log: string;
    let env: NodeJS.ProcessEnv;

    before(() => assert.ok(fs.existsSync(CDI_CHECK_BUILD_OUTPUT), `${CDI_CHECK_BUILD_OUTPUT} is missing: npm run build makes it`));
    beforeEach(() => {
        work = fs.mkdtempSync(path.join(os.tmpdir(), "generate-cdi-"));
        bin = path.join(work, "bin");
        cdiDir = path.join(work, "etc-cdi");
        state = path.join(work, "state");
        root = path.join(work, "root");
        log = path.join(work, "calls.log");
        fs.mkdirSync(bin);
        fs.mkdirSync(cdiDir);
        fs.mkdirSync(root);
        for (const tool of SYSTEM_TOOLS) {
            fs.symlinkSync(execFileSync("sh", ["-c", `command -v "$1"`, "sh", tool], { encoding: "utf8" }).trim(), path.join(bin, tool));
        }
        fs.writeFileSync(path.join(bin, "nvidia-ctk"), FAKE_NVIDIA_CTK, { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "amd-ctk"), FAKE_AMD_CTK, { mode: 0o755 });
        fs.writeFileSync(path.join(bin, "nvidia-smi"), FAKE_NVIDIA_SMI, { mode: 0o755 });
        fs.writeFileSync(path.join(work, "driver"), "550.127.05\n");
        fs.writeFileSync(path.join(work, "list"), "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-08b3c2e8-cb7b-ea3f-7711-a042c580b3e8)\n");
        fs.writeFileSync(log, "");
        env = {
            PATH: bin,
            GPU_WORKERS_STATE_DIR: state,
            GPU_WORKERS_ROOT: root,
            FAKE_LOG: log,
            FAKE_CDI_DIR: cdiDir,
            FAKE_SPEC: path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"),
            FAKE_DRIVER: path.join(work, "driver"),
            FAKE_LIST: path.join(work, "list"),
        };
    });
    afterEach(() => {
        fs.rmSync(work, { recursive: true, force: true });
    });

    const output = () => path.join(cdiDir, "nvidia.yaml");
    /** The script with ARGS; ensure and check get the built cdi-check unless ARGS name one. */
    function run(args: string[], extra: NodeJS.ProcessEnv = {}): Run {
        const checker = ["ensure", "check"].includes(args[0]) && !args.includes("--checker") ? ["--checker", CDI_CHECK_BUILD_OUTPUT] : [];
        const r = spawnSync(path.join(bin, "bash"), [SCRIPT, args[0], ...checker, ...args.slice(1)], { env: { ...env, ...extra }, encoding: "utf8" });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }
    const ensureNvidia = (ids: string[] = ["nvidia.com/gpu=0"], more: string[] = [], extra: NodeJS.ProcessEnv = {}) =>
        run(["ensure", "--vendor", "nvidia", "--output", output(), ...more, "--driver-pin", "550.127.05", "--", ...ids], extra);
    const calls = () =>
        fs
            .readFileSync(log, "utf8")
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((l) => l.replace(/--output=\S*\/cdi-new\.[A-Za-z0-9]+\//, "--output=<tmp>/"));
    const resetCalls = () => fs.writeFileSync(log, "");

    it("generates the spec with index names, installs it, records the driver, and checks the ids with `cdi list`", () => {
        const r = ensureNvidia();
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(calls(), ["nvidia-ctk cdi generate --output=<tmp>/nvidia.yaml --device-name-strategy=index", "nvidia-ctk cdi list"]);
        assert.strictEqual(fs.readFileSync(output(), "utf8"), fs.readFileSync(path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8"));
        assert.strictEqual((fs.statSync(output()).mode & 0o777).toString(8), "644");
        assert.match(
            fs.readFileSync(path.join(state, "cdi-nvidia.state"), "utf8"),
            /^output=.*nvidia\.yaml\nfingerprint=[0-9a-f]{64}\nspec=[0-9a-f]{64}\ndriver=550\.127\.05\n$/,
        );
        assert.match(r.stdout, /generating .*nvidia\.yaml: .*nvidia\.yaml is missing\n/);
        assert.match(r.stdout, /1 selected device\(s\) resolve: nvidia\.com\/gpu=0\n/);
        assert.ok(r.stdout.split("\n").includes(cdiLibraryVerdict(output())), "the CDI library's verdict");
        assert.strictEqual(specFromEnsureOutput(r.stdout), fs.readFileSync(output(), "utf8"), "the spec follows the marker, for the program to record");
        assert.deepStrictEqual(fs.readdirSync(state).sort(), ["cdi-nvidia.state", "placed"], "no temporary folder left");
        assert.deepStrictEqual(fs.readdirSync(path.join(state, "placed", output())), ["absent"], "the record that no spec was there before");
    });

    it("a spec the CDI library refuses fails the update naming every problem, and the spec in place stays", () => {
        assert.strictEqual(ensureNvidia().status, 0);
        const good = fs.readFileSync(output(), "utf8");
        const recorded = fs.readFileSync(path.join(state, "cdi-nvidia.state"), "utf8");
        fs.writeFileSync(path.join(work, "driver"), "550.144.03\n");
        const r = run(["ensure", "--vendor", "nvidia", "--output", output(), "--driver-pin", "550", "--", "nvidia.com/gpu=0"], {
            FAKE_SPEC: path.join(CDI_CORPUS, "refused-env.yaml"),
        });
        assert.strictEqual(r.status, 1);
        assert.strictEqual(
            r.stderr.replace(/^INFO.*\n/gm, ""),
            [
                `  ${output()}: containerEdits.env[0]: invalid environment variable "=x"`,
                `  ${output()}: containerEdits.env[2]: invalid environment variable "NOVALUE"`,
                `  ${output()}: devices[0].containerEdits.hooks[0]: invalid hook "createContainer": invalid environment variable "X"`,
                `generate-cdi: the spec nvidia-ctk wrote is one the CDI library refuses (problems above); ${output()} is left as it was`,
                "",
            ].join("\n"),
        );
        assert.strictEqual(fs.readFileSync(output(), "utf8"), good, "the spec in place stays");
        assert.strictEqual(fs.readFileSync(path.join(state, "cdi-nvidia.state"), "utf8"), recorded, "and so does its record");
        assert.deepStrictEqual(fs.readdirSync(state).sort(), ["cdi-nvidia.state", "placed"], "no temporary folder left");
    });

    it("a spec in place that the library refuses (one an earlier checker let through): check names its problems, ensure generates it again", () => {
        assert.strictEqual(ensureNvidia().status, 0);
        const refused = fs.readFileSync(path.join(CDI_CORPUS, "refused-duplicate-device.yaml"), "utf8");
        fs.writeFileSync(output(), refused);
        const sum = execFileSync("sha256sum", [output()], { encoding: "utf8" }).split(" ")[0];
        const stateFile = path.join(state, "cdi-nvidia.state");
        fs.writeFileSync(stateFile, fs.readFileSync(stateFile, "utf8").replace(/^spec=.*$/m, `spec=${sum}`));
        const check = () => run(["check", "--vendor", "nvidia", "--output", output(), "--driver-pin", "preinstalled", "--", "nvidia.com/gpu=0"]);
        const c = check();
        assert.deepStrictEqual(
            [c.status, c.stderr],
            [
                1,
                `  ${output()}: devices[1].name: invalid spec, multiple device "0" (also devices[0])\n` +
                    `generate-cdi: the CDI spec is stale: the CDI library refuses ${output()} (problems above)\n`,
            ],
        );
        assert.strictEqual(fs.readFileSync(output(), "utf8"), refused, "check changes nothing");
        const r = ensureNvidia();
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`generating .*nvidia\\.yaml: the CDI library refuses .*nvidia\\.yaml\n`));
        assert.strictEqual(fs.readFileSync(output(), "utf8"), fs.readFileSync(path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8"));
        assert.strictEqual(check().status, 0);
    });

    it("where the old TypeScript validator differed, the library decides: a relative hook path and any annotation key are accepted", () => {
        for (const spec of ["accepted-relative-hook-path.yaml", "accepted-annotation-key.yaml"]) {
            fs.rmSync(state, { recursive: true, force: true });
            const r = ensureNvidia([], [], { FAKE_SPEC: path.join(CDI_CORPUS, spec) });
            assert.strictEqual(r.status, 0, `${spec}: ${r.stderr}`);
            assert.ok(r.stdout.split("\n").includes(cdiLibraryVerdict(output())), spec);
        }
    });

    it("does not regenerate when nothing changed (idempotent), and regenerates when the driver changes", () => {
        assert.strictEqual(ensureNvidia().status, 0);
        const before = fs.statSync(output());
        resetCalls();
        const again = ensureNvidia();
        assert.strictEqual(again.status, 0, again.stderr);
        assert.deepStrictEqual(calls(), ["nvidia-ctk cdi list"]);
        assert.match(again.stdout, /nvidia\.yaml is current\n/);
        const after = fs.statSync(output());
        assert.deepStrictEqual([after.ino, after.mtimeMs], [before.ino, before.mtimeMs]);

        fs.writeFileSync(path.join(work, "driver"), "550.144.03\n");
        resetCalls();
        const upgraded = run(["ensure", "--vendor", "nvidia", "--output", output(), "--driver-pin", "550", "--", "nvidia.com/gpu=0"]);
        assert.strictEqual(upgraded.status, 0, upgraded.stderr);
        assert.match(upgraded.stdout, /the driver or GPU layout changed/);
        assert.strictEqual(calls()[0], "nvidia-ctk cdi generate --output=<tmp>/nvidia.yaml --device-name-strategy=index");
        assert.match(fs.readFileSync(path.join(state, "cdi-nvidia.state"), "utf8"), /driver=550\.144\.03/);
    });

    it("check changes nothing: passes while the spec is current, says why once the driver changed or it was edited", () => {
        const check = () => run(["check", "--vendor", "nvidia", "--output", output(), "--driver-pin", "preinstalled", "--", "nvidia.com/gpu=0"]);
        assert.match(check().stderr, /the CDI spec is stale: .*nvidia\.yaml is missing/);
        assert.strictEqual(ensureNvidia().status, 0);
        resetCalls();
        const current = check();
        assert.strictEqual(current.status, 0, current.stderr);
        assert.deepStrictEqual(calls(), ["nvidia-ctk cdi list"], "no generate");
        fs.writeFileSync(path.join(work, "driver"), "550.144.03\n");
        const upgraded = check();
        assert.notStrictEqual(upgraded.status, 0);
        assert.match(upgraded.stderr, /the CDI spec is stale: the driver or GPU layout changed/);
        assert.ok(!calls().some((c) => c.includes("generate")), "check never generates");
        fs.writeFileSync(path.join(work, "driver"), "550.127.05\n");
        fs.writeFileSync(output(), "edited by hand\n");
        assert.match(check().stderr, /was changed since it was generated/);
    });

    it("regenerates when the MIG layout changes, and when someone edited the spec", () => {
        assert.strictEqual(ensureNvidia().status, 0);
        fs.appendFileSync(path.join(work, "list"), "  MIG 3g.40gb     Device  0: (UUID: MIG-d771d938-b556-4f9d-b742-2dd26b864023)\n");
        resetCalls();
        assert.match(ensureNvidia().stdout, /the driver or GPU layout changed/);
        fs.writeFileSync(output(), "edited by hand\n");
        resetCalls();
        const r = ensureNvidia();
        assert.match(r.stdout, /was changed since it was generated/);
        assert.strictEqual(fs.readFileSync(output(), "utf8"), fs.readFileSync(path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8"));
    });

    it("fails naming every selected device that is not in the spec", () => {
        const r = ensureNvidia(["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=0:1"]);
        assert.strictEqual(r.status, 1);
        assert.strictEqual(
            r.stderr.split("\n").slice(-2)[0] + "\n",
            `generate-cdi: not in the CDI spec ${output()}: nvidia.com/gpu=1 nvidia.com/gpu=0:1 (runtimes can resolve: nvidia.com/gpu=0 nvidia.com/gpu=GPU-08b3c2e8-cb7b-ea3f-7711-a042c580b3e8 nvidia.com/gpu=all); the selection names GPUs or MIG devices this host does not have\n`,
        );
        const wrongVendor = ensureNvidia(["amd.com/gpu=0"]);
        assert.match(wrongVendor.stderr, /'amd\.com\/gpu=0' is not a nvidia CDI id \(expected nvidia\.com\/CLASS=NAME\)/);
    });

    it("Tegra: csv mode and the igpu class, so ids are nvidia.com/igpu=N", () => {
        const r = ensureNvidia(["nvidia.com/igpu=0"], ["--tegra"]);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(calls(), [
            "nvidia-ctk cdi generate --output=<tmp>/nvidia.yaml --device-name-strategy=index --mode=csv --class=igpu",
            "nvidia-ctk cdi list",
        ]);
    });

    it("refuses to generate for a driver other than the pinned one", () => {
        const r = run(["ensure", "--vendor", "nvidia", "--output", output(), "--driver-pin", "560.35.03", "--", "nvidia.com/gpu=0"]);
        assert.strictEqual(r.status, 1);
        assert.strictEqual(
            r.stderr,
            "generate-cdi: the loaded NVIDIA driver is 550.127.05 but 560.35.03 is pinned; a spec generated now would mount the wrong libraries (reboot after the driver update?)\n",
        );
        assert.deepStrictEqual(calls(), []);
    });

    it("leaves nothing behind when nvidia-ctk fails", () => {
        const r = ensureNvidia(["nvidia.com/gpu=0"], [], { FAKE_FAIL: "1" });
        assert.strictEqual(r.status, 1);
        assert.match(r.stderr, /ERRO\[0000\] failed to generate CDI spec: fake failure\ngenerate-cdi: nvidia-ctk cdi generate failed \(see above\)\n$/);
        assert.ok(!fs.existsSync(output()));
        assert.deepStrictEqual(fs.readdirSync(state), []);
    });

    it("AMD: amd-ctk generates amd.json; ids checked against the spec; new render nodes regenerate it", () => {
        const amdOut = path.join(cdiDir, "amd.json");
        fs.mkdirSync(path.join(root, "sys", "module", "amdgpu"), { recursive: true });
        fs.writeFileSync(path.join(root, "sys", "module", "amdgpu", "version"), "6.10.5\n");
        fs.mkdirSync(path.join(root, "dev", "dri"), { recursive: true });
        fs.writeFileSync(path.join(root, "dev", "kfd"), "");
        fs.writeFileSync(path.join(root, "dev", "dri", "renderD128"), "");
        const amdEnv = { FAKE_SPEC: path.join(CDI_FIXTURES, "amd-ctk-2gpu.json") };
        const ensureAmd = (ids: string[]) => run(["ensure", "--vendor", "amd", "--output", amdOut, "--driver-pin", "preinstalled", "--", ...ids], amdEnv);
        const first = ensureAmd(["amd.com/gpu=0", "amd.com/gpu=1"]);
        assert.strictEqual(first.status, 0, first.stderr);
        assert.deepStrictEqual(calls(), ["amd-ctk cdi generate --output=<tmp>/amd.json"]);
        resetCalls();
        assert.match(ensureAmd(["amd.com/gpu=0"]).stdout, /amd\.json is current/);
        assert.deepStrictEqual(calls(), []);
        fs.writeFileSync(path.join(root, "dev", "dri", "renderD136"), "");
        assert.match(ensureAmd(["amd.com/gpu=0"]).stdout, /the driver or GPU layout changed/);
        const missing = ensureAmd(["amd.com/gpu=2"]);
        assert.strictEqual(missing.status, 1);
        assert.strictEqual(
            missing.stderr,
            `generate-cdi: not in the CDI spec ${amdOut}: amd.com/gpu=2 (runtimes can resolve: amd.com/gpu=0 amd.com/gpu=1 amd.com/gpu=all); the selection names GPUs or MIG devices this host does not have\n`,
        );
    });

    it("a spec the host had is kept aside, and remove puts it back byte for byte", () => {
        const theirs = Buffer.from("# the host's own spec\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n\u00ff\n", "latin1");
        fs.writeFileSync(output(), theirs, { mode: 0o600 });
        fs.utimesSync(output(), new Date("2024-01-02T03:04:05Z"), new Date("2024-01-02T03:04:05Z"));
        const r = ensureNvidia();
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, /not generated by gpu-workers/);
        assert.strictEqual(fs.readFileSync(output(), "utf8"), fs.readFileSync(path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8"));
        // A second generation (the driver changed) keeps the first original, not our spec.
        fs.writeFileSync(path.join(work, "driver"), "550.144.03\n");
        assert.strictEqual(run(["ensure", "--vendor", "nvidia", "--output", output(), "--driver-pin", "550", "--", "nvidia.com/gpu=0"]).status, 0);
        const removed = run(["remove", "--vendor", "nvidia", "--output", output()]);
        assert.strictEqual(removed.status, 0, removed.stderr);
        assert.match(removed.stdout, /put back the original .*nvidia\.yaml/);
        assert.ok(fs.readFileSync(output()).equals(theirs), "the host's spec, byte for byte");
        assert.strictEqual((fs.statSync(output()).mode & 0o777).toString(8), "600");
        assert.strictEqual(fs.statSync(output()).mtime.toISOString(), "2024-01-02T03:04:05.000Z");
        assert.deepStrictEqual(fs.readdirSync(state), [], "every record is gone");
        assert.match(run(["remove", "--vendor", "nvidia", "--output", output()]).stdout, /was not generated by gpu-workers; left alone/);
        assert.ok(fs.readFileSync(output()).equals(theirs));
    });

    it("a run cut short after the spec was replaced keeps the host's spec, not ours", () => {
        const theirs = "# the host's own spec\n";
        fs.writeFileSync(output(), theirs);
        // The first run wrote its spec, and was lost before it recorded it (no state file).
        assert.strictEqual(ensureNvidia().status, 0);
        fs.rmSync(path.join(state, "cdi-nvidia.state"));
        assert.strictEqual(ensureNvidia().status, 0);
        assert.strictEqual(run(["remove", "--vendor", "nvidia", "--output", output()]).status, 0);
        assert.strictEqual(fs.readFileSync(output(), "utf8"), theirs);
    });

    it("remove deletes only a spec it generated", () => {
        assert.strictEqual(ensureNvidia().status, 0);
        const removed = run(["remove", "--vendor", "nvidia", "--output", output()]);
        assert.strictEqual(removed.status, 0, removed.stderr);
        assert.ok(!fs.existsSync(output()));
        assert.deepStrictEqual(fs.readdirSync(state), []);
        fs.writeFileSync(output(), "someone else's spec\n");
        const again = run(["remove", "--vendor", "nvidia", "--output", output()]);
        assert.strictEqual(again.status, 0);
        assert.match(again.stdout, /was not generated by gpu-workers; left alone/);
        assert.strictEqual(fs.readFileSync(output(), "utf8"), "someone else's spec\n");
    });

    it("rejects bad arguments clearly", () => {
        assert.match(run(["ensure", "--vendor", "intel", "--output", output()]).stderr, /--vendor must be nvidia or amd \(got 'intel'\)/);
        assert.match(
            run(["ensure", "--vendor", "nvidia", "--output", "nvidia.yaml"]).stderr,
            /--output must be an absolute path ending in \.yaml or \.json \(got 'nvidia\.yaml'\)/,
        );
        assert.match(run(["ensure", "--vendor", "nvidia", "--output", output(), "--bogus"]).stderr, /unknown argument: --bogus/);
        assert.match(run(["frobnicate"]).stderr, /usage: generate-cdi\.sh ensure\|check\|remove/);
        assert.match(
            run(["ensure", "--vendor", "nvidia", "--output", output(), "--checker", path.join(work, "none")]).stderr,
            /--checker must name the cdi-check executable the program uploads \(got '.*none'\)/,
        );
        fs.rmSync(path.join(bin, "nvidia-ctk"));
        assert.match(ensureNvidia().stderr, /nvidia-ctk is not installed \(the container toolkit step installs it\)/);
    });

    it("is shellcheck clean (style level)", () => {
        ensureCommands(["shellcheck"], ["shellcheck"]);
        execFileSync("shellcheck", ["-S", "style", SCRIPT], { stdio: "pipe" });
    });
});
