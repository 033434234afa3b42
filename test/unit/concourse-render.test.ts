/** The Concourse web and worker renderers, the web's plan, and the stack's web section. */
import * as assert from "assert";
import { linkOf } from "../../components/lib/plan/chain";
import { planWebHost } from "../../components/lib/plan/web-plan";
import {
    renderAuthorizedWorkerKeys,
    renderConcourseWeb,
    renderWebEnv,
    renderWebSecretEnv,
    renderWorkerAdmission,
    webKeysTarget,
} from "../../components/lib/render/concourse-web";
import { renderConcourseWorker, renderWorkerEnv, renderWorkerUnit } from "../../components/lib/links/concourse-worker/render";
import { webSpec } from "../../components/chain/concourse-web";
import { parseStack } from "../../stacks/checks/stack";
import { planStack } from "../../stacks/render/offline-render";
import { NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";

const release = { url: "https://downloads.example.test/concourse.tgz", sha256: "a".repeat(64) };
const worker = {
    name: "gpu-a",
    version: "8.2.5",
    tsaHost: "ci.example.test",
    tsaPort: 2222,
    tsaPublicKey: TSA_KEY,
    tags: ["gpu", "gpu-devices=0,1"],
    workDir: "/opt/concourse/worker",
    binary: release,
    containerdConfig: "version = 2\n",
    inUserNamespace: false,
    privilegedMode: "ignore" as const,
};

describe("Concourse worker (render)", () => {
    it("keeps every listener on loopback, sets the MTU only when asked, and tags as flags", () => {
        const env = renderWorkerEnv({ ...worker, networkMtu: 1400 });
        for (const k of [
            "CONCOURSE_BIND_IP",
            "CONCOURSE_DEBUG_BIND_IP",
            "CONCOURSE_HEALTHCHECK_BIND_IP",
            "CONCOURSE_BAGGAGECLAIM_BIND_IP",
            "CONCOURSE_BAGGAGECLAIM_DEBUG_BIND_IP",
        ]) {
            assert.match(env, new RegExp(`^${k}=127\\.0\\.0\\.1$`, "m"));
        }
        assert.match(env, /^CONCOURSE_CONTAINERD_MTU=1400$/m);
        assert.doesNotMatch(renderWorkerEnv(worker), /MTU/);
        assert.match(renderWorkerUnit(worker), / \\\n {2}--tag=gpu-devices=0,1\n/);
    });

    it("always sets the privileged mode, so Concourse's own default (full) never applies", () => {
        assert.match(renderWorkerEnv(worker), /^CONCOURSE_CONTAINERD_PRIVILEGED_MODE=ignore$/m);
        assert.match(renderWorkerEnv({ ...worker, privilegedMode: "full" }), /^CONCOURSE_CONTAINERD_PRIVILEGED_MODE=full$/m);
    });

    it("hides overlayfs's metacopy offer only in a user namespace", () => {
        assert.doesNotMatch(renderWorkerUnit(worker), /TemporaryFileSystem/);
        assert.match(renderWorkerUnit({ ...worker, inUserNamespace: true }), /^TemporaryFileSystem=\/sys\/module\/overlay\/parameters:ro$/m);
    });

    it("a TSA key known only during up is a generated file; a registration check follows the worker step", () => {
        const rendered = renderConcourseWorker({
            ...worker,
            tsaPublicKey: undefined,
            registration: { url: "http://127.0.0.1:8080", username: "admin", timeoutSeconds: 120, task: true },
        });
        const key = rendered.files.find((f) => f.path === "/etc/concourse/tsa_host_key.pub")!;
        assert.deepStrictEqual({ generated: key.generated, content: key.content }, { generated: "tsa-host-key.public", content: "" });
        assert.deepStrictEqual(rendered.checks, [
            {
                name: "registration",
                kind: "worker-registration",
                after: "concourse-worker",
                worker: "gpu-a",
                tags: worker.tags,
                unit: "concourse-worker.service",
                url: "http://127.0.0.1:8080",
                username: "admin",
                timeoutSeconds: 120,
                task: true,
            },
        ]);
        assert.ok(
            rendered.files.some((f) => f.path === "/usr/local/lib/gpu-workers/concourse-install.sh"),
            "the installer the worker script runs comes along",
        );
    });
});

describe("Concourse worker: what a privileged step gets (concourse.privilegedMode)", () => {
    const planFor = (extra?: Record<string, unknown>) => {
        const raw = stackWith({ name: "gpu-a", inventory: NO_GPU, ...(extra ? { extra } : {}) });
        return planStack(parseStack(raw), "/").hosts[0];
    };
    const fileOf = (plan: ReturnType<typeof planFor>, path: string) => plan.files.find((f) => f.path === path)!.content;

    it("ignore by default: the env file says so, no privileged tag, and the wrapper refuses privileged specs", () => {
        const plan = planFor();
        assert.match(fileOf(plan, "/etc/concourse/worker.env"), /^CONCOURSE_CONTAINERD_PRIVILEGED_MODE=ignore$/m);
        assert.ok(!plan.gpu.tags.some((t) => t.startsWith("privileged")), plan.gpu.tags.join(" "));
        assert.strictEqual(JSON.parse(fileOf(plan, "/etc/gpu-workers/runc-wrapper.json")).allowPrivileged, false);
    });

    for (const mode of ["full", "fuse-only"] as const) {
        it(`${mode}: tagged privileged=${mode} in the unit's flags and the registration check alike, and the wrapper allows it`, () => {
            const plan = planFor({ concourse: { privilegedMode: mode, tags: ["extra"] } });
            assert.match(fileOf(plan, "/etc/concourse/worker.env"), new RegExp(`^CONCOURSE_CONTAINERD_PRIVILEGED_MODE=${mode}$`, "m"));
            assert.deepStrictEqual(plan.gpu.tags.slice(-2), [`privileged=${mode}`, "extra"], "after the computed tags, before the extra ones");
            const unitTags = [...fileOf(plan, "/etc/systemd/system/concourse-worker.service").matchAll(/--tag=(\S+)/g)].map((m) => m[1]);
            assert.deepStrictEqual(unitTags, plan.gpu.tags);
            assert.deepStrictEqual(linkOf(plan.links, "ConcourseWorker")?.settings.tags, plan.gpu.tags);
            assert.strictEqual(JSON.parse(fileOf(plan, "/etc/gpu-workers/runc-wrapper.json")).allowPrivileged, true);
        });
    }

    it("a mode Concourse does not know is refused, with its path", () => {
        const raw = stackWith({ name: "gpu-a", inventory: NO_GPU, extra: { concourse: { privilegedMode: "on" } } });
        assert.deepStrictEqual(problemsOf(raw), ["hosts[0].concourse.privilegedMode: expected ignore, fuse-only or full"]);
    });
});

describe("Concourse web (render)", () => {
    const web = {
        version: "8.2.5",
        binary: { path: "/tmp/concourse.tgz", sha256: "2".repeat(64) },
        externalUrl: "http://127.0.0.1:8080",
        bindIp: "127.0.0.1",
        port: 8080,
        tsaPort: 2222,
        postgres: { local: { database: "atc", user: "concourse" } },
        mainTeamUser: "admin",
        keepDatabase: false,
    };

    it("puts no password in the readable env file; the secret one has them", () => {
        const env = renderWebEnv(web);
        assert.doesNotMatch(env, /PASSWORD|ADD_LOCAL_USER/);
        assert.match(env, /^CONCOURSE_POSTGRES_HOST=127\.0\.0\.1$/m);
        assert.match(env, /^CONCOURSE_TSA_BIND_PORT=2222$/m);
        assert.strictEqual(renderWebSecretEnv("admin", "pw", "db"), "CONCOURSE_POSTGRES_PASSWORD=db\nCONCOURSE_ADD_LOCAL_USER=admin:pw\n");
        assert.throws(() => renderWebSecretEnv("ad:min", "pw", "db"), /cannot hold ':'/);
        assert.throws(() => renderWebSecretEnv("admin", "p\nCONCOURSE_X=1", "db"), /the value of CONCOURSE_ADD_LOCAL_USER holds a line break/);
    });

    it("renders the worker keys one per line, and the steps in order: database, then the web", () => {
        assert.strictEqual(renderAuthorizedWorkerKeys([" ssh-ed25519 A a\n", "", "ssh-rsa B"]), "ssh-ed25519 A a\nssh-rsa B\n");
        assert.strictEqual(renderAuthorizedWorkerKeys([]), "");
        assert.throws(() => renderAuthorizedWorkerKeys(["ssh-rsa A\nssh-rsa EVIL"]), /must be one line/);
        const rendered = renderConcourseWeb(web);
        assert.deepStrictEqual(
            rendered.steps.map((s) => s.name),
            ["postgres", "concourse-web"],
        );
        assert.ok(rendered.steps[1].dependsOn.includes("postgres"));
        assert.deepStrictEqual(
            rendered.files
                .filter((f) => f.secret)
                .map((f) => f.path)
                .sort(),
            ["/etc/concourse/session_signing_key", "/etc/concourse/tsa_host_key", "/etc/concourse/web-secrets.env"],
        );
        assert.match(rendered.steps[0].remove!, / --user concourse$/);
        assert.match(renderConcourseWeb({ ...web, keepDatabase: true }).steps[0].remove!, / --keep$/);
    });

    it("joins the worker keys on the host and reloads them; a key change is no restart", () => {
        const step = renderConcourseWeb(web).steps[1];
        assert.match(step.create, / --keys-dir \/etc\/concourse\/worker-keys --keys \/etc\/concourse\/authorized_worker_keys /);
        assert.doesNotMatch(step.create, /--watch \/etc\/concourse\/(authorized_worker_keys|worker-keys)/);
        assert.match(renderWebEnv(web), /^CONCOURSE_TSA_AUTHORIZED_KEYS=\/etc\/concourse\/authorized_worker_keys$/m);
        const given = renderConcourseWeb(web).files.find((f) => f.path === "/etc/concourse/worker-keys/given.pub")!;
        assert.strictEqual(given.generated, "worker-keys.public");
    });

    it("a worker's admission: its key as a file of the web's key folder, a step that admits it and dismisses it on delete", () => {
        const rendered = renderWorkerAdmission("gpu a/../x", webKeysTarget({ bindIp: "0.0.0.0", port: 8080 }));
        const key = rendered.files.find((f) => f.generated)!;
        assert.deepStrictEqual(
            { path: key.path, generated: key.generated },
            { path: "/etc/concourse/worker-keys/worker-gpu-a-..-x.pub", generated: "worker-key.public" },
        );
        const [step] = rendered.steps;
        assert.match(
            step.create,
            /^\/usr\/local\/lib\/gpu-workers\/concourse-web\.sh admit --key \/etc\/concourse\/worker-keys\/worker-gpu-a-\.\.-x\.pub .* --port 8080 --address 127\.0\.0\.1$/,
        );
        assert.match(step.remove!, /^\/usr\/local\/lib\/gpu-workers\/concourse-web\.sh dismiss --key /);
        assert.ok(step.dependsOn.includes(key.path));
    });

    it("an external database has no local step", () => {
        const rendered = renderConcourseWeb({
            ...web,
            postgres: { external: { host: "db.example.test", port: 5432, database: "atc", user: "ci", sslmode: "require" } },
        });
        assert.deepStrictEqual(
            rendered.steps.map((s) => s.name),
            ["concourse-web"],
        );
        assert.match(
            renderWebEnv({ ...web, postgres: { external: { host: "db.example.test", port: 5433, database: "atc", user: "ci", sslmode: "require" } } }),
            /^CONCOURSE_POSTGRES_PORT=5433$/m,
        );
    });

    it("in an LXD instance: the web and TSA ports are published on the server, and workers are told where", () => {
        const plan = planWebHost(
            webSpec("ci", {
                transport: { lxd: { server: { socket: "/x" }, instance: "ci", image: "img", sshPort: 2200, publish: { web: 8080, tsa: 2222 } } },
                version: "8.2.5",
                binary: release,
            }),
        );
        assert.strictEqual(plan.settings.externalUrl, "http://127.0.0.1:8080");
        assert.strictEqual(plan.settings.bindIp, "127.0.0.1");
        assert.deepStrictEqual(plan.tsaForWorkers, { host: "127.0.0.1", port: 2222 });
        assert.deepStrictEqual(plan.access.lxd!.instance.devices.tsa, {
            type: "proxy",
            listen: "tcp:127.0.0.1:2222",
            connect: "tcp:127.0.0.1:2222",
            bind: "host",
        });
        assert.deepStrictEqual(
            plan.steps.map((s) => s.name),
            ["ci-instance", "ci-postgres", "ci-concourse-web"],
        );
    });

    it("with a certificate: HTTPS on tlsPort with the certificate and key placed (secret) and watched, an https external URL", () => {
        const ssh = { ssh: { host: "ci.example.test", privateKey: "k", hostKey: HOST_KEY } };
        const tls = { certificate: "CERT", key: "KEY" };
        const plan = planWebHost(webSpec("ci", { transport: ssh, version: "8.2.5", binary: release, tls, tlsPort: 8443 }));
        assert.strictEqual(plan.settings.externalUrl, "https://ci.example.test:8443");
        const env = renderWebEnv(plan.settings);
        for (const line of [
            "CONCOURSE_TLS_BIND_PORT=8443",
            "CONCOURSE_TLS_CERT=/etc/concourse/web-tls.crt",
            "CONCOURSE_TLS_KEY=/etc/concourse/web-tls.key",
            "CONCOURSE_EXTERNAL_URL=https://ci.example.test:8443",
            "CONCOURSE_BIND_PORT=8080",
        ]) {
            assert.match(env, new RegExp(`^${line}$`, "m"));
        }
        const rendered = renderConcourseWeb(plan.settings);
        assert.deepStrictEqual(
            rendered.files.filter((f) => f.path.includes("web-tls")).map((f) => [f.path, f.mode, f.secret]),
            [
                ["/etc/concourse/web-tls.crt", "0644", true],
                ["/etc/concourse/web-tls.key", "0600", true],
            ],
        );
        assert.match(rendered.steps[1].create, /--watch \/etc\/concourse\/web-tls\.crt --watch \/etc\/concourse\/web-tls\.key/);
        assert.deepStrictEqual(plan.warnings, [], "no warning: the network gets HTTPS");
        assert.doesNotMatch(renderWebEnv(planWebHost(webSpec("ci", { transport: ssh, version: "8.2.5", binary: release })).settings), /TLS/);
        assert.throws(
            () => planWebHost(webSpec("ci", { transport: ssh, version: "8.2.5", binary: release, tls, externalUrl: "http://ci.example.test" })),
            /externalUrl must be an https:\/\/ URL when the web has a certificate/,
        );
        const lxd = planWebHost(
            webSpec("ci", {
                transport: { lxd: { server: { socket: "/x" }, instance: "ci", image: "img", sshPort: 2200, publish: { web: 9443 } } },
                version: "8.2.5",
                binary: release,
                tls,
            }),
        );
        assert.strictEqual(lxd.settings.externalUrl, "https://127.0.0.1:9443");
        assert.strictEqual(lxd.access.lxd!.instance.devices.web.connect, "tcp:127.0.0.1:443", "the published port is the HTTPS one");
    });

    it("warns loudly about a web the network reaches over plain HTTP, and only then; the offline render says it too", () => {
        const ssh = (bindIp?: string) =>
            planWebHost(
                webSpec("ci", {
                    transport: { ssh: { host: "10.0.0.5", privateKey: "k", hostKey: HOST_KEY } },
                    version: "8.2.5",
                    binary: release,
                    ...(bindIp ? { bindIp } : {}),
                }),
            );
        assert.deepStrictEqual(ssh().warnings, [
            "web ci serves plain HTTP on 0.0.0.0 (http://10.0.0.5:8080): the main team's password, which every pulumi up's registration check and every fly login send, crosses the network in clear. " +
                "Give the web a certificate (web.tls: certificateSecret and keySecret), or keep it on loopback (bindIp: 127.0.0.1)",
        ]);
        assert.deepStrictEqual(ssh("127.0.0.1").warnings, []);
        const lxd = (sshAddress: string) =>
            planWebHost(
                webSpec("ci", {
                    transport: { lxd: { server: { socket: "/x" }, instance: "ci", image: "img", sshPort: 2200, sshAddress, publish: { web: 8080 } } },
                    version: "8.2.5",
                    binary: release,
                }),
            );
        assert.deepStrictEqual(lxd("127.0.0.1").warnings, [], "published on the server's loopback");
        assert.match(lxd("192.168.1.5").warnings[0], /^web ci serves plain HTTP on 192\.168\.1\.5 \(http:\/\/192\.168\.1\.5:8080\)/);
    });

    it("bad web arguments are refused with every problem", () => {
        assert.throws(
            () =>
                webSpec("ci", {
                    transport: { ssh: { host: "h", privateKey: "k", hostKey: HOST_KEY } },
                    version: "8.2.5",
                    binary: release,
                    port: 0,
                    mainTeamUser: "a:b",
                    postgres: { local: { user: "x y" } },
                }),
            (e: Error) => /port: expected a port number/.test(e.message) && /mainTeamUser/.test(e.message) && /postgres\.local\.user/.test(e.message),
        );
    });

    it("an external database is checked, and takes the same defaults as in the stack config", () => {
        const transport = { ssh: { host: "h", privateKey: "k", hostKey: HOST_KEY } };
        const spec = webSpec("ci", { transport, version: "8.2.5", binary: release, postgres: { external: { host: "db.example.test", password: "p" } } });
        assert.deepStrictEqual(spec.postgres, { external: { host: "db.example.test", port: 5432, database: "atc", user: "concourse", sslmode: "require" } });
        assert.throws(
            () =>
                webSpec("ci", { transport, version: "8.2.5", binary: release, postgres: { external: { host: "db;rm", sslmode: "sometimes", password: "p" } } }),
            (e: Error) => /postgres\.external\.host/.test(e.message) && /postgres\.external\.sslmode/.test(e.message),
        );
    });
});

describe("the stack's web", () => {
    const webEntry = { name: "ci", transport: { lxd: { instance: "ci", image: "img", sshPort: 2200, publish: { web: 8080, tsa: 2222 } } } };
    const lxdWorker = { name: "w", transport: { lxd: { instance: "w", image: "img", sshPort: 2201 } }, vendor: "none" };

    it("gives the workers the TSA: an LXD worker on the same server reaches it through a proxy device of its own", () => {
        const raw = stackWith();
        const defaults = { concourse: { binary: raw.defaults.concourse.binary } };
        const plans = planStack(parseStack({ defaults, web: webEntry, hosts: [lxdWorker] }), "/");
        const host = plans.hosts[0];
        // The worker's admission shows in the web's plan: its key file and the step, named from the worker.
        assert.deepStrictEqual(
            plans.web!.files.filter((f) => f.component === "ConcourseWorker").map((f) => [f.path, f.resource]),
            [["/etc/concourse/worker-keys/worker-w.pub", "w-concourse-admission-file-etc-concourse-worker-keys-worker-w.pub"]],
        );
        assert.deepStrictEqual(
            plans.web!.steps.slice(-1).map((st) => st.name),
            ["w-concourse-admission-tsa-admission"],
        );
        const env = host.files.find((f) => f.path === "/etc/concourse/worker.env")!.content;
        assert.match(env, /^CONCOURSE_TSA_HOST=127\.0\.0\.1:2222$/m);
        assert.deepStrictEqual(host.hostTransport.lxd!.devices.tsa, {
            type: "proxy",
            listen: "tcp:127.0.0.1:2222",
            connect: "tcp:127.0.0.1:2222",
            bind: "instance",
        });
        assert.strictEqual(host.files.find((f) => f.path === "/etc/concourse/tsa_host_key.pub")!.generated, "tsa-host-key.public");
        assert.ok(host.steps.some((s) => s.name === "w-concourse-registration" && /lists worker w as running/.test(s.run)));
    });

    it("takes the release from the defaults, and reports what does not fit, with paths", () => {
        const raw = stackWith();
        assert.deepStrictEqual(problemsOf({ defaults: {}, web: webEntry, hosts: [], allowNoHosts: true }), [
            "web.binary: required (give {url, sha256} or {path} here or in defaults.concourse.binary)",
        ]);
        const clash = { ...webEntry, name: "w", transport: { lxd: { ...webEntry.transport.lxd, publish: { web: 2201, tsa: 2200 } } }, colour: "red" };
        assert.deepStrictEqual(problemsOf({ defaults: raw.defaults, web: clash, hosts: [], allowNoHosts: true }), ["web: unknown key colour"]);
        const ports = { ...webEntry, name: "w", transport: { lxd: { ...webEntry.transport.lxd, publish: { web: 2201, tsa: 2200 } } } };
        assert.deepStrictEqual(problemsOf({ defaults: { concourse: { binary: raw.defaults.concourse.binary } }, web: ports, hosts: [lxdWorker] }).sort(), [
            "hosts[0].name: w is the web's name too",
            "hosts[0].transport.lxd.sshPort: 2201 is already used by web.transport.lxd.publish.web on the same LXD server",
            "web.transport.lxd.publish.tsa: 2200 is already used by web.transport.lxd.sshPort",
        ]);
    });

    it("an SSH worker cannot reach a TSA published on an LXD server's loopback: it must say where", () => {
        const raw = stackWith({ name: "far", inventory: NO_GPU });
        const host = { ...raw.hosts[0], concourse: { tsaHost: undefined } };
        delete (host.concourse as Record<string, unknown>).tsaHost;
        const problems = problemsOf({ defaults: { concourse: { binary: raw.defaults.concourse.binary } }, web: webEntry, hosts: [host] });
        assert.deepStrictEqual(problems, [
            "hosts[0].concourse.tsaHost: required: the web's TSA is published on its LXD server's 127.0.0.1, which this SSH host cannot reach; give the address it reaches the TSA on",
        ]);
    });
});
