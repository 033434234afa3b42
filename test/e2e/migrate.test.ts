/**
 * An existing stack moves to this release without harm, through the real Pulumi engine: the dev
 * stack (Pulumi.dev.yaml: a Concourse web and a worker, each an LXD instance) is made with an
 * earlier release, then this checkout runs `up` on the same state. Two earlier releases: the
 * previous one (its host steps HostCommands, a dynamic provider spawning OpenSSH), and the
 * last one that placed each text file by a remote.Command of its own (before file sets). That
 * up must run no step's remove on a host (placed files, owner records and the web's database
 * are all still there; a file changes only where this release renders it differently, a host
 * script fixed since, and then holds this release's bytes, or a runc the wrapper's installer
 * updated in place to this release's wrapper), restart no service, leave none of
 * the old resources in the state, keep the worker registered, and leave nothing for a following
 * preview to do.
 * Each release is built from its commit beside this checkout (test/support/previous-release.ts):
 * a shallow clone that lacks it fails, saying so.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { Stack } from "@pulumi/pulumi/automation";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { Fly, flyFor } from "../support/concourse";
import { datasetSourceDir, makeProject, makeStack, setStackConfig, StackConfig } from "../support/engine";
import { engineSuite } from "../support/engine-suite";
import { pendingWithout, release as supplied } from "../support/supplied";
import { fileSetContents, fileSetHashes } from "../support/pulumi-graph";
import { pathSlug } from "../../components/lib/host/steps";
import { WRAPPER_PATH } from "../../components/lib/links/runc-wrapper/render";
import { FILE_BY_FILE_RELEASE, PREVIOUS_RELEASE, previousRelease } from "../support/previous-release";

const PORTS = { web: 2360, tsa: 2361, webSsh: 2362, dev: 2363 };
const REMOTE_COMMAND = "command:remote:Command";

/** A resource as the exported state holds it. */
type StateResource = { type: string; urn: string; inputs?: { stdin?: unknown } };

/** An earlier release, and the resources of its stacks that this one replaces. */
interface EarlierRelease {
    commit: string;
    /** How it placed files and ran steps. */
    how: string;
    /** Of the resources this release replaces: those the state held `before` the move, and those it still holds `after`. */
    replaced(before: StateResource[], after: StateResource[]): { held: string[]; left: string[] };
    /** At least this many were held before (the dev stack). */
    least: number;
}

const nameOf = (urn: string) => urn.split("::").pop()!;

/** The stdin of every file set in a state (a set whose stdin is a secret has none to read). */
const fileSetStdins = (resources: StateResource[]): string[] =>
    resources.flatMap((r) => (r.type === REMOTE_COMMAND && /-files$/.test(r.urn) && typeof r.inputs?.stdin === "string" ? [r.inputs.stdin] : []));

const RELEASES: EarlierRelease[] = [
    {
        commit: PREVIOUS_RELEASE,
        how: "host steps as HostCommands",
        replaced: (before, after) => {
            const hostCommands = (resources: StateResource[]) => resources.filter((r) => /:HostCommand$/.test(r.type)).map((r) => r.urn);
            return { held: hostCommands(before), left: hostCommands(after) };
        },
        least: 20,
    },
    {
        commit: FILE_BY_FILE_RELEASE,
        how: "each text file a remote.Command of its own",
        replaced: (before, after) => {
            // Each path a file set of this release places (a binary's too) had a command of its own, `<component>-file-<path>`,
            // whichever set now holds it: the component's, or the worker's set of the program's own files.
            const ends = fileSetStdins(after).flatMap((stdin) => [...fileSetContents(stdin).keys()].map((p) => `-file-${pathSlug(p)}`));
            const ofOwn = (resources: StateResource[]) =>
                resources.filter((r) => r.type === REMOTE_COMMAND && ends.some((end) => nameOf(r.urn).endsWith(end))).map((r) => r.urn);
            return { held: ofOwn(before), left: ofOwn(after) };
        },
        least: 10,
    },
];

/** The dev stack of a checkout, as `npm run up` makes it, on the test's LXD daemon, ports and datasets. */
function devStackConfig(checkout: string, socket: string, release: { tarball: string; version: string }, datasets: string): StackConfig {
    const file = YAML.parse(fs.readFileSync(path.join(checkout, "Pulumi.dev.yaml"), "utf8")) as { config: Record<string, unknown> };
    const defaults = file.config["gpu-workers:defaults"] as { concourse: { version: string; binary: { path: string } } };
    const web = file.config["gpu-workers:web"] as { transport: { lxd: Record<string, unknown> } };
    const hosts = file.config["gpu-workers:hosts"] as { transport: { lxd: Record<string, unknown> } }[];
    assert.strictEqual(hosts.length, 1, `${checkout}/Pulumi.dev.yaml: the dev stack has one worker`);
    defaults.concourse.binary = { path: release.tarball };
    defaults.concourse.version = release.version;
    Object.assign(web.transport.lxd, { server: { socket }, sshPort: PORTS.webSsh, publish: { web: PORTS.web, tsa: PORTS.tsa } });
    Object.assign(hosts[0].transport.lxd, { server: { socket }, sshPort: PORTS.dev, datasetSource: datasets });
    // The earlier releases ran their steps as remote.Commands: this release takes the stack over with the same transport.
    return { defaults, web, hosts, hostSteps: "command" };
}

