/**
 * Host scripts against a hostile or careless env file and iptables state, run for real with
 * bash: concourse-worker.sh `remove` reads worker.env literally (a `$(...)` in it runs nothing),
 * refuses a key set twice and a work dir it must not delete (/, a system folder, a path with
 * `..`, a link into /usr), and deletes an ordinary one as before; clean_network removes the
 * worker's iptables rules and chains in a network namespace of its own without running what a
 * rule's comment holds; validate-worker.sh fails on a dataset root others may write to.
 *
 * The scripts get fake systemctl (test/fixtures/host-scripts/bin), links to a short list of
 * real programs, and an `rm` that runs the real one only inside this test's folder and logs any
 * other call (so a script that went wrong could never delete this machine's folders; the log
 * shows what it tried). The test's folder lies under /var/lib, not /tmp: the scripts refuse a
 * work dir in /tmp, so an ordinary work dir must live elsewhere.
 */
import * as assert from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { SHARED_FOLDERS, SHARED_TREES, SYSTEM_FOLDERS, SYSTEM_TREES, USER_TREES } from "../../components/lib/settings/value-patterns";

const REPO = path.resolve(__dirname, "../../..");
const HOST_DIR = path.join(REPO, "host");
const FAKES = path.join(REPO, "test/fixtures/host-scripts/bin");
const REAL_TOOLS = [
    "bash",
    "sh",
    "env",
    "sed",
    "awk",
    "grep",
    "head",
    "tail",
    "cat",
    "cut",
    "tr",
    "sort",
    "mkdir",
    "mv",
    "cp",
    "chmod",
    "touch",
    "dirname",
    "basename",
    "mktemp",
    "stat",
    "realpath",
    "timeout",
    "sha256sum",
    // host/ownership.sh, which remove runs: its records are kept under a lock.
    "flock",
];
const UNIT = "concourse-worker.service";

function which(command: string): string {
    const found = spawnSync(
        "sh",
        ["-c", `command -v "$1" || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || { [ -x "/sbin/$1" ] && echo "/sbin/$1"; }`, "sh", command],
        { encoding: "utf8" },
    ).stdout.trim();
    if (!found.startsWith("/")) throw new Error(`${command} is not installed`);
    return found;
}

interface Result {
    status: number | null;
    out: string;
}

/** One throwaway host: a state dir, a Concourse prefix with a fake concourse binary, fake systemctl, the guarded rm. */
class Sandbox {
    readonly dir: string;
    readonly bin: string;
    readonly argsLog: string;
    readonly rmLog: string;

    constructor(top: string, name: string, extraTools: string[] = []) {
        this.dir = fs.mkdtempSync(path.join(top, `${name}-`));
        this.bin = path.join(this.dir, "bin");
        this.argsLog = path.join(this.dir, "retire-args.log");
        this.rmLog = path.join(this.dir, "rm-outside.log");
        for (const d of [
            this.bin,
            path.join(this.dir, "fake"),
            path.join(this.dir, "state"),
            path.join(this.dir, "prefix/concourse/bin"),
            path.join(this.dir, "tmp"),
        ])
            fs.mkdirSync(d, { recursive: true });
        for (const tool of [...REAL_TOOLS, ...extraTools]) fs.symlinkSync(which(tool), path.join(this.bin, tool));
        fs.copyFileSync(path.join(FAKES, "systemctl"), path.join(this.bin, "systemctl"));
        fs.chmodSync(path.join(this.bin, "systemctl"), 0o755);
        fs.writeFileSync(
            path.join(this.bin, "rm"),
            [
                "#!/bin/sh",
                "# The real rm, for paths inside this sandbox only; any other call is logged and does nothing.",
                'for a in "$@"; do',
                '  case "$a" in -*) continue ;; esac',
                `  case "$a" in ${JSON.stringify(this.dir)}/*) ;; *) printf '%s\\n' "rm $*" >> ${JSON.stringify(this.rmLog)}; exit 0 ;; esac`,
                "done",
                `exec ${which("rm")} "$@"`,
                "",
            ].join("\n"),
            { mode: 0o755 },
        );
        // Concourse's binary: retire-worker records its arguments, one per line.
        fs.writeFileSync(
            path.join(this.dir, "prefix/concourse/bin/concourse"),
            `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(this.argsLog)}\n`,
            { mode: 0o755 },
        );
    }

