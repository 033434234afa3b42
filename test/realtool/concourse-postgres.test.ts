/**
 * host/concourse-postgres.sh with the real PostgreSQL and systemd of a Debian 12 LXD instance:
 * the web's role and database made (hostile names and passwords included), a changed password
 * set again, idempotent, dropped on remove, kept with --keep.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { shellQuote } from "../../components/lib/host/steps";
import { makeScratch, scratchName } from "../support/scratch";
import { ensureLxdTools, REPO, TestDaemon } from "./lxd-support";

const INSTANCE = "gw-pg";
const SCRIPT = "/usr/local/lib/gpu-workers/concourse-postgres.sh";

describe("concourse-postgres.sh (real PostgreSQL in an LXD instance)", function () {
    this.timeout(600_000);
    let daemon: TestDaemon;
    const work = scratchName("gw-pg-");

    before(() => {
        makeScratch(work);
        ensureLxdTools();
        daemon = TestDaemon.start();
        daemon.importImage("debian-12");
        daemon.lxc("launch", "gpu-workers/debian-12", INSTANCE);
        daemon.lxc(
            "exec",
            INSTANCE,
            "--",
            "sh",
            "-c",
            'for i in $(seq 60); do systemctl is-system-running --quiet --wait 2>/dev/null && exit 0; [ "$(systemctl is-system-running 2>/dev/null)" = degraded ] && exit 0; sleep 1; done; exit 0',
        );
        daemon.lxc("file", "push", "-q", "--create-dirs", "--mode", "0755", path.join(REPO, "host", "concourse-postgres.sh"), `${INSTANCE}${SCRIPT}`);
    });

    after(() => {
        daemon?.stop();
        fs.rmSync(work, { recursive: true, force: true });
    });

    const sh = (script: string) => daemon.lxcResult("exec", INSTANCE, "--", "bash", "-c", script);
    const secrets = (password: string) => {
        const file = path.join(work, "web-secrets.env");
        fs.writeFileSync(file, `CONCOURSE_POSTGRES_PASSWORD=${password}\nCONCOURSE_ADD_LOCAL_USER=admin:x\n`);
        daemon.lxc("file", "push", "-q", "--create-dirs", "--mode", "0600", file, `${INSTANCE}/etc/concourse/web-secrets.env`);
    };
    const args = "--database 'atc db' --user 'ci-user'";
    /** Logs in as the web would (TCP on 127.0.0.1 with the password); prints the database's name. */
    const login = (password: string) => sh(`PGPASSWORD=${shellQuote(password)} psql -h 127.0.0.1 -U ci-user -d 'atc db' -tAc 'select current_database()'`);

    it("ensure starts PostgreSQL and makes the role and database the web logs in with", () => {
        secrets("p'w\"$x");
        assert.match(sh("systemctl is-active postgresql || true").stdout, /inactive/, "the image does not run PostgreSQL by itself");
        const r = sh(`${SCRIPT} ensure ${args} --secrets-env /etc/concourse/web-secrets.env`);
        assert.strictEqual(r.status, 0, r.stderr);
        assert.strictEqual(login("p'w\"$x").stdout.trim(), "atc db");
    });

    it("is idempotent, and a changed password is set again", () => {
        assert.strictEqual(sh(`${SCRIPT} ensure ${args} --secrets-env /etc/concourse/web-secrets.env`).status, 0);
        secrets("second");
        assert.strictEqual(sh(`${SCRIPT} ensure ${args} --secrets-env /etc/concourse/web-secrets.env`).status, 0);
        assert.strictEqual(login("second").stdout.trim(), "atc db");
        assert.notStrictEqual(login("p'w\"$x").status, 0, "the old password no longer works");
    });

    it("no process's command line holds the password while the step sets it; quotes, $, backslashes and spaces work", () => {
        const password = "p'w\"$x \\ y\\'z $(id) `id` :pw";
        secrets(password);
        // Another session holds a lock on the roles' catalog that ALTER ROLE waits for, so the step's
        // processes stay alive, its psql holding the password, while the listing is taken; then that
        // session is ended. Each wait is for what it waits on, not for a fixed time (a loaded machine is slow), a minute at most.
        const query = (sql: string) => `runuser -u postgres -- psql -X -tAq -d postgres -c "${sql}"`;
        const r = sh(
            [
                "PGAPPNAME=gw-blocker runuser -u postgres -- psql -X -q -d postgres -c 'BEGIN; LOCK TABLE pg_catalog.pg_authid IN SHARE MODE; SELECT pg_sleep(600); COMMIT;' >/dev/null 2>&1 &",
                "blocker=$!",
                `for _ in $(seq 600); do ${query("select count(*) from pg_stat_activity where application_name = 'gw-blocker' and wait_event = 'PgSleep'")} | grep -qx 1 && break; sleep 0.1; done`,
                `${SCRIPT} ensure ${args} --secrets-env /etc/concourse/web-secrets.env >/tmp/step.out 2>&1 &`,
                "step=$!",
                // Until the step's ALTER ROLE waits for the lock (its backend shows it), then the listing.
                `for _ in $(seq 600); do ${query("select count(*) from pg_stat_activity where wait_event_type = 'Lock'")} | grep -qx 1 && break; sleep 0.1; done`,
                "ps -eo pid,args > /tmp/ps.txt",
                `${query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'gw-blocker'")} >/dev/null`,
                "wait $step; echo step=$?; wait $blocker || true",
                "cat /tmp/ps.txt",
            ].join("\n"),
        );
        assert.match(r.stdout, /^step=0$/m, r.stdout + r.stderr + sh("cat /tmp/step.out").stdout);
        const listing = r.stdout.slice(r.stdout.indexOf("step=0"));
        assert.match(listing, /concourse-postgres\.sh ensure/, "the listing was taken while the step ran");
        assert.match(listing, /psql .*-v role=ci-user/, "with its psql waiting");
        for (const piece of ["p'w", "y\\'z", ":pw"]) assert.ok(!listing.includes(piece), `the listing shows no part of the password (${piece}):\n${listing}`);
        assert.strictEqual(login(password).stdout.trim(), "atc db", "the web logs in with it");
        // Back to the password the tests after this one log in with.
        secrets("second");
        assert.strictEqual(sh(`${SCRIPT} ensure ${args} --secrets-env /etc/concourse/web-secrets.env`).status, 0);
    });

    it("refuses a secrets file without the password, naming it", () => {
        const r = sh(`printf 'X=1\\n' > /tmp/empty.env; ${SCRIPT} ensure ${args} --secrets-env /tmp/empty.env`);
        assert.notStrictEqual(r.status, 0);
        assert.match(r.stderr, /\/tmp\/empty\.env has no CONCOURSE_POSTGRES_PASSWORD/);
    });

    it("remove --keep keeps the data; remove drops the database and the role", () => {
        assert.strictEqual(sh(`${SCRIPT} remove ${args} --keep`).status, 0);
        assert.strictEqual(login("second").stdout.trim(), "atc db", "kept");
        const r = sh(`${SCRIPT} remove ${args}`);
        assert.strictEqual(r.status, 0, r.stderr);
        const left = sh(
            "runuser -u postgres -- psql -tAc \"select count(*) from pg_database where datname = 'atc db'\" -c \"select count(*) from pg_roles where rolname = 'ci-user'\"",
        );
        assert.deepStrictEqual(left.stdout.trim().split("\n"), ["0", "0"]);
        assert.strictEqual(sh(`${SCRIPT} remove ${args}`).status, 0, "removing twice is fine");
    });
});