/** The sha256 of every file this release's file sets place, by path (from the state's stdins). */
function renderedHashes(resources: StateResource[]): Map<string, string> {
    return new Map(fileSetStdins(resources).flatMap((stdin) => [...fileSetHashes(stdin)]));
}

/** A `sha256sum` line of a file the host had, which it now holds as this release renders it. */
function renderedAnew(line: string, now: string[], rendered: Map<string, string>): boolean {
    const file = line.slice(66); // 64 hex digits and two spaces
    const sha = rendered.get(file);
    return sha !== undefined && now.includes(`${sha}  ${file}`);
}

/** A runc wrapper's install record (install-runc-wrapper.sh's state file): the runc path it holds and the wrapper's sha256 there. */
interface WrapperRecord {
    file: string;
    runc: string;
    installed: string;
}

/**
 * Files the wrapper's update rewrote in place, as its installer does when the release brings a
 * new wrapper: each runc path a record names, now holding the wrapper this release placed, and
 * the record itself. Anything else at those paths is not an update and stays refused.
 */
function updatedWrapper(records: WrapperRecord[], now: string[], rendered: Map<string, string>): Set<string> {
    const wrapper = rendered.get(WRAPPER_PATH);
    const updated = records.filter((r) => r.installed === wrapper && now.includes(`${wrapper}  ${r.runc}`));
    return new Set(updated.flatMap((r) => [r.runc, r.file]));
}

/** What a host keeps that a step's remove would take away, and the services that run on it. */
interface HostSnapshot {
    /** sha256 of every file under the folders the program places files in. */
    files: string[];
    /** The owner records' slots and the placed files' records: a remove takes its folder away. */
    records: string[];
    /** Each running service and the id of its current run: a restart gives a new one. */
    services: Record<string, string>;
    /** The runc wrapper's install records. */
    wrapperRecords: WrapperRecord[];
}

const PLACED_FOLDERS = "/etc/concourse /etc/containerd /etc/gpu-workers /etc/systemd/system /usr/local/lib/gpu-workers /usr/local/concourse/bin";

