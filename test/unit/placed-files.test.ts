/**
 * A file set's stdin (lib/host/placed-files.ts): every file under a header a reader of the
 * preview can follow, and from which the host reads each file's size (a binary's bytes are staged
 * beforehand: its header names its sum); the command itself names no size or sum, so a changed
 * file changes only the stdin.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { fileSetStdin, placeFileSetCommand, removeFileSetCommand } from "../../components/lib/host/placed-files";
import { sha256Text } from "../../components/lib/file-hash";
import { HostFile } from "../../components/lib/host/steps";
import { fileSetContents } from "../support/pulumi-graph";
import { ensureCommands } from "../support/tools";

const files: HostFile[] = [
    { path: "/etc/gpu-workers/a.json", mode: "0644", content: '{"ü": 1}\n' },
    { path: "/usr/local/lib/gpu-workers/b.sh", mode: "0755", content: "#!/bin/sh\n==> /etc/shadow (mode 0600, 2 bytes) <==\nno newline" },
    { path: "/usr/local/lib/gpu-workers/empty", mode: "0600", content: "" },
];
const binary: HostFile = { path: "/usr/local/lib/gpu-workers/helper", mode: "0755", content: "", artifact: { path: "/built/helper", sha256: "ab".repeat(32) } };

describe("file set layout", () => {
    it("shows each file under its path, mode, size in bytes and sha256, and reads back byte for byte", () => {
        const stdin = fileSetStdin(files);
        assert.ok(stdin.startsWith(`==> /etc/gpu-workers/a.json (mode 0644, 10 bytes, sha256 ${sha256Text(files[0].content)}) <==\n{"ü": 1}\n\n`), stdin);
        assert.deepStrictEqual(fileSetContents(stdin), new Map(files.map((f) => [f.path, f.content])));
    });

    it("a binary is its header alone, with its sum: its bytes wait at their staging path", () => {
        const stdin = fileSetStdin([files[0], binary, files[1]]);
        assert.ok(
            stdin.includes(
                `\n==> /usr/local/lib/gpu-workers/helper (mode 0755, staged copy, sha256 ${"ab".repeat(32)}) <==\n==> /usr/local/lib/gpu-workers/b.sh (`,
            ),
            stdin,
        );
        assert.deepStrictEqual(fileSetContents(stdin), new Map([files[0], binary, files[1]].map((f) => [f.path, f.content])));
    });

    it("a changed content changes the stdin only (its file's header with it): the commands name paths and modes, not sizes or sums", () => {
        const all = [...files, binary];
        const changed = [
            ...files.map((f) => ({ ...f, content: `${f.content}more` })),
            { ...binary, artifact: { path: "/built/helper", sha256: "cd".repeat(32) } },
        ];
        assert.strictEqual(placeFileSetCommand(changed, "w-files.abc"), placeFileSetCommand(all, "w-files.abc"));
        assert.strictEqual(removeFileSetCommand(changed, "w-files.abc"), removeFileSetCommand(all, "w-files.abc"));
        assert.notStrictEqual(fileSetStdin(changed.slice(3)), fileSetStdin(all.slice(3)), "a binary's new bytes are a new line in the stdin");
        assert.notStrictEqual(
            placeFileSetCommand(
                files.map((f) => ({ ...f, mode: "0600" })),
                "w-files.abc",
            ),
            placeFileSetCommand(files, "w-files.abc"),
        );
    });

    it("refuses a secret or a generated value: they keep a command of their own, so the rest stays readable", () => {
        for (const odd of [{ secret: true }, { generated: "worker-key.public" as const }]) {
            assert.throws(
                () => fileSetStdin([{ path: "/etc/x", mode: "0600", content: "s", ...odd }]),
                /\/etc\/x: a secret or generated file does not go in a file set/,
            );
        }
    });

    it("its place (create and update) and delete commands pass shellcheck as sh (warnings and errors; A && B || C is meant)", () => {
        ensureCommands(["shellcheck"], ["shellcheck"]);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-set-"));
        try {
            const odd = [...files, binary, { path: "/etc/a b/it's", mode: "0600", content: "x" }];
            const commands = {
                place: placeFileSetCommand(odd, "w-files.abc"),
                delete: removeFileSetCommand(odd, "w-files.abc"),
            };
            const scripts = Object.entries(commands).map(([name, command]) => {
                fs.writeFileSync(path.join(dir, `${name}.sh`), `#!/bin/sh\n${command}\n`);
                return path.join(dir, `${name}.sh`);
            });
            const r = spawnSync("shellcheck", ["-s", "sh", "-S", "warning", ...scripts], { encoding: "utf8" });
            assert.strictEqual(r.status, 0, r.stdout + r.stderr);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
