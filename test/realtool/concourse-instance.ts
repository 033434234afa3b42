/**
 * A Concourse web inside a test's LXD container (HealthInstance: Debian 12 with systemd), from the
 * supplied release, for the tests that run one real worker there: the release unpacked where the
 * chain puts it, the web's keys and the worker's key generated where the worker's unit reads them,
 * PostgreSQL, and the web reached from here through a proxy device on a free loopback port.
 */
import * as fs from "fs";
import { CONCOURSE_PATHS } from "../../components/lib/links/concourse-worker/render";
import { ConcourseRelease, Fly, flyFor } from "../support/concourse";
import { freePort } from "./lxd-support";
import { HealthInstance } from "./gpu-health-instance";

/** The web's TSA port inside the container, where the worker dials it. */
export const TSA_PORT = 2222;

/** Starts the web in `inst` from release `r` (its main-team user `admin` with `password`), and returns fly logged in to it. */
export async function startWebIn(inst: HealthInstance, r: ConcourseRelease, target: string, password: string): Promise<Fly> {
    const port = await freePort();
    inst.d.lxc("config", "device", "add", inst.name, "web", "proxy", `listen=tcp:127.0.0.1:${port}`, "connect=tcp:127.0.0.1:8080");
    inst.put("/tmp/concourse.tgz", fs.readFileSync(r.tarball), "0644");
    const c = CONCOURSE_PATHS.binary;
    const tsaKey = CONCOURSE_PATHS.tsaPublicKey.replace(/\.pub$/, "");
    inst.exec(
        [
            "set -e",
            "tar -xzf /tmp/concourse.tgz -C /usr/local && rm /tmp/concourse.tgz",
            "mkdir -p /etc/concourse",
            `${c} generate-key -t rsa -f /etc/concourse/session_signing_key`,
            // Its public half is where the worker's unit reads the TSA's key (CONCOURSE_PATHS.tsaPublicKey).
            `${c} generate-key -t ssh -f ${tsaKey}`,
            `${c} generate-key -t ssh -f ${CONCOURSE_PATHS.workerKey}`,
            "systemctl start postgresql",
            `su postgres -c "psql -qc \\"CREATE USER concourse PASSWORD '${password}'\\"" && su postgres -c "createdb -O concourse atc"`,
            `systemd-run --unit concourse-web ${c} web --add-local-user admin:${password} --main-team-local-user admin ` +
                `--session-signing-key /etc/concourse/session_signing_key --tsa-host-key ${tsaKey} --tsa-bind-port ${TSA_PORT} ` +
                `--tsa-authorized-keys ${CONCOURSE_PATHS.workerKey}.pub --postgres-host 127.0.0.1 --postgres-user concourse ` +
                `--postgres-password ${password} --postgres-database atc --external-url http://127.0.0.1:${port}`,
        ].join("\n"),
    );
    await inst.until(() => inst.status(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080'`) === 0, 120_000, "the web to listen");
    return flyFor(target, { url: `http://127.0.0.1:${port}`, username: "admin", password });
}