for (const release of RELEASES)
    describe(`an existing stack of ${release.commit.slice(0, 7)} (${release.how}) moves to this release without harm`, function () {
        this.timeout(1_200_000);
        let datasets = "";
        let previous: string;
        // Registered before the suite's hooks, so it runs first: a clone without the release fails here, saying so.
        before(function () {
            pendingWithout(this, "concourse", "command-plugin");
            previous = previousRelease(release.commit);
            datasets = datasetSourceDir("gw-mg-");
            fs.mkdirSync(path.join(datasets, "models"));
            fs.mkdirSync(path.join(datasets, "scratch_rw"));
            fs.chmodSync(path.join(datasets, "scratch_rw"), 0o1777);
        });
        const suite = engineSuite("gw-mg-", "concourse", "command-plugin");
        const { lxd, stacks } = suite;
        let fly: Fly | undefined;
        const instances = ["gpu-workers-web", "gpu-workers-dev"];
        let stack: Stack;
        let project: string;
        const snapshots: Record<string, HostSnapshot> = {};
        let earlierState: StateResource[] = [];
        let upOutput = "";
        /** What the providers said during the up (their own lines, and the deletes), for a failure's message. */
        const said = () =>
            upOutput
                .split("\n")
                .filter((line) => /(^|\s)gpu-workers(-kept)?: |delet/.test(line))
                .join("\n");

        function snapshot(instance: string): HostSnapshot {
            const lines = (script: string) => lxd.exec(instance, script).trim().split("\n").filter(Boolean);
            const services = lines(
                "systemctl list-units --type=service --state=running --no-legend --plain | awk '{print $1}' | grep -v '^user@' | " +
                    'while read -r u; do echo "$u $(systemctl show -p InvocationID --value "$u") $(systemctl show -p MainPID --value "$u")"; done',
            );
            return {
                files: lines(`find ${PLACED_FOLDERS} /usr/sbin/runc -xdev -type f 2>/dev/null | sort | xargs -r sha256sum; true`),
                records: lines("cd /var/lib/gpu-workers && find owners placed -mindepth 1 -maxdepth 1 | sort; true"),
                services: Object.fromEntries(services.map((line) => [line.split(" ")[0], line.split(" ").slice(1).join(" ")])),
                wrapperRecords: lines(`find ${PLACED_FOLDERS} /var/lib/gpu-workers -xdev -type f -name '*.real.state' 2>/dev/null | sort`).map((file) => {
                    const fields = Object.fromEntries(lines(`cat ${file}`).map((line) => line.split("=", 2)));
                    return { file, runc: fields.runc ?? "", installed: fields.installed ?? "" };
                }),
            };
        }

        /** The web's database with a row of a build's data in it, as a stack in use has. */
        const marker = () =>
            lxd.exec("gpu-workers-web", "cd / && runuser -u postgres -- psql -X -tAq -d atc -c 'select note from gw_marker' 2>&1; true").trim();

        after(() => {
            fly?.cleanup();
            if (datasets) fs.rmSync(datasets, { recursive: true, force: true });
        });

        it(`the earlier release (${release.commit.slice(0, 7)}) makes the dev stack`, async () => {
            project = makeProject(path.join(suite.root, "project"), previous);
            stack = await makeStack(project, "dev", suite.env, devStackConfig(previous, lxd.socket, supplied(), datasets));
            stacks.push(stack);
            const started = Date.now();
            const result = await stack.up();
            console.log(`      up with the previous release: ${((Date.now() - started) / 1000).toFixed(0)} s`);
            const web = result.outputs.web.value as { url: string; username: string; password: string };
            fly = await flyFor("gw-migrate", web);
            assert.strictEqual(fly.workers().find((w) => w.name === "dev")?.state, "running");
            lxd.exec(
                "gpu-workers-web",
                "cd / && runuser -u postgres -- psql -X -q -d atc -c \"create table gw_marker (note text); insert into gw_marker values ('kept')\"",
            );
            const state = await stack.exportStack();
            earlierState = state.deployment.resources as StateResource[];
            for (const instance of instances) snapshots[instance] = snapshot(instance);
            assert.ok(snapshots["gpu-workers-dev"].services["concourse-worker.service"], "the worker runs");
            assert.ok(snapshots["gpu-workers-web"].services["concourse-web.service"], "the web runs");
        });

        it("this release's up on the same state runs no remove and restarts nothing", async () => {
            makeProject(project, PACKAGE_ROOT);
            await setStackConfig(stack, devStackConfig(PACKAGE_ROOT, lxd.socket, supplied(), datasets));
            const started = Date.now();
            await stack.up({
                onOutput: (out) => {
                    upOutput += out;
                },
            });
            console.log(`      up with this checkout: ${((Date.now() - started) / 1000).toFixed(0)} s`);
            const rendered = renderedHashes((await stack.exportStack()).deployment.resources as StateResource[]);
            for (const instance of instances) {
                const now = snapshot(instance);
                const was = snapshots[instance];
                const gone = (a: string[], b: string[]) => a.filter((x) => !b.includes(x));
                const wrapperUpdate = updatedWrapper(now.wrapperRecords, now.files, rendered);
                assert.deepStrictEqual(
                    gone(was.files, now.files).filter((line) => !renderedAnew(line, now.files, rendered) && !wrapperUpdate.has(line.slice(66))),
                    [],
                    `${instance}: placed files changed or removed, and not to what this release renders (a remove ran, or a file was rendered anew)\n${said()}`,
                );
                assert.deepStrictEqual(gone(was.records, now.records), [], `${instance}: owner or file records taken away (a remove ran)\n${said()}`);
                const restarted = Object.keys(was.services).filter((unit) => now.services[unit] !== was.services[unit]);
                assert.deepStrictEqual(
                    restarted.map((unit) => `${unit}: ${was.services[unit]} -> ${now.services[unit] ?? "not running"}`),
                    [],
                    `${instance}: services restarted or stopped (InvocationID MainPID)\n${said()}`,
                );
            }
            assert.strictEqual(marker(), "kept", "the web's database is the same (its remove drops it)");
        });

        it("the worker is still registered, none of the old resources is left in the state, and a preview has nothing to do", async () => {
            assert.strictEqual(fly!.workers().find((w) => w.name === "dev")?.state, "running");
            const state = await stack.exportStack();
            const { held, left } = release.replaced(earlierState, state.deployment.resources as StateResource[]);
            assert.ok(held.length >= release.least, `the earlier release's stack held ${release.how} (${held.length} of them)`);
            assert.deepStrictEqual(left, [], `resources of the earlier release left behind (${release.how})`);
            assert.deepStrictEqual(state.deployment.pending_operations ?? [], [], "no operation left pending");
            const preview = await stack.preview();
            const changed = Object.entries(preview.changeSummary).filter(([op, n]) => op !== "same" && n > 0);
            assert.deepStrictEqual(changed, [], "a preview after the move shows no change");
        });
    });
