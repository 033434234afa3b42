/**
 * Renaming a host or the web in the stack, through the real Pulumi engine. The engine creates
 * the new name's resources, then deletes the old name's, on the same machine: the old deletes
 * must not undo what the new resources use (the runc wrapper, the worker's unit, the web's
 * database and release). An LXD host whose instance keeps its name is refused, saying to give
 * renamedFrom, which moves the state to the new name without touching the instance.
 */
import * as assert from "assert";
import { Stack } from "@pulumi/pulumi/automation";
import { e2eConcourseDefaults, PLACEHOLDER_TSA_KEY, suppliedRelease } from "../support/concourse";
import { makeStack, setStackConfig, StackConfig } from "../support/engine";
import { engineSuite } from "../support/engine-suite";
import { pendingWithout } from "../support/supplied";

const OWNERS = "/var/lib/gpu-workers/owners";
const PLACED = "/var/lib/gpu-workers/placed";

describe("renames in the stack, through the Pulumi engine", function () {
    this.timeout(900_000);
    const suite = engineSuite("gw-rn-");
    const { lxd, stacks } = suite;

    const defaults = () => ({ concourse: e2eConcourseDefaults({ tsaHost: "127.0.0.1", tsaPublicKey: PLACEHOLDER_TSA_KEY, tags: ["e2e"] }) });
    /** What a host shows of its Concourse worker: asserted by the tests that need the release (pending without it). */
    const WORKER_LINES = [
        "echo unit=$(systemctl is-active concourse-worker)",
        "sed -n 's/^CONCOURSE_NAME=/name=/p' /etc/concourse/worker.env 2>/dev/null",
        "test -x /usr/local/concourse/bin/concourse && echo release=installed || echo release=gone",
    ];

    /** Runs an up, keeping what it printed and every provider message (a remote command's output comes as a status message). */
    async function upShowing(stack: Stack): Promise<string> {
        let output = "";
        await stack.up({
            onOutput: (out) => {
                output += out;
            },
            onEvent: (e) => {
                if (e.diagnosticEvent) output += `${e.diagnosticEvent.message}\n`;
            },
        });
        return output;
    }

    /** Who applied which step on a machine: the resource of every owner record. */
    const owners = (instance: string) =>
        lxd.exec(instance, `cat ${OWNERS}/*/* 2>/dev/null | sed -n 's/^resource=//p' | sort -u; true`).trim().split("\n").filter(Boolean);
    /** Who placed which file on a machine: the component of every file's user record. */
    const fileUsers = (instance: string) =>
        lxd.exec(instance, `find ${PLACED} -path '*/users/*' -type f -printf '%f\\n' 2>/dev/null | sort -u; true`).trim().split("\n").filter(Boolean);

    describe("a machine reached over SSH, renamed", () => {
        const instance = "e2e-rn";
        let stack: Stack;
        let config: StackConfig;
        let host: Record<string, unknown>;
        let pristine: string;
        const fingerprint = () =>
            lxd.exec(
                instance,
                "sha256sum /usr/sbin/runc /etc/containerd/config.toml; ls /etc/containerd /usr/local/lib/gpu-workers /var/lib/gpu-workers 2>&1; true",
            );
        const lines = (script: string[]) =>
            lxd
                .exec(instance, [...script, "true"].join("; "))
                .trim()
                .split("\n");
        /** The chain's end on the host: the wrapper in runc's place, containerd's drop-in. */
        const onHost = () =>
            lines([
                "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapper=in-place || echo wrapper=gone",
                "test -f /etc/containerd/conf.d/gpu-workers.toml && echo runtime=configured || echo runtime=gone",
            ]);
        /** The Concourse worker on the host, as each step left it (read either way; asserted only with the release). */
        const workerOnHost = () => lines(WORKER_LINES);
        const seen: Record<"first" | "renamed" | "destroyed", string[]> = { first: [], renamed: [], destroyed: [] };

        before(async () => {
            const made = lxd.sshHost(instance, 2331, "rn-a", suite.root);
            host = made.host;
            pristine = fingerprint();
            config = { defaults: defaults(), hosts: [host], secrets: made.secrets };
            stack = await makeStack(suite.project, "rn-ssh", suite.env, config);
            stacks.push(stack);
        });

        after(() => {
            try {
                lxd.lxc("delete", "--force", instance);
            } catch {
                /* already gone */
            }
        });

        it("up under the first name records each undoable step as its resource's, and each file as its component's", async () => {
            await stack.up();
            seen.first = workerOnHost();
            assert.deepStrictEqual(onHost(), ["wrapper=in-place", "runtime=configured"]);
            const steps = owners(instance);
            assert.ok(steps.length >= 5 && steps.every((r) => r.startsWith("rn-a-")), steps.join("\n"));
            const files = fileUsers(instance);
            // The program's own folders' one set, and with the Concourse worker its system files and the release's.
            assert.ok(files.length >= (suppliedRelease() ? 3 : 1) && files.every((r) => r.startsWith("rn-a-")), files.join("\n"));
        });

        it("with the Concourse release: the worker runs under the first name, from the release it installed", function () {
            pendingWithout(this, "concourse");
            assert.deepStrictEqual(seen.first, ["unit=active", "name=rn-a", "release=installed"]);
        });

        it("renamed: the new name's resources take the machine over, and the old name's deletes leave it as the new ones made it", async () => {
            config.hosts = [{ ...host, name: "rn-b" }];
            await setStackConfig(stack, config);
            const output = await upShowing(stack);
            seen.renamed = workerOnHost();
            assert.deepStrictEqual(onHost(), ["wrapper=in-place", "runtime=configured"]);
            const steps = owners(instance);
            assert.ok(steps.length >= 5 && steps.every((r) => r.startsWith("rn-b-")), `only the new name's step records are left:\n${steps.join("\n")}`);
            const files = fileUsers(instance);
            assert.ok(
                files.length >= (suppliedRelease() ? 3 : 1) && files.every((r) => r.startsWith("rn-b-")),
                `only the new name's file records are left:\n${files.join("\n")}`,
            );
            assert.match(
                output,
                /gpu-workers-kept: rn-a-runc-wrapper-runc-wrapper \(step:runc-wrapper\): left in place: applied since by rn-b-runc-wrapper-runc-wrapper/,
                "the up says what it left to whom",
            );
        });

        it("with the Concourse release: the old name's deletes left the worker running, now under the new name, and its release", function () {
            pendingWithout(this, "concourse");
            assert.deepStrictEqual(seen.renamed, ["unit=active", "name=rn-b", "release=installed"]);
        });

        it("a second up changes nothing; destroy still removes everything, leaving the machine as it was", async () => {
            const again = await stack.up();
            const changed = Object.entries(again.summary.resourceChanges ?? {})
                .filter(([, n]) => (n ?? 0) > 0)
                .map(([k]) => k);
            assert.deepStrictEqual(changed, ["same"]);
            await stack.destroy();
            seen.destroyed = workerOnHost();
            assert.strictEqual(fingerprint(), pristine);
            assert.deepStrictEqual(onHost(), ["wrapper=gone", "runtime=gone"]);
        });

        it("with the Concourse release: destroy stopped the worker and removed its release", function () {
            pendingWithout(this, "concourse");
            // The unit is gone (so is its env file, and the name with it); systemd may still remember how its last stop ended (failed).
            const [unit, ...rest] = seen.destroyed;
            assert.match(unit, /^unit=(inactive|failed)$/);
            assert.deepStrictEqual(rest, ["release=gone"]);
        });
    });

    describe("a web over SSH with its PostgreSQL, renamed", () => {
        const instance = "e2e-rw";
        const webPort = 2333;
        let stack: Stack;
        let config: StackConfig;
        let web: Record<string, unknown>;
        const database = () =>
            lxd
                .exec(
                    instance,
                    [
                        "runuser -u postgres -- psql -X -tAq -d atc -c 'select note from gw_marker' 2>/dev/null || echo database=gone",
                        "echo web=$(systemctl is-active concourse-web)",
                        "test -x /usr/local/concourse/bin/concourse && echo release=installed || echo release=gone",
                        "true",
                    ].join("; "),
                )
                .trim()
                .split("\n");

        before(async function () {
            pendingWithout(this, "concourse");
            const made = lxd.sshHost(instance, 2332, "rw", suite.root);
            const ssh = (made.host.transport as { ssh: Record<string, unknown> }).ssh;
            lxd.lxc("config", "device", "add", instance, "web", "proxy", `listen=tcp:127.0.0.1:${webPort}`, "connect=tcp:127.0.0.1:8080", "bind=host");
            web = { name: "rw-a", transport: { ssh }, externalUrl: `http://127.0.0.1:${webPort}` };
            config = { defaults: defaults(), hosts: [], web, secrets: made.secrets };
            stack = await makeStack(suite.project, "rn-web", suite.env, config);
            await stack.setConfig("gpu-workers:allowNoHosts", { value: "true" });
            stacks.push(stack);
        });

        after(() => {
            try {
                lxd.lxc("delete", "--force", instance);
            } catch {
                /* already gone */
            }
        });

        it("up makes the web and its database, which then holds a build's data", async () => {
            await stack.up();
            lxd.exec(instance, "runuser -u postgres -- psql -X -q -d atc -c \"create table gw_marker (note text); insert into gw_marker values ('kept')\"");
            assert.deepStrictEqual(database(), ["kept", "web=active", "release=installed"]);
        });

        it("renamed: the database and the release stay, the web runs on with the new name's password", async () => {
            config.web = { ...web, name: "rw-b" };
            await setStackConfig(stack, config);
            const result = await stack.up();
            assert.deepStrictEqual(database(), ["kept", "web=active", "release=installed"]);
            const outputs = result.outputs.web.value as { url: string; username: string; password: string };
            const login = await fetch(`${outputs.url}/sky/issuer/token`, {
                method: "POST",
                headers: { authorization: `Basic ${Buffer.from("fly:Zmx5").toString("base64")}`, "content-type": "application/x-www-form-urlencoded" },
                body: new URLSearchParams({ grant_type: "password", username: outputs.username, password: outputs.password, scope: "openid" }),
            });
            assert.strictEqual(login.status, 200, "the new name's generated password logs in");
        });

        it("destroy drops the database: a real delete still removes everything", async () => {
            await stack.destroy();
            assert.deepStrictEqual(database(), ["database=gone", "web=inactive", "release=gone"]);
        });
    });

    describe("an LXD host renamed, its instance name kept", () => {
        const instance = "e2e-lr";
        let stack: Stack;
        let config: StackConfig;
        const lxdHost = (name: string, extra: Record<string, unknown> = {}) => ({
            name,
            transport: { lxd: { server: { socket: lxd.socket }, instance, image: "gpu-workers/debian-12", sshPort: 2334, shiftWritable: false } },
            vendor: "none",
            ...extra,
        });
        const uuid = () => lxd.lxc("config", "get", instance, "volatile.uuid").trim();
        /** The wrapper in runc's place, and the Concourse worker's unit and name (asserted only with the release). */
        const onHost = () =>
            lxd
                .exec(
                    instance,
                    [
                        "cmp -s /usr/sbin/runc /usr/local/lib/gpu-workers/runc-wrapper && echo wrapper=in-place || echo wrapper=gone",
                        ...WORKER_LINES.slice(0, 2),
                        "true",
                    ].join("; "),
                )
                .trim()
                .split("\n");
        const wrapper = () => onHost()[0];
        const seen: Record<"made" | "refused" | "moved", string[]> = { made: [], refused: [], moved: [] };
        let made: string;

        before(async () => {
            config = { defaults: defaults(), hosts: [lxdHost("lr-a")] };
            stack = await makeStack(suite.project, "rn-lxd", suite.env, config);
            stacks.push(stack);
            await stack.up();
            made = uuid();
            seen.made = onHost();
            assert.strictEqual(wrapper(), "wrapper=in-place");
        });

        it("is refused at up, saying to give renamedFrom; the instance and its worker are untouched", async () => {
            config.hosts = [lxdHost("lr-b")];
            await setStackConfig(stack, config);
            await assert.rejects(stack.up(), /instance e2e-lr already exists on the server[\s\S]*renamedFrom: <its old name>/);
            assert.strictEqual(uuid(), made, "the same instance");
            seen.refused = onHost();
            assert.strictEqual(wrapper(), "wrapper=in-place");
            // Back to the old name: what the refused up made before the instance (the new name's keys) goes again.
            config.hosts = [lxdHost("lr-a")];
            await setStackConfig(stack, config);
            await stack.up();
            assert.strictEqual(uuid(), made);
        });

        it("with renamedFrom the state moves to the new name: the same instance, nothing made or deleted", async () => {
            config.hosts = [lxdHost("lr-b", { renamedFrom: "lr-a" })];
            await setStackConfig(stack, config);
            const result = await stack.up();
            const changed = result.summary.resourceChanges ?? {};
            assert.ok(!changed.create && !changed.delete && !changed.replace, JSON.stringify(changed));
            assert.strictEqual(uuid(), made);
            seen.moved = onHost();
            assert.strictEqual(wrapper(), "wrapper=in-place");
        });

        it("with the Concourse release: the worker ran under the old name, untouched by the refused up, and under the new one after renamedFrom", function () {
            pendingWithout(this, "concourse");
            assert.deepStrictEqual(seen.made, ["wrapper=in-place", "unit=active", "name=lr-a"], "made");
            assert.deepStrictEqual(seen.refused, ["wrapper=in-place", "unit=active", "name=lr-a"], "untouched by the refused up");
            assert.deepStrictEqual(seen.moved, ["wrapper=in-place", "unit=active", "name=lr-b"], "after renamedFrom");
        });

        it("destroy removes the instance", async () => {
            await stack.destroy();
            assert.doesNotMatch(lxd.lxc("list", "--format", "csv", "-c", "n"), new RegExp(instance));
        });
    });
});
