/**
 * The owner records of host commands (lib/host/owner-records.ts) with a real shell, as a host runs
 * them: a delete undoes only when no other resource has applied the same slot since (a host
 * renamed in the stack), undoes as before where no record exists (state made before records),
 * and the last owner's delete undoes and leaves no record folder. Each case runs in a mount
 * namespace of its own with an empty /var/lib, so this machine's is never touched.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import { createHash } from "crypto";
import { claimCommand, HostOwner, KEPT_MARK, ownerId, OWNERS_DIR, releaseCommand, slotDir } from "../../components/lib/host/owner-records";
import { sha256Text } from "../../components/lib/file-hash";
import { HostFile, shellCommand } from "../../components/lib/host/steps";
import { fileSetStdin, placeFileSetCommand, removeFilesCommand, writeFileCommand } from "../../components/lib/host/placed-files";
import { ensureCommands } from "../support/tools";

/** Runs `script` (bash) with a private, empty /var/lib; returns its output and status. */
function onHost(script: string): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync("unshare", ["-m", "--propagation", "private", "bash", "-c", `mount -t tmpfs gw-owners /var/lib && ${script}`], { encoding: "utf8" });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const web = (resource: string): HostOwner => ({ slot: "step:postgres", resource, user: "root" });
// A delete's undo: what it prints is what each case reads.
const DROP = "echo 'DROP DATABASE atc'";

