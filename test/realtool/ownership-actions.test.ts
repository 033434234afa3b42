/**
 * host/ownership.sh's file and user actions, one by one, with a real shell and its real flock:
 * what each writes in its records, that it keeps a record once, that a restore puts back the
 * host's bytes and mode (a link as a link), and that if-unused runs the command it is given only
 * when no user is left, under the lock user-add takes. The package and service actions run
 * against real apt, dpkg and systemd in host-ownership.test.ts.
 */
import * as assert from "assert";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { makeScratch, scratchName } from "../support/scratch";

const SCRIPT = path.resolve(__dirname, "../../../host/ownership.sh");

describe("host/ownership.sh, action by action (real shell, a state folder of its own)", () => {
    const top = scratchName("gw-ownership-");
    let n = 0;
    // Each case: a state folder and a host folder of its own.
    let state: string;
    let host: string;
    const run = (...args: string[]) => {
        const r = spawnSync("bash", [SCRIPT, ...args], { encoding: "utf8", env: { ...process.env, GPU_WORKERS_STATE_DIR: state } });
        return { status: r.status, out: r.stdout + r.stderr };
    };
    const ok = (...args: string[]) => {
        const r = run(...args);
        assert.strictEqual(r.status, 0, `${args.join(" ")}: ${r.out}`);
        return r.out;
    };
    const recordOf = (file: string) => path.join(state, "placed", file);

    before(() => makeScratch(top));
    after(() => fs.rmSync(top, { recursive: true, force: true }));
    beforeEach(() => {
        n += 1;
        state = makeScratch(path.join(top, `state-${n}`));
        host = makeScratch(path.join(top, `host-${n}`));
    });

    describe("file-keep, file-adopt, file-restore", () => {
        it("keeps the host's file aside once; a later keep after our write changes nothing; restore puts back its bytes and mode and drops the record", () => {
            const file = path.join(host, "etc/containerd/config.toml");
            fs.mkdirSync(path.dirname(file), { recursive: true });
            fs.writeFileSync(file, "the host's own\n", { mode: 0o640 });
            fs.chmodSync(file, 0o640);
            ok("file-keep", file);
            assert.strictEqual(fs.readFileSync(path.join(recordOf(file), "original"), "utf8"), "the host's own\n");
            fs.writeFileSync(file, "ours\n");
            ok("file-keep", file);
            assert.strictEqual(fs.readFileSync(path.join(recordOf(file), "original"), "utf8"), "the host's own\n", "the first record stays");
            assert.match(ok("file-restore", file), /put back the original /);
            assert.strictEqual(fs.readFileSync(file, "utf8"), "the host's own\n");
            assert.strictEqual(fs.statSync(file).mode & 0o777, 0o640);
            assert.deepStrictEqual(fs.readdirSync(state), [], "no record folder is left");
        });

        it("a link is kept and put back as the link, not what it points at", () => {
            const target = path.join(host, "target");
            fs.writeFileSync(target, "pointed at\n");
            const file = path.join(host, "link");
            fs.symlinkSync(target, file);
            ok("file-keep", file);
            fs.rmSync(file);
            fs.writeFileSync(file, "ours\n");
            ok("file-restore", file);
            assert.strictEqual(fs.readlinkSync(file), target);
            assert.strictEqual(fs.readFileSync(target, "utf8"), "pointed at\n");
        });

        it("nothing there before: keep notes it, restore removes our file; a restore with no record leaves the file alone", () => {
            const file = path.join(host, "new.conf");
            ok("file-keep", file);
            assert.ok(fs.existsSync(path.join(recordOf(file), "absent")));
            fs.writeFileSync(file, "ours\n");
            ok("file-restore", file);
            assert.ok(!fs.existsSync(file));
            fs.writeFileSync(file, "the host's, written since\n");
            ok("file-restore", file);
            assert.strictEqual(fs.readFileSync(file, "utf8"), "the host's, written since\n");
        });

        it("file-adopt notes nothing was there, unless a record already says what was", () => {
            const adopted = path.join(host, "adopted");
            fs.writeFileSync(adopted, "written by an earlier release\n");
            ok("file-adopt", adopted);
            assert.deepStrictEqual(fs.readdirSync(recordOf(adopted)), ["absent"]);
            const kept = path.join(host, "kept");
            fs.writeFileSync(kept, "the host's\n");
            ok("file-keep", kept);
            fs.writeFileSync(kept, "ours\n");
            ok("file-adopt", kept);
            ok("file-restore", kept);
            assert.strictEqual(fs.readFileSync(kept, "utf8"), "the host's\n");
        });

        it("a relative path or a wrong count of arguments is refused, naming the usage, with nothing written", () => {
            const relative = run("file-keep", "etc/x");
            assert.strictEqual(relative.status, 1);
            assert.match(relative.out, /expected an absolute path, got 'etc\/x'/);
            assert.match(run("file-restore").out, /usage: ownership\.sh file-restore FILE/);
            assert.match(run("user-add", path.join(state, "users")).out, /usage: ownership\.sh user-add RECORD NAME/);
            assert.match(run("nonsense").out, /usage: ownership\.sh apt-install\|apt-remove/);
            assert.deepStrictEqual(fs.readdirSync(state), []);
        });
    });

    describe("user-add, user-remove, if-unused", () => {
        it("a user is listed once; removing one leaves the others; removing the last removes the record", () => {
            const users = path.join(state, "concourse/users");
            ok("user-add", users, "worker-a");
            ok("user-add", users, "worker-a");
            ok("user-add", users, "web");
            assert.strictEqual(fs.readFileSync(users, "utf8"), "worker-a\nweb\n");
            ok("user-remove", users, "worker-a");
            assert.strictEqual(fs.readFileSync(users, "utf8"), "web\n");
            ok("user-remove", users, "someone-never-added");
            assert.strictEqual(fs.readFileSync(users, "utf8"), "web\n");
            ok("user-remove", users, "web");
            assert.ok(!fs.existsSync(users));
        });

        it("a name that looks like a pattern is matched as it is written", () => {
            const users = path.join(state, "users");
            ok("user-add", users, "w.*");
            ok("user-add", users, "web");
            ok("user-remove", users, "w.*");
            assert.strictEqual(fs.readFileSync(users, "utf8"), "web\n");
        });

        it("if-unused runs its command, with its arguments as given, only once no user is left", () => {
            const users = path.join(state, "users");
            const marker = path.join(host, "removed with spaces");
            ok("user-add", users, "web");
            ok("user-add", users, "worker-a");
            assert.match(ok("if-unused", users, "touch", marker), /still in use by web worker-a: left in place/);
            assert.ok(!fs.existsSync(marker));
            ok("user-remove", users, "web");
            ok("if-unused", users, "touch", marker);
            assert.ok(!fs.existsSync(marker), "one user is still left");
            ok("user-remove", users, "worker-a");
            ok("if-unused", users, "touch", marker);
            assert.ok(fs.existsSync(marker), "the command ran with its argument whole");
        });

        it("if-unused's command fails: its status is the action's", () => {
            const r = run("if-unused", path.join(state, "users"), "bash", "-c", "exit 7");
            assert.strictEqual(r.status, 7);
        });

        it("a user-add that comes while if-unused's command runs waits for it to finish", async () => {
            const users = path.join(state, "users");
            const started = path.join(host, "started");
            const finished = path.join(host, "finished");
            const removal = spawn("bash", [SCRIPT, "if-unused", users, "bash", "-c", `touch '${started}'; sleep 1; touch '${finished}'`], {
                env: { ...process.env, GPU_WORKERS_STATE_DIR: state },
                stdio: "ignore",
            });
            const done = new Promise<number | null>((resolve) => removal.on("exit", resolve));
            while (!fs.existsSync(started)) await new Promise((r) => setTimeout(r, 20));
            ok("user-add", users, "worker-b");
            assert.ok(fs.existsSync(finished), "user-add returned before the removal it raced had finished");
            assert.strictEqual(await done, 0);
            assert.strictEqual(fs.readFileSync(users, "utf8"), "worker-b\n");
        });
    });
});
