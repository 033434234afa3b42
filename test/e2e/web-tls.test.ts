/**
 * A web reached over SSH with a certificate, through the real Pulumi engine and the real
 * Concourse web: it serves HTTPS with the certificate the stack names, a worker's registration
 * check logs in over https trusting exactly that certificate, a client given another one is
 * refused, and the preview says loudly when the same web would serve plain HTTP on 0.0.0.0.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { Stack } from "@pulumi/pulumi/automation";
import { token } from "../../components/providers/checks/concourse-api";
import { pendingWithout, release } from "../support/supplied";
import { ensureEngine, makeProject, makeStack, makeTempDir, setStackConfig, StackConfig, tempDirName, TestLxd } from "../support/engine";
import { TestPki } from "../support/pki";
import { ensureCommands } from "../support/tools";

const PORTS = { webSsh: 2341, workerSsh: 2342, https: 2343, tsa: 2344 };
const TSA_INSIDE_WORKER = 2222;

describe("a web over SSH with a certificate (real Concourse, real engine)", function () {
    this.timeout(900_000);
    const root = tempDirName("gw-tls-");
    const lxd = new TestLxd(path.join(root, "lxd"));
    let started = false;
    let stack: Stack;
    let config: StackConfig;
    let pki: TestPki;
    let cert: { cert: string; key: string };
    let web: Record<string, unknown>;

    before(async function () {
        pendingWithout(this, "concourse");
        ensureCommands(["openssl"], ["openssl"]);
        makeTempDir(root);
        const env = ensureEngine(path.join(root, "state"));
        lxd.start();
        started = true;
        pki = new TestPki("e2e");
        cert = pki.server("web");
        const webHost = lxd.sshHost("e2e-tw", PORTS.webSsh, "tw", root);
        // Users reach the web's HTTPS port, and the worker the TSA, through this machine's loopback.
        lxd.lxc("config", "device", "add", "e2e-tw", "https", "proxy", `listen=tcp:127.0.0.1:${PORTS.https}`, "connect=tcp:127.0.0.1:443", "bind=host");
        lxd.lxc("config", "device", "add", "e2e-tw", "tsa", "proxy", `listen=tcp:127.0.0.1:${PORTS.tsa}`, "connect=tcp:127.0.0.1:2222", "bind=host");
        const workerHost = lxd.sshHost("e2e-tb", PORTS.workerSsh, "tb", root, { "security.nesting": "true" });
        lxd.lxc(
            "config",
            "device",
            "add",
            "e2e-tb",
            "tsa",
            "proxy",
            `listen=tcp:127.0.0.1:${TSA_INSIDE_WORKER}`,
            `connect=tcp:127.0.0.1:${PORTS.tsa}`,
            "bind=instance",
        );
        web = { name: "tw", transport: webHost.host.transport, externalUrl: `https://127.0.0.1:${PORTS.https}` };
        config = {
            defaults: { concourse: { version: release().version, binary: { path: release().tarball }, networkMtu: 1500 } },
            // The registration check runs; the task check is the same client, and takes minutes here.
            hosts: [
                {
                    ...workerHost.host,
                    concourse: { tags: ["e2e", "tls"], tsaHost: "127.0.0.1", tsaPort: TSA_INSIDE_WORKER, userNamespace: true, taskCheck: false },
                },
            ],
            web: { ...web, externalUrl: "http://127.0.0.1:8080" },
            secrets: { ...webHost.secrets, ...workerHost.secrets, "tw-cert": cert.cert, "tw-key": cert.key },
        };
        stack = await makeStack(makeProject(path.join(root, "project")), "tls", env, config);
    });

    after(async () => {
        try {
            await stack?.destroy();
        } catch {
            /* the daemon goes next anyway */
        }
        for (const instance of ["e2e-tw", "e2e-tb"]) {
            try {
                lxd.lxc("delete", "--force", instance);
            } catch {
                /* already gone */
            }
        }
        if (started) lxd.stop();
        if (pki) fs.rmSync(pki.dir, { recursive: true, force: true });
        fs.rmSync(root, { recursive: true, force: true });
    });

    it("the preview warns loudly while the web would serve plain HTTP on 0.0.0.0", async () => {
        const preview = await stack.preview();
        assert.match(preview.stdout, /warning: web tw serves plain HTTP on 0\.0\.0\.0 \(http:\/\/127\.0\.0\.1:8080\): the main team's password/);
    });

    it("with the certificate: up serves HTTPS, and the registration check logs in over it trusting that certificate; no warning", async () => {
        config.web = { ...web, tls: { certificateSecret: "tw-cert", keySecret: "tw-key" } };
        await setStackConfig(stack, config);
        let output = "";
        const result = await stack.up({
            onOutput: (out) => {
                output += out;
            },
        });
        assert.doesNotMatch(output, /plain HTTP/);
        const outputs = result.outputs.web.value as { url: string; username: string; password: string };
        assert.strictEqual(outputs.url, `https://127.0.0.1:${PORTS.https}`);
        assert.match(output, /tb-concourse-registration\s+created/, "the registration check passed over https");
        const env = lxd.exec("e2e-tw", "cat /etc/concourse/web.env; stat -c '%a %n' /etc/concourse/web-tls.crt /etc/concourse/web-tls.key");
        for (const line of [
            "CONCOURSE_TLS_BIND_PORT=443",
            "CONCOURSE_TLS_CERT=/etc/concourse/web-tls.crt",
            "CONCOURSE_TLS_KEY=/etc/concourse/web-tls.key",
            `CONCOURSE_EXTERNAL_URL=https://127.0.0.1:${PORTS.https}`,
            "644 /etc/concourse/web-tls.crt",
            "600 /etc/concourse/web-tls.key",
        ]) {
            assert.ok(env.includes(line), `${line} in:\n${env}`);
        }
        assert.match(await token({ ...outputs, ca: cert.cert }), /\S{20,}/, "a client given the certificate logs in");
        assert.match(await token({ ...outputs, ca: pki.read("ca.crt") }), /\S{20,}/, "and one given its CA");
    });

    it("a client given another certificate is refused before it sends the password", async () => {
        const outputs = (await stack.outputs()).web.value as { url: string; username: string; password: string };
        const stranger = new TestPki("stranger");
        try {
            await assert.rejects(token({ ...outputs, ca: stranger.read("ca.crt") }), /unable to verify|certificate/i);
            await assert.rejects(
                token({ ...outputs, ca: stranger.server("web").cert }),
                /unable to get local issuer certificate|other than the one it was given/,
            );
        } finally {
            fs.rmSync(stranger.dir, { recursive: true, force: true });
        }
    });
});
