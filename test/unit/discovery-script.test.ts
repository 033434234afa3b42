/**
 * host/discover-gpus.sh on its own: valid JSON whatever the tools print, nothing left
 * behind, nothing assumed on the host, and shellcheck-clean.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { parseDiscoveryDocument } from "../../components/lib/discovery/parse";
import { runDiscovery } from "../fixtures/discovery/run-fixture";
import { ensureCommands } from "../support/tools";

describe("discover-gpus.sh", () => {
    let work: string;
    beforeEach(() => {
        work = fs.mkdtempSync(path.join(os.tmpdir(), "discovery-script-"));
    });
    afterEach(() => {
        fs.rmSync(work, { recursive: true, force: true });
    });

    function writeTools(files: Record<string, string | Buffer>): string {
        const tools = path.join(work, "tools");
        fs.mkdirSync(tools, { recursive: true });
        for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(tools, name), content);
        return tools;
    }

    it("escapes quotes, backslashes, tabs, control characters and keeps non-ASCII text exactly", () => {
        const evil = 'NVIDIA "Evil" \\GPU\\ \ttab \x01\x1f ctrl \x7f del é 日本 \r';
        const query = `0, GPU-1, ${evil}, 1024, 00000000:01:00.0, 550.1, [N/A]\n2nd line\n`;
        const tools = writeTools({
            "nvidia-smi-query.txt": query,
            "nvidia-smi-L.txt": Buffer.concat([Buffer.from("GPU 0: bad byte "), Buffer.from([0xff, 0xfe]), Buffer.from(" (UUID: GPU-1)\n")]),
            "nvidia-smi.txt": "",
        });
        const root = path.join(work, "root");
        fs.mkdirSync(path.join(root, "proc", "device-tree"), { recursive: true });
        fs.writeFileSync(path.join(root, "proc", "device-tree", "model"), "Board\0");
        const run = runDiscovery(root, tools);
        assert.strictEqual(run.status, 0, run.stderr);
        const doc = JSON.parse(run.stdout); // throws on invalid JSON
        assert.strictEqual(doc.sources["nvidia-smi-query"], query.slice(0, -1), "raw text survives the round trip (the final newline is dropped)");
        assert.strictEqual(doc.sources["nvidia-smi-L"], "GPU 0: bad byte \ufffd\ufffd (UUID: GPU-1)", "invalid UTF-8 still gives valid JSON");
        assert.strictEqual(doc.sources["device-tree-model"], "Board", "NUL bytes are dropped");
        assert.strictEqual(doc.sources["nvidia-smi"], "");
        assert.strictEqual(parseDiscoveryDocument(doc).inventory.gpus[0].model, evil.trim());
        // Only printable ASCII and the raw UTF-8 of é and 日本 may appear unescaped.
        // eslint-disable-next-line no-control-regex -- control characters are what this looks for
        assert.ok(!/[\x00-\x1f]/.test(run.stdout.replace(/\n$/, "")), "no raw control character in the JSON text");
    });

    it("records a failing tool's exit status and everything it printed, stdout and stderr", () => {
        const tools = writeTools({ "nvidia-smi-query.txt": "partial row\n", "nvidia-smi-query.exit": "15\n", "nvidia-smi-L.txt": "", "nvidia-smi.txt": "" });
        const run = runDiscovery(path.join(work, "none"), tools);
        const doc = JSON.parse(run.stdout);
        assert.deepStrictEqual(doc.errors, { "nvidia-smi-query": { exit: 15, output: "partial row" } });
        assert.strictEqual(doc.sources["nvidia-smi-query"], undefined);
    });

    it("on a host with nothing (no tools, empty /proc, /sys, /dev) prints a document with no sources but dev-kfd", () => {
        const run = runDiscovery(path.join(work, "empty"), undefined);
        assert.strictEqual(run.status, 0, run.stderr);
        assert.deepStrictEqual(JSON.parse(run.stdout), { schema: "gpu-workers/discovery/v1", sources: { "dev-kfd": false }, errors: {} });
        assert.strictEqual(run.stderr, "");
    });

    it("leaves no temporary files behind", () => {
        const tools = writeTools({ "lspci.txt": "0000:00:00.0 Host bridge [0600]: Intel Corporation Device [8086:2020] (rev 07)\n" });
        const run = runDiscovery(path.join(work, "root"), tools);
        assert.strictEqual(run.status, 0, run.stderr);
        assert.deepStrictEqual(run.leftovers, []);
    });

    it("runs as `bash -s` with the script on stdin, the way the GpuHost step runs it", () => {
        const script = fs.readFileSync(path.join(PACKAGE_ROOT, "host", "discover-gpus.sh"));
        const out = execFileSync("bash", ["-s"], {
            input: script,
            env: { PATH: "/usr/bin:/bin", GPU_WORKERS_ROOT: path.join(work, "none") },
            encoding: "utf8",
        });
        assert.strictEqual(JSON.parse(out).schema, "gpu-workers/discovery/v1");
    });

    it("is shellcheck clean (style level)", () => {
        ensureCommands(["shellcheck"], ["shellcheck"]);
        execFileSync("shellcheck", ["-S", "style", path.join(PACKAGE_ROOT, "host", "discover-gpus.sh")], { stdio: "pipe" });
    });
});
