/** Certificates for tests of an https web: a CA of their own, and server certificates it signs (openssl). */
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** A self-signed client certificate (EC, one day) and its key, written into `dir` (a new folder) and read back. */
export function clientCertificate(dir: string, commonName: string): { certFile: string; cert: string; key: string } {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const certFile = path.join(dir, "client.crt");
    const keyFile = path.join(dir, "client.key");
    execFileSync(
        "openssl",
        [
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            `/CN=${commonName}`,
            "-keyout",
            keyFile,
            "-out",
            certFile,
        ],
        { stdio: "ignore" },
    );
    return { certFile, cert: fs.readFileSync(certFile, "utf8"), key: fs.readFileSync(keyFile, "utf8") };
}

/** A CA, and server certificates for 127.0.0.1 signed by it. */
export class TestPki {
    /** `dir`: where the CA and certificates go (made if missing); a new temp folder by default. */
    constructor(
        readonly name: string,
        readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-tls-")),
    ) {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        this.openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            this.file("ca.key"),
            "-out",
            this.file("ca.crt"),
            "-days",
            "2",
            "-subj",
            `/CN=${name}-ca`,
        );
    }
    file(name: string): string {
        return path.join(this.dir, name);
    }
    read(name: string): string {
        return fs.readFileSync(this.file(name), "utf8");
    }
    private openssl(...args: string[]): void {
        execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
    }
    /** A server certificate (not a CA) for `san`, signed by this CA. */
    server(name: string, san = "IP:127.0.0.1"): { cert: string; key: string } {
        fs.writeFileSync(this.file(`${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
        this.openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", this.file(`${name}.key`), "-out", this.file(`${name}.csr`), "-subj", `/CN=${name}`);
        this.openssl(
            "x509",
            "-req",
            "-in",
            this.file(`${name}.csr`),
            "-CA",
            this.file("ca.crt"),
            "-CAkey",
            this.file("ca.key"),
            "-CAcreateserial",
            "-out",
            this.file(`${name}.crt`),
            "-days",
            "2",
            "-extfile",
            this.file(`${name}.ext`),
        );
        return { cert: this.read(`${name}.crt`), key: this.read(`${name}.key`) };
    }
}
