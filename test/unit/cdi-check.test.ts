/**
 * cdi-check, as built by `npm run build` (dist/cdi-check/cdi-check), on the corpus of
 * test/fixtures/cdi-corpus/ and on the specs the vendor tools wrote: which specs the CDI
 * library refuses and why, every problem on a line of its own naming the file and the field.
 * The corpus holds the specs where the project's earlier TypeScript validator disagreed with
 * the library (relative paths, annotation keys): the library accepts them, as runtimes do.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { CDI_CHECK_BUILD_OUTPUT } from "../../components/lib/links/container-toolkit/render";

const CORPUS = path.join(PACKAGE_ROOT, "test", "fixtures", "cdi-corpus");
const VENDOR_SPECS = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery", "cdi");
const specs = (dir: string) =>
    fs
        .readdirSync(dir)
        .filter((f) => /\.(yaml|json)$/.test(f))
        .sort();

function check(args: string[], cwd = CORPUS) {
    const r = spawnSync(CDI_CHECK_BUILD_OUTPUT, args, { cwd, encoding: "utf8" });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("cdi-check (the CDI library's verdict) on the spec corpus", () => {
    before(() => assert.ok(fs.existsSync(CDI_CHECK_BUILD_OUTPUT), `${CDI_CHECK_BUILD_OUTPUT} is missing: npm run build makes it`));

    it("prints every problem of every refused spec, and nothing for an accepted one (expected-problems.txt)", () => {
        const r = check(specs(CORPUS));
        assert.strictEqual(r.status, 1, r.stderr);
        assert.strictEqual(r.stdout, fs.readFileSync(path.join(CORPUS, "expected-problems.txt"), "utf8"));
        const refused = new Set(
            r.stdout
                .split("\n")
                .filter(Boolean)
                .map((l) => l.split(": ")[0]),
        );
        for (const f of specs(CORPUS)) assert.strictEqual(refused.has(f), f.startsWith("refused-"), f);
        assert.ok(specs(CORPUS).length + specs(VENDOR_SPECS).length >= 30, "a corpus of 30 specs or more");
    });

    it("each refused spec alone fails with exit 1; each accepted one passes silently", () => {
        for (const f of specs(CORPUS)) {
            const r = check([f]);
            assert.strictEqual(r.status, f.startsWith("refused-") ? 1 : 0, `${f}: ${r.stdout}${r.stderr}`);
            if (r.status === 0) assert.strictEqual(r.stdout, "", f);
            else for (const line of r.stdout.trim().split("\n")) assert.match(line, new RegExp(`^${f.replace(/\./g, "\\.")}: \\S`), f);
        }
    });

    it("the specs nvidia-ctk and amd-ctk write are accepted", () => {
        const r = check(specs(VENDOR_SPECS), VENDOR_SPECS);
        assert.deepStrictEqual([r.status, r.stdout, r.stderr], [0, "", ""]);
    });

    it("where the old TypeScript validator refused, the library accepts: relative device, hook and container paths, any annotation key", () => {
        const r = check([
            "accepted-relative-device-path.yaml",
            "accepted-relative-hook-path.yaml",
            "accepted-relative-container-path.yaml",
            "accepted-annotation-key.yaml",
        ]);
        assert.deepStrictEqual([r.status, r.stdout], [0, ""]);
    });

    it("names the spec as --as says (a spec judged before it is moved into place); bad use exits 2", () => {
        const r = check(["--as", "/etc/cdi/vendor.yaml", "refused-duplicate-device.yaml"]);
        assert.deepStrictEqual([r.status, r.stdout], [1, '/etc/cdi/vendor.yaml: devices[1].name: invalid spec, multiple device "0" (also devices[0])\n']);
        const bad = check([]);
        assert.strictEqual(bad.status, 2);
        assert.match(bad.stderr, /^cdi-check: usage: cdi-check \[--as NAME\] FILE/);
    });
});
