/**
 * What the registration and task checks trust when they talk to an https web (concourse-api's
 * `ca`): the CA given, or else exactly the web's own certificate, never anything else. Against a
 * real https server on loopback with certificates made by openssl, as a web would have them.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as https from "https";
import { AddressInfo } from "net";
import { token } from "../../components/providers/checks/concourse-api";
import { TestPki } from "../support/pki";
import { ensureCommands } from "../support/tools";

describe("the checks' trust in an https web (real TLS, certificates from openssl)", function () {
    this.timeout(60_000);
    let pki: TestPki;
    let other: TestPki;
    let web: { cert: string; key: string };
    let server: https.Server;
    let url: string;

    before(async () => {
        ensureCommands(["openssl"], ["openssl"]);
        pki = new TestPki("web");
        other = new TestPki("other");
        web = pki.server("web");
        // Answers the password grant the checks start with, as Concourse's web does.
        server = https.createServer({ cert: web.cert, key: web.key }, (req, res) => {
            res.setHeader("content-type", "application/json");
            res.end(JSON.stringify({ access_token: req.url === "/sky/issuer/token" && req.method === "POST" ? "t0ken" : undefined }));
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    after(() => {
        server?.close();
        for (const p of [pki, other]) if (p) fs.rmSync(p.dir, { recursive: true, force: true });
    });

    const login = (ca?: string, at = url) => token({ url: at, username: "admin", password: "pw", ...(ca === undefined ? {} : { ca }) });

    it("trusts the CA given, or exactly the web's own certificate", async () => {
        assert.strictEqual(await login(pki.read("ca.crt")), "t0ken");
        assert.strictEqual(await login(web.cert), "t0ken");
    });

    it("refuses another CA, another certificate of the same CA, and no ca at all (the system's CAs do not know it)", async () => {
        await assert.rejects(login(other.read("ca.crt")), /unable to verify|self.signed|certificate/i);
        const sibling = pki.server("sibling");
        await assert.rejects(
            login(sibling.cert),
            /unable to get local issuer certificate|the web presented a certificate \(sha256 [0-9A-F:]+\) other than the one it was given/,
        );
        await assert.rejects(login(), /unable to verify|self.signed|certificate/i);
    });

    it("checks the host name against the certificate, pinned or not", async () => {
        const localhost = url.replace("127.0.0.1", "localhost");
        await assert.rejects(login(pki.read("ca.crt"), localhost), /Hostname\/IP does not match|altnames/i);
        await assert.rejects(login(web.cert, localhost), /Hostname\/IP does not match|altnames/i);
    });
});