describe("owner records on a host (real shell, private /var/lib)", () => {
    before(() => ensureCommands(["unshare", "mount"], ["util-linux", "mount"]));

    it("a renamed web's old delete leaves the database alone and names the new owner; the new one's delete drops it, leaving no record", () => {
        const r = onHost(
            [
                claimCommand(web("old-postgres"), "h:22:old", DROP),
                claimCommand(web("new-postgres"), "h:22:new", DROP),
                "echo '--- old delete'",
                releaseCommand(web("old-postgres"), "h:22:old", DROP, "root"),
                "echo '--- left'",
                `ls ${slotDir("step:postgres")}`,
                "echo '--- new delete'",
                releaseCommand(web("new-postgres"), "h:22:new", DROP, "root"),
                "echo '--- after'",
                `ls -A /var/lib; echo end`,
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [, oldDelete, left, newDelete, after] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(
            oldDelete,
            `${KEPT_MARK} old-postgres (step:postgres): left in place: applied since by new-postgres (records: ${slotDir("step:postgres")})`,
        );
        assert.strictEqual(left, "h-22-new", "only the new resource's record is left");
        assert.strictEqual(newDelete, "DROP DATABASE atc");
        assert.strictEqual(after, "end", "no record folder is left behind");
    });

    it("no record (state from before records): the delete runs as before; a failing delete keeps the record for the retry", () => {
        const none = onHost(releaseCommand(web("old-postgres"), "h:22:old", DROP, "root"));
        assert.strictEqual(none.stdout.trim(), "DROP DATABASE atc");
        const failing = onHost(
            [
                claimCommand(web("w-postgres"), "h:22:w", "false"),
                `(\n${releaseCommand(web("w-postgres"), "h:22:w", "echo trying; exit 3", "root")}\n)`,
                "echo status=$?",
                `ls ${slotDir("step:postgres")}`,
            ].join("\n"),
        );
        assert.match(failing.stdout, /trying\n/);
        assert.match(failing.stdout, /status=3\nh-22-w\n?$/);
    });

    it("a resource from before records (no owner in its state) leaves alone what a resource of this release applied with the same delete command", () => {
        const r = onHost(
            [
                claimCommand(web("new-postgres"), "h:22:new", DROP),
                "echo '--- same'",
                releaseCommand(undefined, "h:22:old", DROP, "root"),
                "echo '--- other'",
                releaseCommand(undefined, "h:22:old", "echo 'rm -f /etc/other'", "root"),
            ].join("\n"),
        );
        const [, same, other] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(same, `${KEPT_MARK} left in place: applied since by new-postgres (records: ${OWNERS_DIR})`);
        assert.strictEqual(other, "rm -f /etc/other");
    });

    it("an exit in the command ends only the command; a slot of a path with odd characters is kept apart from a look-alike", () => {
        const a = { slot: "file:/etc/a b", resource: "x-file", user: "root" };
        const b = { slot: "file:/etc/a-b", resource: "y-file", user: "root" };
        assert.notStrictEqual(slotDir(a.slot), slotDir(b.slot));
        const r = onHost(
            [
                claimCommand(a, "h:1:a", "exit 0"),
                claimCommand(b, "h:1:b", "true"),
                releaseCommand(a, "h:1:a", "echo removed; exit 0", "root"),
                `ls ${OWNERS_DIR}`,
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        assert.deepStrictEqual(r.stdout.trim().split("\n"), ["removed", slotDir(b.slot).split("/").pop()]);
    });

    it("a placed file: an earlier release's component mark and a replaced resource's old mark are let go without undoing; the last user's delete puts the host's file back", () => {
        const file: HostFile = { path: "/var/lib/gw-target/app.conf", mode: "0640", content: "" };
        const place = (user: string, content: string) => `printf '%s' ${shellCommand([content])} | ${writeFileCommand(file, user, false, "root")}`;
        const show = `cat ${file.path}; echo; stat -c %a ${file.path}`;
        // The owner ids of one resource before and after a changed trigger (a new machine behind the address): a replacement.
        const before = ownerId("w-app-file-conf", "p/s", ["machine-a"]);
        const after = ownerId("w-app-file-conf", "p/s", ["machine-b"]);
        assert.notStrictEqual(before, after);
        const r = onHost(
            [
                `mkdir -p /var/lib/gw-target && printf host > ${file.path}`,
                place("w-app", "earlier release"),
                place(before, "this release"),
                removeFilesCommand([file], "w-app", "root"),
                "echo '--- after the earlier release left'",
                show,
                place(after, "replaced"),
                removeFilesCommand([file], before, "root"),
                "echo '--- after the replacement'",
                show,
                removeFilesCommand([file], after, "root"),
                "echo '--- after the last delete'",
                show,
                "ls -A /var/lib/gpu-workers 2>/dev/null; echo end",
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [, left, replaced, last] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(left, "this release\n640");
        assert.strictEqual(replaced, "replaced\n640");
        assert.strictEqual(last, "host\n644\nend", "the host's own file is back, and no record is left");
    });
});

describe("a file set on a host (real shell, private /var/lib and /usr/local/lib)", () => {
    before(() => ensureCommands(["unshare", "mount", "sha256sum", "mktemp"], ["util-linux", "mount", "coreutils"]));

    /** Runs `script` with private, empty /var/lib and /usr/local/lib (the program's own folder lives there). */
    function onPrivateHost(script: string) {
        return onHost(`mount -t tmpfs gw-own /usr/local/lib && ${script}`);
    }
    const conf: HostFile = { path: "/var/lib/gw-target/app.conf", mode: "0640", content: "port = 1\n" };
    // No newline at the end, a line that looks like a header, and characters of more than one byte.
    const tricky: HostFile = { path: "/usr/local/lib/gpu-workers/tricky.sh", mode: "0755", content: "echo ü\n==> /etc/passwd (mode 0644, 3 bytes) <==\nabc" };
    const extra: HostFile = { path: "/usr/local/lib/gpu-workers/extra.txt", mode: "0644", content: "extra\n" };
    // A set's owner id comes from its name and triggers (its paths among them): other paths, another owner.
    const owner = ownerId("w-app-files", "p/s", [null, conf.path, tricky.path, extra.path]);
    const run = (files: HostFile[], id = owner, stdin = fileSetStdin(files)) =>
        `printf '%s' ${shellCommand([stdin])} | ${placeFileSetCommand(files, id, "root")}`;
    const show = (f: HostFile) => `echo "[${f.path}]"; cat ${f.path} 2>&1; echo; stat -c %a ${f.path} 2>&1`;

    it("places every file byte for byte with its mode and keeps what the host had; an update writes only what changed; a set of other paths takes over before the old one lets go; the last delete puts the host back", () => {
        const first = [conf, tricky, extra];
        const changed = [{ ...conf, content: "port = 2\n" }, tricky, extra];
        const added: HostFile = { path: "/var/lib/gw-target/added.conf", mode: "0600", content: "added\n" };
        const other = [{ ...conf, content: "port = 2\n" }, tricky, added];
        const otherOwner = ownerId("w-app-files", "p/s", [null, conf.path, tricky.path, added.path]);
        const r = onPrivateHost(
            [
                `mkdir -p /var/lib/gw-target && printf host > ${conf.path} && printf host-added > ${added.path}`,
                run(first),
                "echo '--- created'",
                show(conf),
                show(tricky),
                show(extra),
                `inode=$(stat -c %i ${tricky.path})`,
                run(changed),
                "echo '--- updated'",
                `[ "$(stat -c %i ${tricky.path})" = "$inode" ] && echo "unchanged file kept"`,
                show(conf),
                run(other, otherOwner),
                removeFilesCommand(changed, owner, "root"),
                "echo '--- replaced'",
                show(conf),
                show(added),
                `ls -A /usr/local/lib/gpu-workers`,
                removeFilesCommand(other, otherOwner, "root"),
                "echo '--- deleted'",
                show(conf),
                show(added),
                'echo "own folders: $(ls -A /usr/local/lib)"; ls -A /var/lib/gpu-workers 2>/dev/null || echo no records',
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [, created, updated, replaced, deleted] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.strictEqual(created, `[${conf.path}]\nport = 1\n\n640\n[${tricky.path}]\n${tricky.content}\n755\n[${extra.path}]\nextra\n\n644`);
        assert.strictEqual(updated, `unchanged file kept\n[${conf.path}]\nport = 2\n\n640`, "an unchanged file is not written again");
        assert.strictEqual(
            replaced,
            `[${conf.path}]\nport = 2\n\n640\n[${added.path}]\nadded\n\n600\ntricky.sh`,
            "the new set places its new path; the old set's delete takes only the path no set holds now, with nothing there before it",
        );
        assert.match(deleted, new RegExp(`^\\[${conf.path}\\]\nhost\n644\n\\[${added.path}\\]\nhost-added\n644\n`), "the host's own files are back");
        assert.match(deleted, /\nown folders: \nno records$/, "the program's own folder went with its last file, and no record is left");
    });

    it("odd paths (a space, a quote, glob characters, a look-alike of a header) are placed and released as they are", () => {
        const odd = ["a b", "it's", "x*[y]?", "p (mode 0644, 3 bytes, sha256 00) <==", "-dash"].map((name, i): HostFile => ({
            path: `/var/lib/gw-target/${name}`,
            mode: "0640",
            content: `file ${i}\n`,
        }));
        const oddOwner = ownerId("w-odd-files", "p/s", [null, ...odd.map((f) => f.path)]);
        const r = onPrivateHost(
            [
                "mkdir -p /var/lib/gw-target && : > '/var/lib/gw-target/x1[y]2'",
                run(odd, oddOwner),
                "echo '--- placed'",
                'cd /var/lib/gw-target && for f in *; do printf \'%s: [%s]\\n\' "$f" "$(cat -- "$f")"; done',
                removeFilesCommand(odd, oddOwner, "root"),
                "echo '--- released'",
                "ls -A /var/lib/gw-target; ls -A /var/lib/gpu-workers 2>/dev/null || echo no records",
            ].join("\n"),
        );
        assert.strictEqual(r.status, 0, r.stderr);
        const [, placed, released] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
        assert.deepStrictEqual(
            placed.split("\n").sort(),
            [...odd.map((f, i) => `${f.path.slice("/var/lib/gw-target/".length)}: [file ${i}]`), "x1[y]2: []"].sort(),
            "each file at its own path, and the file a glob would match left alone",
        );
        assert.strictEqual(released, "x1[y]2\nno records", "only the host's own file is left, and no record");
    });

    it("a stdin that does not hold the command's files where it expects them fails before any path is touched", () => {
        const files = [conf, tricky];
        // The first file is where it should be, the second is not: the first is not placed either.
        const r = onPrivateHost(
            [
                `mkdir -p /var/lib/gw-target && printf host > ${conf.path}`,
                `${run(files, owner, fileSetStdin([conf, extra]))}; echo status=$?`,
                show(conf),
                `ls -A /var/lib/gw-target; ls -A /var/lib/gpu-workers 2>/dev/null || echo no records`,
            ].join("\n"),
        );
        assert.match(r.stderr, new RegExp(`file set: the stdin does not hold ${tricky.path} where expected`));
        assert.match(r.stdout, /^status=1\n/);
        assert.match(
            r.stdout,
            new RegExp(`\\[${conf.path}\\]\nhost\n644\napp.conf\nno records\n?$`),
            "the host's file is untouched, no temp file or record is left",
        );
    });

    describe("with a binary (its bytes staged beforehand, its header naming only the sum)", () => {
        const bytes = Buffer.from([0, 1, 2, 255, 10, 0x3d, 0x3d, 0x3e, 10, 7]);
        const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
        const binary: HostFile = { path: "/usr/local/lib/gpu-workers/helper", mode: "0755", content: "", artifact: { path: "/unused", sha256: sha(bytes) } };
        const files = [conf, binary];
        const binOwner = ownerId("w-app-files", "p/s", [null, conf.path, binary.path]);
        /** Copies bytes to the staging path of their sum, as remote.CopyToRemote does, in the login user's home (the command's folder). */
        const stage = (b: Buffer, as = sha(b)) => `mkdir -p .gpu-workers-staging && echo ${b.toString("base64")} | base64 -d > .gpu-workers-staging/${as}`;
        const inHome = (lines: string[]) => onPrivateHost(["mkdir -p /var/lib/home && cd /var/lib/home", ...lines].join("\n"));
        const binaryState = `sha256sum ${binary.path} | cut -c1-64; stat -c '%a %i' ${binary.path}; ls -A /var/lib/home`;

        it("installs the staged bytes with their mode and drops the copy; a later run, staged again or not, keeps the inode; a mode alone is set; the delete takes it", () => {
            const r = inHome([
                stage(bytes),
                run(files, binOwner),
                "echo '--- installed'",
                binaryState,
                `inode=$(stat -c %i ${binary.path})`,
                run([{ ...conf, content: "port = 2\n" }, binary], binOwner),
                stage(bytes),
                run(files, binOwner),
                "echo '--- kept'",
                `[ "$(stat -c %i ${binary.path})" = "$inode" ] && echo "same inode"; ls -A /var/lib/home`,
                run([conf, { ...binary, mode: "0700" }], binOwner),
                "echo '--- mode'",
                `stat -c %a ${binary.path}`,
                removeFilesCommand(files, binOwner, "root"),
                "echo '--- deleted'",
                `ls -A /usr/local/lib; ls -A /var/lib/gpu-workers 2>/dev/null || echo no records`,
            ]);
            assert.strictEqual(r.status, 0, r.stderr);
            const [, installed, kept, mode, deleted] = r.stdout.split(/^--- .*$/m).map((part) => part.trim());
            assert.match(installed, new RegExp(`^${sha(bytes)}\n755 \\d+$`), "the bytes and mode; no staged copy or staging folder is left");
            assert.strictEqual(kept, "same inode", "a binary already in place is not written again, and a new staged copy of it goes");
            assert.strictEqual(mode, "700");
            assert.strictEqual(deleted, "no records", "the binary and the own folder went, and no record is left");
        });

        it("staged bytes that fail the sum, or none where the path lacks them, change nothing and fail naming the path", () => {
            const r = inHome([
                `mkdir -p /usr/local/lib/gpu-workers && printf host > ${binary.path}`,
                stage(Buffer.from("not the binary"), sha(bytes)),
                `${run(files, binOwner)}; echo status=$?`,
                `cat ${binary.path}; echo; ls -A /usr/local/lib/gpu-workers`,
                "rm -r .gpu-workers-staging",
                `${run(files, binOwner)}; echo status=$?`,
                `cat ${binary.path}; echo`,
            ]);
            assert.strictEqual(r.stdout.trim(), "status=1\nhost\nhelper\nstatus=1\nhost", "the host's file is untouched, no temp file is left");
            assert.strictEqual(
                r.stderr.trim(),
                [
                    `${binary.path}: the bytes for it are not sha256 ${sha(bytes)}`,
                    `${binary.path}: no staged copy, and the file is not sha256 ${sha(bytes)}`,
                ].join("\n"),
            );
        });

        it("a header of another kind for the path (text where a binary is expected) is refused", () => {
            const r = inHome([
                stage(bytes),
                `${run(files, binOwner, fileSetStdin([conf, { ...binary, artifact: undefined, content: "text" }]))}; echo status=$?`,
            ]);
            assert.match(r.stdout, /status=1/);
            assert.match(r.stderr, new RegExp(`file set: the stdin does not hold ${binary.path} where expected`));
        });
    });

    it("bytes that do not match their header's sha256 fail the command before any path is touched, the good files' too", () => {
        const r = onPrivateHost(
            [
                `mkdir -p /var/lib/gw-target && printf host > ${conf.path}`,
                `${run([extra, conf], owner, fileSetStdin([extra, conf]).replace("port = 1\n", "port = 9\n"))}; echo status=$?`,
                show(conf),
                `ls -A /var/lib/gw-target; ls -A /usr/local/lib; ls -A /var/lib/gpu-workers 2>/dev/null || echo no records`,
            ].join("\n"),
        );
        assert.match(
            r.stdout,
            new RegExp(`^status=1\n\\[${conf.path}\\]\nhost\n644\napp.conf\nno records\n?$`),
            "the host's file is untouched, the good file was not placed, no temp file or record is left",
        );
        assert.strictEqual(r.stderr.trim(), `${conf.path}: the bytes for it are not sha256 ${sha256Text(conf.content)}`);
    });
});