    env(): NodeJS.ProcessEnv {
        return {
            PATH: this.bin,
            LANG: "C",
            LC_ALL: "C",
            HOME: this.dir,
            TMPDIR: path.join(this.dir, "tmp"),
            FAKE_DIR: path.join(this.dir, "fake"),
            FAKE_LOG: path.join(this.dir, "calls.log"),
            GPU_WORKERS_STATE_DIR: path.join(this.dir, "state"),
            GPU_WORKERS_CONCOURSE_PREFIX: path.join(this.dir, "prefix"),
            GPU_WORKERS_CONCOURSE_RUNC_STATE: path.join(this.dir, "runc-state"),
        };
    }

    /** The worker's unit as running (so remove retires it first). */
    running(): void {
        fs.mkdirSync(path.join(this.dir, "fake/systemd/active"), { recursive: true });
        fs.writeFileSync(path.join(this.dir, "fake/systemd/active/concourse-worker"), "");
    }

    writeEnv(lines: string[]): string {
        const file = path.join(this.dir, "worker.env");
        fs.writeFileSync(file, lines.join("\n") + "\n");
        return file;
    }

    /** `concourse-worker.sh remove`, optionally inside a network namespace. */
    remove(envFile: string, netns?: string): Result {
        const args = [path.join(HOST_DIR, "concourse-worker.sh"), "remove", "--unit", UNIT, "--env", envFile, "--retire-timeout", "0"];
        const r =
            netns === undefined
                ? spawnSync(which("bash"), args, { encoding: "utf8", env: this.env(), timeout: 60_000 })
                : spawnSync(which("ip"), ["netns", "exec", netns, which("bash"), ...args], { encoding: "utf8", env: this.env(), timeout: 60_000 });
        return { status: r.status, out: `${r.stdout}${r.stderr}` };
    }

    rmOutside(): string {
        return fs.existsSync(this.rmLog) ? fs.readFileSync(this.rmLog, "utf8") : "";
    }

    folder(rel: string): string {
        const dir = path.join(this.dir, rel);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, "data"), "keep me\n");
        return dir;
    }
}

