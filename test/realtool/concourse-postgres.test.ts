/**
 * host/concourse-postgres.sh with the real PostgreSQL and systemd of a Debian 12 LXD instance:
 * the web's role and database made (hostile names and passwords included), a changed password
 * set again, idempotent, dropped on remove, kept with --keep.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { shellQuote } from "../../components/lib/host/steps";
import { ensureLxdTools, REPO, TestDaemon, tmpFolder } from "./lxd-support";

const INSTANCE = "gw-pg";
const SCRIPT = "/usr/local/lib/gpu-workers/concourse-postgres.sh";

describe("concourse-postgres.sh (real PostgreSQL in an LXD instance)", function () {
    this.timeout(600_000);
    let daemon: TestDaemon;
    const work = tmpFolder("gw-pg-");

    before(() => {
        ensureLxdTools();
        daemon = TestDaemon.start();
        daemon.importImage("debian-12");
        daemon.lxc("launch", "gpu-workers/debian-12", INSTANCE);
        daemon.lxc("exec", INSTANCE, "--", "sh", "-c", "for i in $(seq 60); do systemctl is-system-running --quiet --wait 2>/dev/null && exit 0; [ \"$(systemctl is-system-running 2>/dev/null)\" = degraded ] && exit 0; sleep 1; done; exit 0");
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
        const left = sh("runuser -u postgres -- psql -tAc \"select count(*) from pg_database where datname = 'atc db'\" -c \"select count(*) from pg_roles where rolname = 'ci-user'\"");
        assert.deepStrictEqual(left.stdout.trim().split("\n"), ["0", "0"]);
        assert.strictEqual(sh(`${SCRIPT} remove ${args}`).status, 0, "removing twice is fine");
    });
});
