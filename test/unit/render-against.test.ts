/**
 * `npm run render -- --against`: the compiled CLI comparing a stack's render with an earlier
 * render folder, and with a git revision (a temporary repository holding this checkout's
 * program, whose REV the CLI builds and renders as it was).
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { stringify } from "yaml";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { HGX_H100_8X, NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { makeScratch, scratchName } from "../support/scratch";

const CLI = path.join(PACKAGE_ROOT, "dist", "cli", "render.js");

function writeStack(dir: string, config: unknown): void {
    const raw = config as { defaults: unknown; hosts: unknown };
    fs.writeFileSync(path.join(dir, "Pulumi.test.yaml"), stringify({ config: { "gpu-workers:defaults": raw.defaults, "gpu-workers:hosts": raw.hosts } }));
}

function render(dir: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
    const stack = args.includes("--stack") ? [] : ["--stack", "test"];
    const r = spawnSync("node", [CLI, ...stack, "--project-dir", dir, ...args], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Two GPU hosts and one without; `suffixes` the datasets' writable suffixes, given where set. */
function fleet(suffixes?: string[], hosts = ["hgx", "hgx2", "cpu"]) {
    const raw = stackWith(
        ...hosts.map((name) => (name === "cpu" ? { name, inventory: NO_GPU } : { name, inventory: HGX_H100_8X, extra: { selection: [0, 1] } })),
    );
    if (suffixes) (raw.defaults as Record<string, unknown>).datasets = { writableSuffixes: suffixes };
    return raw;
}

/** The lines of the report's diff for one file (its headers and hunks), up to the next file's headers. */
function fileDiff(report: string, header: string): string {
    const lines = report.split("\n");
    const start = lines.indexOf(header);
    assert.ok(start >= 0, `${header} in:\n${report}`);
    let end = start + 2;
    while (end < lines.length && !lines[end].startsWith("--- ") && !/^[a-z0-9][a-z0-9-]*: /.test(lines[end])) end++;
    return lines.slice(start, end).join("\n");
}