describe("host scripts against hostile values (real bash)", function () {
    this.timeout(120_000);
    let top = "";

    before(() => {
        top = fs.mkdtempSync("/var/lib/gw-hostile-");
    });

    after(() => {
        if (top) fs.rmSync(top, { recursive: true, force: true });
    });

    describe("concourse-worker.sh remove: the env file is read, never sourced", () => {
        it("a $(...) and a backquote in worker.env run nothing; retire-worker gets each value literally, as --flag=value", () => {
            const s = new Sandbox(top, "subst");
            s.running();
            const pwned = path.join(s.dir, "pwned");
            const work = `${s.dir}/x$(touch ${pwned})`;
            const env = s.writeEnv([
                "CONCOURSE_NAME=w`touch " + pwned + "`",
                `CONCOURSE_WORK_DIR=${work}`,
                "CONCOURSE_TEAM=-oTeam",
                "CONCOURSE_TSA_HOST=ci.example.test:2222",
                "CONCOURSE_TSA_PUBLIC_KEY=/etc/concourse/tsa_host_key.pub",
                "CONCOURSE_TSA_WORKER_PRIVATE_KEY=/etc/concourse/worker_key",
            ]);
            const r = s.remove(env);
            assert.strictEqual(r.status, 0, r.out);
            assert.ok(!fs.existsSync(pwned), `a command in worker.env ran:\n${r.out}`);
            assert.deepStrictEqual(
                fs
                    .readFileSync(s.argsLog, "utf8")
                    .split("\n")
                    .filter((l) => l !== ""),
                [
                    "retire-worker",
                    `--name=w\`touch ${pwned}\``,
                    "--tsa-host=ci.example.test:2222",
                    "--tsa-public-key=/etc/concourse/tsa_host_key.pub",
                    "--tsa-worker-private-key=/etc/concourse/worker_key",
                    "--team=-oTeam",
                ],
            );
            assert.strictEqual(s.rmOutside(), "");
        });

        it("a CONCOURSE_WORK_DIR set twice (a line break injected through another value) is refused before anything is stopped or deleted", () => {
            const s = new Sandbox(top, "twice");
            s.running();
            const work = s.folder("work");
            const victim = s.folder("victim");
            const env = s.writeEnv([`CONCOURSE_WORK_DIR=${work}`, "CONCOURSE_TEAM=gpu", `CONCOURSE_WORK_DIR=${victim}`]);
            const r = s.remove(env);
            assert.notStrictEqual(r.status, 0, r.out);
            assert.match(r.out, /worker\.env sets CONCOURSE_WORK_DIR 2 times; a rendered env file sets each key once/);
            assert.ok(fs.existsSync(path.join(victim, "data")), "the injected work dir is still there");
            assert.ok(fs.existsSync(path.join(work, "data")), "the work dir too: the refusal comes first");
            assert.ok(fs.existsSync(path.join(s.dir, "fake/systemd/active/concourse-worker")), "the worker still runs");
            assert.strictEqual(s.rmOutside(), "");
        });

        it("/ as the work dir is refused, and rm never sees it", () => {
            const s = new Sandbox(top, "root");
            const r = s.remove(s.writeEnv(["CONCOURSE_WORK_DIR=/"]));
            assert.notStrictEqual(r.status, 0, r.out);
            assert.match(
                r.out,
                /refusing to remove the worker: .*worker\.env names the work dir '\/', which is the whole file system; remove would delete it with rm -rf/,
            );
            assert.strictEqual(s.rmOutside(), "");
        });

        it("a work dir with .., a relative one, or one leading through a link into /usr is refused", () => {
            const s = new Sandbox(top, "forms");
            const victim = s.folder("victim");
            const cases: [string, RegExp][] = [
                [`${s.dir}/work/../victim`, /which is not in normal form/],
                ["victim", /which is not an absolute path/],
                [`${s.dir}/work/`, /which is not in normal form/],
            ];
            fs.symlinkSync("/usr/share", path.join(s.dir, "link"));
            cases.push([`${s.dir}/link/gw-hostile-absent`, /which is a system folder, or in one \(it leads to \/usr\/share\/gw-hostile-absent\)/]);
            for (const [dir, why] of cases) {
                const r = s.remove(s.writeEnv([`CONCOURSE_WORK_DIR=${dir}`]));
                assert.notStrictEqual(r.status, 0, `${dir}: ${r.out}`);
                assert.match(r.out, why, dir);
            }
            assert.ok(fs.existsSync(path.join(victim, "data")));
            assert.strictEqual(s.rmOutside(), "");
        });

        it("every folder the stack refuses as a work dir, the script refuses too (the two lists agree)", () => {
            const s = new Sandbox(top, "lists");
            const refused = [...SYSTEM_TREES, ...USER_TREES, ...SHARED_TREES]
                .flatMap((t) => [t, `${t}/gw-hostile-absent`])
                .concat(SYSTEM_FOLDERS, SHARED_FOLDERS);
            for (const dir of refused) {
                const r = s.remove(s.writeEnv([`CONCOURSE_WORK_DIR=${dir}`]));
                assert.notStrictEqual(r.status, 0, `${dir}: ${r.out}`);
                assert.match(r.out, /refusing to remove the worker/, dir);
            }
            assert.strictEqual(s.rmOutside(), "");
        });

        it("an ordinary work dir is still deleted, with nothing else", () => {
            const s = new Sandbox(top, "plain");
            const work = s.folder("opt/concourse/worker");
            const other = s.folder("opt/concourse/other");
            const r = s.remove(s.writeEnv([`CONCOURSE_WORK_DIR=${work}`]));
            assert.strictEqual(r.status, 0, r.out);
            assert.ok(!fs.existsSync(work));
            assert.ok(fs.existsSync(path.join(other, "data")));
            assert.strictEqual(s.rmOutside(), "");
        });
    });

    describe("concourse-worker.sh remove: clean_network without eval (real iptables in a network namespace)", () => {
        const ns = `gw-hostile-${process.pid}`;
        const inNs = (...args: string[]) => execFileSync("ip", ["netns", "exec", ns, ...args], { encoding: "utf8" });

        before(() => {
            execFileSync("ip", ["netns", "add", ns]);
        });

        after(() => {
            spawnSync("ip", ["netns", "del", ns]);
        });

        it("removes the worker's rules, chains and bridge; keeps the others; a comment's $(...) and quotes run nothing", () => {
            const s = new Sandbox(top, "net", ["iptables", "iptables-save", "ip"]);
            const pwned = path.join(s.dir, "pwned");
            const ipt = (table: string, ...rule: string[]) => inNs("iptables", "-t", table, ...rule);
            inNs("ip", "link", "add", "concourse0", "type", "bridge");
            for (const chain of ["CNI-FORWARD", "CNI-ADMIN", "KEEP-ME"]) ipt("filter", "-N", chain);
            ipt("filter", "-A", "FORWARD", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD");
            ipt("filter", "-A", "CNI-FORWARD", "-m", "comment", "--comment", "CNI firewall plugin admin overrides", "-j", "CNI-ADMIN");
            ipt("filter", "-A", "FORWARD", "-i", "eth0", "-j", "ACCEPT");
            ipt(
                "filter",
                "-A",
                "FORWARD",
                "-o",
                "concourse0",
                "-m",
                "comment",
                "--comment",
                `a "quoted" 'word' $(touch ${pwned}) \`touch ${pwned}\``,
                "-j",
                "ACCEPT",
            );
            ipt("filter", "-A", "FORWARD", "-i", "concourse0", "-j", "ACCEPT");
            ipt("filter", "-A", "FORWARD", "-m", "comment", "--comment", "keep me", "-j", "KEEP-ME");
            ipt("filter", "-A", "INPUT", "-i", "concourse0", "-j", "ACCEPT");
            for (const chain of ["CNI-abc123", "CONCOURSE-NAT"]) ipt("nat", "-N", chain);
            ipt(
                "nat",
                "-A",
                "POSTROUTING",
                "-s",
                "10.80.0.0/16",
                "-m",
                "comment",
                "--comment",
                `name: "concourse" id: "$(touch ${pwned})"`,
                "-j",
                "CNI-abc123",
            );
            ipt("nat", "-A", "CNI-abc123", "-d", "10.80.0.0/16", "-j", "ACCEPT");
            ipt("nat", "-A", "CNI-abc123", "-j", "CONCOURSE-NAT");
            ipt("nat", "-A", "POSTROUTING", "-o", "eth0", "-j", "MASQUERADE");

            const r = s.remove(s.writeEnv(["CONCOURSE_RUNTIME=containerd"]), ns);
            assert.strictEqual(r.status, 0, r.out);
            assert.ok(!fs.existsSync(pwned), `a rule's comment ran as a command:\n${r.out}`);
            assert.deepStrictEqual(ipt("filter", "-S").trim().split("\n"), [
                "-P INPUT ACCEPT",
                "-P FORWARD ACCEPT",
                "-P OUTPUT ACCEPT",
                "-N KEEP-ME",
                "-A FORWARD -i eth0 -j ACCEPT",
                '-A FORWARD -m comment --comment "keep me" -j KEEP-ME',
            ]);
            assert.deepStrictEqual(ipt("nat", "-S").trim().split("\n"), [
                "-P PREROUTING ACCEPT",
                "-P INPUT ACCEPT",
                "-P OUTPUT ACCEPT",
                "-P POSTROUTING ACCEPT",
                "-A POSTROUTING -o eth0 -j MASQUERADE",
            ]);
            assert.doesNotMatch(inNs("ip", "-o", "link"), /concourse0/);
        });
    });

    describe("validate-worker.sh: a dataset root others may write to", () => {
        const validate = (s: Sandbox, root: string) => {
            const r = spawnSync(
                which("bash"),
                [
                    path.join(HOST_DIR, "validate-worker.sh"),
                    "ensure",
                    "--vendor",
                    "none",
                    "--wrapper",
                    path.join(s.dir, "no-wrapper"),
                    "--socket",
                    path.join(s.dir, "no.sock"),
                    "--datasets-root",
                    root,
                ],
                { encoding: "utf8", env: s.env(), timeout: 60_000 },
            );
            return `${r.stdout}${r.stderr}`;
        };

        it("fails on a root writable by group or others, or below a folder others may write to without the sticky bit; a sticky one is fine", () => {
            const s = new Sandbox(top, "modes");
            const open = s.folder("open");
            fs.chmodSync(open, 0o777);
            assert.match(
                validate(s, open),
                new RegExp(
                    `FAILED datasets: the dataset root ${open} is writable by group or others \\(mode 777\\), so they could put there a folder that every task then gets; make it writable by its owner only \\(chmod go-w ${open}\\)`,
                ),
            );
            const group = s.folder("group");
            fs.chmodSync(group, 0o775);
            assert.match(validate(s, group), /FAILED datasets: the dataset root .*group is writable by group or others \(mode 775\)/);
            const parent = s.folder("parent");
            const below = s.folder("parent/sets");
            fs.chmodSync(parent, 0o777);
            fs.chmodSync(below, 0o755);
            assert.match(
                validate(s, below),
                new RegExp(`FAILED datasets: ${parent}, above the dataset root ${below}, is writable by group or others without the sticky bit \\(mode 777\\)`),
            );
            fs.chmodSync(parent, 0o1777);
            assert.doesNotMatch(validate(s, below), /FAILED datasets/);
            const fine = s.folder("fine");
            fs.chmodSync(fine, 0o755);
            assert.doesNotMatch(validate(s, fine), /FAILED datasets/);
        });
    });
});
