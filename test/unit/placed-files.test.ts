/**
 * A file set's stdin (lib/host/placed-files.ts): every file under a header a reader of the
 * preview can follow, and from which the host reads each file's size (a binary's bytes are staged
 * beforehand: its header names its sum); the command itself names no size or sum, so a changed
 * file changes only the stdin. The command carries host/placed-files.sh and its arguments.
 */
import * as assert from "assert";
import { fileSetStdin, PLACED_FILES_SCRIPT, placeFileSetCommand, removeFilesCommand, writeFileCommand } from "../../components/lib/host/placed-files";
import { sha256Text } from "../../components/lib/file-hash";
import { carriedScript } from "../../components/lib/host/scripts";
import { HostFile, shellQuote } from "../../components/lib/host/steps";
import { fileSetContents } from "../support/pulumi-graph";

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
        assert.strictEqual(placeFileSetCommand(changed, "w-files.abc", "root"), placeFileSetCommand(all, "w-files.abc", "root"));
        assert.strictEqual(removeFilesCommand(changed, "w-files.abc", "root"), removeFilesCommand(all, "w-files.abc", "root"));
        assert.notStrictEqual(fileSetStdin(changed.slice(3)), fileSetStdin(all.slice(3)), "a binary's new bytes are a new line in the stdin");
        assert.notStrictEqual(
            placeFileSetCommand(
                files.map((f) => ({ ...f, mode: "0600" })),
                "w-files.abc",
                "root",
            ),
            placeFileSetCommand(files, "w-files.abc", "root"),
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

    it("its commands carry host/placed-files.sh and its arguments (through sudo for another login); the secret's is not among them", () => {
        const odd = [...files, binary, { path: "/etc/a b/it's", mode: "0600", content: "x" }];
        const run = `bash -c ${shellQuote(carriedScript(PLACED_FILES_SCRIPT))} placed-files.sh`;
        assert.strictEqual(
            placeFileSetCommand(odd, "w-files.abc", "root"),
            `${run} place /var/lib/gpu-workers .gpu-workers-staging w-files.abc text /etc/gpu-workers/a.json 644 text /usr/local/lib/gpu-workers/b.sh 755` +
                " text /usr/local/lib/gpu-workers/empty 600 binary /usr/local/lib/gpu-workers/helper 755 text '/etc/a b/it'\\''s' 600",
        );
        assert.strictEqual(
            placeFileSetCommand([files[0]], "w-files.abc", "ubuntu"),
            `sudo -n sh -c ${shellQuote(`${run} place /var/lib/gpu-workers .gpu-workers-staging w-files.abc text /etc/gpu-workers/a.json 644`)}`,
        );
        assert.strictEqual(
            removeFilesCommand(odd.slice(3), "w-files.abc", "root"),
            `${run} release /var/lib/gpu-workers w-files.abc /usr/local/lib/gpu-workers/helper own '/etc/a b/it'\\''s' other`,
        );
        const secret: HostFile = { path: "/etc/gpu-workers/key", mode: "0600", content: "s3cret", secret: true };
        const write = writeFileCommand(secret, "w-file-key.abc", true, "root");
        assert.strictEqual(write, `${run} write /var/lib/gpu-workers w-file-key.abc /etc/gpu-workers/key 0600 adopt`);
        assert.ok(!write.includes("s3cret"), "the secret comes on the stdin");
    });
});