describe("render --against", function () {
    this.timeout(120000);
    const work = scratchName("gw-against-test-");
    before(() => makeScratch(work));
    after(() => fs.rmSync(work, { recursive: true, force: true }));

    it("a folder of an earlier render: a changed dataset setting is a diff of the runc wrapper's settings file; --expect-no-changes exits 1 on it, 0 when nothing changed", () => {
        const dir = path.join(work, "folder");
        fs.mkdirSync(dir);
        writeStack(dir, fleet());
        const earlier = path.join(dir, "earlier");
        assert.strictEqual(render(dir, "--out", earlier).status, 0);

        const same = render(dir, "--against", earlier, "--expect-no-changes");
        assert.strictEqual(same.status, 0, same.stdout + same.stderr);
        assert.strictEqual(
            same.stdout,
            `render of stack test: a/ is ${earlier}, b/ is this checkout\nhgx: no changes\nhgx2: no changes\ncpu: no changes\nno changes (3 hosts)\n`,
        );

        writeStack(dir, fleet(["_writable", "_scratch"]));
        const changed = render(dir, "--against", earlier, "--expect-no-changes");
        assert.strictEqual(changed.status, 1, changed.stderr);
        const report = changed.stdout;
        assert.match(report, /^hgx: 1 file changed; 1 step changed$/m);
        assert.match(report, /^cpu: 1 file changed; 1 step changed$/m);
        assert.match(report, /^3 hosts: 3 changed, 0 new, 0 removed, 0 unchanged$/m);
        assert.strictEqual(
            fileDiff(report, "--- a/hgx/etc/gpu-workers/runc-wrapper.json"),
            [
                "--- a/hgx/etc/gpu-workers/runc-wrapper.json",
                "+++ b/hgx/etc/gpu-workers/runc-wrapper.json",
                "@@ -3,7 +3,7 @@",
                '   "datasetRoot": "/srv",',
                '   "writableSuffixes": [',
                '     "_writable",',
                '-    "_rw"',
                '+    "_scratch"',
                "   ],",
                '   "env": {',
                '     "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",',
            ].join("\n"),
        );
        // The validator's step takes the suffixes as options, one a line in the diff.
        assert.match(
            fileDiff(report, "--- a/hgx/[steps]/hgx-validate-validate"),
            /^ {5}--writable-suffix _writable\n- {4}--writable-suffix _rw\n\+ {4}--writable-suffix _scratch$/m,
        );
        // The second GPU host's file changed as the first's: named, not shown again.
        assert.match(report, /^hgx2: the same change as on hgx:\n {2}\/etc\/gpu-workers\/runc-wrapper\.json\n {2}\[steps\]\/hgx2-validate-validate$/m);
        assert.ok(!report.includes("--- a/hgx2/etc/gpu-workers/runc-wrapper.json") && !report.includes("--- a/hgx2/[steps]/"));
        assert.match(report, /^--- a\/cpu\/etc\/gpu-workers\/runc-wrapper\.json$/m);
        // Without --expect-no-changes the same report, and exit 0.
        const plain = render(dir, "--against", earlier);
        assert.strictEqual(plain.status, 0, plain.stderr);
        assert.strictEqual(plain.stdout, report);
    });

    it("a host added and one removed, tags that change: what differs from the other hosts shown, what is the same named", () => {
        const dir = path.join(work, "hosts");
        fs.mkdirSync(dir);
        writeStack(dir, fleet(undefined, ["hgx", "cpu"]));
        const earlier = path.join(dir, "earlier");
        assert.strictEqual(render(dir, "--out", earlier).status, 0);
        const raw = fleet(undefined, ["hgx", "new"]);
        (raw.hosts[0] as Record<string, unknown>).selection = [0, 1, 2, 3];
        writeStack(dir, raw);
        const r = render(dir, "--against", earlier, "--expect-no-changes");
        assert.strictEqual(r.status, 1, r.stderr);
        const report = r.stdout;
        assert.match(
            report,
            /^hgx: 3 files changed; 2 steps changed; tags \+gpu-count=4 \+gpu-devices=0,1,2,3 \+gpu-count-min=4 -gpu-count=2 -gpu-devices=0,1$/m,
        );
        assert.match(report, /^new: new host, 32 files, 14 steps; tags gpu gpu-type=nvidia gpu-count=2 gpu-devices=0,1 /m);
        assert.match(report, /^cpu: removed \(it had 16 files, 8 steps\)$/m);
        assert.match(report, /^3 hosts: 1 changed, 1 new, 1 removed, 0 unchanged$/m);
        assert.match(fileDiff(report, "--- a/hgx/[host]"), /^- {2}gpu-count=2\n- {2}gpu-devices=0,1\n\+ {2}gpu-count=4\n\+ {2}gpu-devices=0,1,2,3$/m);
        // The new host's files that the earlier hgx had as they are are named; its worker's own settings are shown.
        assert.match(report, /^new: added, as on a\/hgx:\n( {2}\/\S+\n)* {2}\/etc\/concourse\/worker_key\n/m);
        assert.match(report, /^--- \/dev\/null\n\+\+\+ b\/new\/etc\/concourse\/worker\.env\tmode 0644\n@@ -0,0 \+1,\d+ @@\n/m);
        assert.match(report, /^\+CONCOURSE_NAME=new$/m);
        assert.match(report, /^--- \/dev\/null\n\+\+\+ b\/new\/\[steps\]\/new-runc-wrapper-runc-wrapper\n/m);
        // The removed host's: named where hgx still has them, shown where not.
        assert.match(report, /^cpu: removed, as on b\/hgx:\n( {2}\/\S+\n)* {2}\/usr\/local\/lib\/gpu-workers\/runc-wrapper\n/m);
        assert.match(report, /^--- a\/cpu\/etc\/gpu-workers\/runc-wrapper\.json\tmode 0644\n\+\+\+ \/dev\/null\n@@ -1,\d+ \+0,0 @@\n/m);
        assert.match(report, /^--- a\/cpu\/\[steps\]\/cpu-runc-wrapper-runc-wrapper\n\+\+\+ \/dev\/null\n/m);
        assert.ok(report.length < 40000, `${report.length} characters: fits a PR comment`);
    });

    it("against a render of no hosts: every file in full, a secret as [secret], an artifact as its digest", () => {
        const dir = path.join(work, "empty");
        fs.mkdirSync(dir);
        const { defaults } = stackWith({ name: "k", inventory: NO_GPU });
        fs.writeFileSync(
            path.join(dir, "Pulumi.test.yaml"),
            stringify({ config: { "gpu-workers:defaults": defaults, "gpu-workers:hosts": [], "gpu-workers:allowNoHosts": true } }),
        );
        const earlier = path.join(dir, "earlier");
        assert.strictEqual(render(dir, "--out", earlier).status, 0);
        writeStack(dir, stackWith({ name: "k", inventory: NO_GPU }));
        const r = render(dir, "--against", earlier);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.match(r.stdout, /^--- \/dev\/null\n\+\+\+ b\/k\/etc\/concourse\/worker_key\tmode 0600\n@@ -0,0 \+1,1 @@\n\+\[secret\]$/m);
        assert.match(
            r.stdout,
            /^--- \/dev\/null\n\+\+\+ b\/k\/usr\/local\/lib\/gpu-workers\/runc-wrapper\tmode 0755\n@@ -0,0 \+1,1 @@\n\+artifact sha256 [0-9a-f]{64}, uploaded from dist\/wrapper\/runc-wrapper$/m,
        );
        assert.match(
            r.stdout,
            /^\+\+\+ b\/k\/usr\/local\/lib\/gpu-workers\/install-runc-wrapper\.sh\tmode 0755\n@@ -0,0 \+1,\d+ @@\n\+#!\/usr\/bin\/env bash$/m,
        );
    });

    it("a git revision: its program renders its Pulumi.<stack>.yaml; the same config gives no changes, a changed one its diff", () => {
        // A repository of this checkout's program as it is now (tracked and new files), the stack at its root.
        const repo = path.join(work, "repo");
        fs.mkdirSync(repo);
        const listed = spawnSync("git", ["-C", PACKAGE_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
            encoding: "utf8",
            maxBuffer: 64 * 1024 * 1024,
        });
        assert.strictEqual(listed.status, 0, `this checkout is a git checkout: ${listed.stderr}`);
        for (const file of listed.stdout.split("\0").filter((f) => f && !f.startsWith("test/golden/"))) {
            const from = path.join(PACKAGE_ROOT, file);
            if (!fs.existsSync(from) || !fs.lstatSync(from).isFile()) continue;
            fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
            fs.copyFileSync(from, path.join(repo, file));
        }
        writeStack(repo, fleet(undefined, ["hgx", "cpu"]));
        const git = (...args: string[]) => {
            const r = spawnSync("git", ["-C", repo, "-c", "user.name=test", "-c", "user.email=test@example.invalid", ...args], { encoding: "utf8" });
            assert.strictEqual(r.status, 0, `git ${args.join(" ")}: ${r.stderr}`);
        };
        git("init", "-q");
        git("add", "-A");
        git("commit", "-q", "-m", "base");

        const same = render(repo, "--against", "HEAD", "--expect-no-changes");
        assert.strictEqual(same.status, 0, same.stdout + same.stderr);
        assert.match(
            same.stdout,
            /^render of stack test: a\/ is HEAD \([0-9a-f]{12}\), b\/ is this checkout\nhgx: no changes\ncpu: no changes\nno changes \(2 hosts\)\n$/,
        );
        assert.match(same.stderr, /^render: HEAD \([0-9a-f]{12}\) rendered in [\d.]+ s \(its build [\d.]+ s: \d+ TypeScript files transpiled in [\d.]+ s\)\n$/);

        writeStack(repo, fleet(["_writable", "_scratch"], ["hgx", "cpu"]));
        const changed = render(repo, "--against", "HEAD", "--expect-no-changes");
        assert.strictEqual(changed.status, 1, changed.stderr);
        assert.match(changed.stdout, /^hgx: 1 file changed; 1 step changed$/m);
        assert.match(fileDiff(changed.stdout, "--- a/hgx/etc/gpu-workers/runc-wrapper.json"), /^- {4}"_rw"\n\+ {4}"_scratch"$/m);

        // A stack the revision does not have: every host is new.
        fs.copyFileSync(path.join(repo, "Pulumi.test.yaml"), path.join(repo, "Pulumi.other.yaml"));
        const added = render(repo, "--stack", "other", "--against", "HEAD", "--expect-no-changes");
        assert.strictEqual(added.status, 1, added.stderr);
        assert.match(
            added.stdout,
            /^render of stack other: a\/ is HEAD \([0-9a-f]{12}\), which has no Pulumi\.other\.yaml, b\/ is this checkout\nhgx: new host, /,
        );
        assert.match(added.stdout, /^cpu: new host, /m);

        const bad = render(repo, "--against", "no-such-revision");
        assert.strictEqual(bad.status, 1);
        assert.match(bad.stderr, /^render: --against no-such-revision: neither a folder nor a revision of \S+$/m);
    });
});
