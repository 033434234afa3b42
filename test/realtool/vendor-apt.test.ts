/**
 * Vendor repositories with real apt, gpg and dpkg: a local file: repository built here from
 * small packages (dpkg-deb, dpkg-scanpackages) and signed by a test key. The source, keyring
 * and pin the program renders let apt install the pinned version and hold it against a newer
 * one; a repository signed by another key is refused, naming that key; remove takes the
 * package away; a preinstalled toolkit below the CVE floor is refused. apt runs against its
 * own folders (APT_CONFIG) and dpkg against its own root, never the machine's.
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { spawnSync } from "child_process";
import { keyFingerprints } from "../../components/lib/repos/openpgp";
import { checkedRepository, readVendorRepository, VendorRepository } from "../../components/lib/repos/vendor-repos";
import { AptPaths } from "../../components/lib/render/apt-sources";
import { renderToolkitAptFiles, toolkitScriptArgs } from "../../components/lib/render/container-toolkit";
import { cveFloorArgs } from "../../components/lib/toolkit/versions";
import { ensureCommands } from "../support/tools";
import { HOST_DIR, sh, tempDir } from "./wrapper-support";

const TOOLKIT = path.join(HOST_DIR, "container-toolkit.sh");
const REFRESH = path.join(HOST_DIR, "apt-vendor-source.sh");

describe("vendor apt repositories (real apt, gpg, dpkg)", function () {
    this.timeout(300_000);
    let dir: string;
    let gnupg: string;
    let repoDir: string;
    let root: string;
    let env: NodeJS.ProcessEnv;
    let paths: AptPaths;
    const keys: Record<"vendor" | "other", { fingerprint: string; armored: string }> = {} as never;

    const gpg = (args: string[]) => sh("gpg", ["--homedir", gnupg, "--batch", "--quiet", ...args]);

    function makeKey(name: string): { fingerprint: string; armored: string } {
        gpg(["--passphrase", "", "--quick-gen-key", `${name} <${name}@gpu-workers.test>`, "ed25519", "sign", "never"]);
        const fpr = gpg(["--with-colons", "--list-keys", `${name}@gpu-workers.test`]).split("\n").find((l) => l.startsWith("fpr:"))!.split(":")[9];
        return { fingerprint: fpr, armored: gpg(["--armor", "--export", fpr]) };
    }

    function deb(name: string, version: string, depends?: string): void {
        const build = path.join(dir, "build", `${name}_${version}`);
        fs.mkdirSync(path.join(build, "DEBIAN"), { recursive: true });
        fs.mkdirSync(path.join(build, "usr", "share", "doc", name), { recursive: true });
        fs.writeFileSync(path.join(build, "usr", "share", "doc", name, "version"), `${version}\n`);
        fs.writeFileSync(path.join(build, "DEBIAN", "control"), [
            `Package: ${name}`, `Version: ${version}`, "Architecture: all", "Maintainer: gpu-workers tests <t@gpu-workers.test>",
            ...(depends ? [`Depends: ${depends}`] : []), `Description: test stand-in for ${name}`, "",
        ].join("\n"));
        sh("dpkg-deb", ["--root-owner-group", "--build", build, path.join(repoDir, `${name}_${version}_all.deb`)]);
    }

    /** Packages and an InRelease signed by `signer`. */
    function publish(signer: string): void {
        const packages = sh("dpkg-scanpackages", ["--multiversion", "."], { cwd: repoDir });
        fs.writeFileSync(path.join(repoDir, "Packages"), packages);
        const sha = crypto.createHash("sha256").update(packages).digest("hex");
        const release = ["Origin: gpu-workers-test", "Label: gpu-workers-test", `Date: ${new Date().toUTCString()}`, "SHA256:", ` ${sha} ${Buffer.byteLength(packages)} Packages`, ""].join("\n");
        fs.writeFileSync(path.join(repoDir, "Release"), release);
        fs.rmSync(path.join(repoDir, "InRelease"), { force: true });
        gpg(["--local-user", signer, "--clearsign", "--output", path.join(repoDir, "InRelease"), path.join(repoDir, "Release")]);
    }

    function repository(): VendorRepository {
        return { id: "test-toolkit", uris: `file:${repoDir}`, suites: "/", components: "", key: keys.vendor.armored, fingerprint: keys.vendor.fingerprint };
    }

    /** Places what the toolkit component renders, at the test's apt paths. */
    function place(version: string): void {
        for (const file of renderToolkitAptFiles({ vendor: "nvidia", version, repository: repository() }, paths)) {
            fs.mkdirSync(path.dirname(file.path), { recursive: true });
            fs.writeFileSync(file.path, file.content, { mode: 0o644 });
        }
    }

    function run(cmd: string, args: string[]) {
        const r = spawnSync(cmd, args, { encoding: "utf8", env, timeout: 120_000 });
        return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
    }

    function installed(pkg: string): string {
        return run("dpkg-query", ["-W", "-f", "${db:Status-Status} ${Version}", pkg]).out.trim();
    }

    before(() => {
        ensureCommands(["gpg", "gpgv", "dpkg-deb", "dpkg-scanpackages", "apt-get"], ["gnupg", "gpgv", "dpkg", "dpkg-dev", "apt"]);
        dir = tempDir("gw-apt-");
        fs.chmodSync(dir, 0o755);
        gnupg = path.join(dir, "gnupg");
        fs.mkdirSync(gnupg, { mode: 0o700 });
        keys.vendor = makeKey("vendor");
        keys.other = makeKey("other");
        repoDir = path.join(dir, "repo");
        fs.mkdirSync(repoDir);
        for (const v of ["1.17.7-1", "1.17.8-1", "1.17.9-1"]) {
            deb("libnvidia-container1", v);
            deb("nvidia-container-toolkit-base", v);
            deb("nvidia-container-toolkit", v, `nvidia-container-toolkit-base (= ${v}), libnvidia-container1 (= ${v})`);
        }
        publish(keys.vendor.fingerprint);
        // apt's and dpkg's own folders.
        root = path.join(dir, "root");
        const admin = path.join(root, "var", "lib", "dpkg");
        for (const d of ["info", "updates", "triggers"]) fs.mkdirSync(path.join(admin, d), { recursive: true });
        fs.writeFileSync(path.join(admin, "status"), "");
        fs.writeFileSync(path.join(admin, "available"), "");
        const etc = path.join(dir, "etc", "apt");
        for (const d of ["sources.list.d", "preferences.d", "apt.conf.d", "trusted.gpg.d"]) fs.mkdirSync(path.join(etc, d), { recursive: true });
        for (const d of ["state/lists/partial", "cache/archives/partial", "log"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
        paths = { keyringDir: path.join(dir, "keyrings"), sourcesDir: path.join(etc, "sources.list.d"), preferencesDir: path.join(etc, "preferences.d") };
        const conf = path.join(dir, "apt.conf");
        fs.writeFileSync(conf, [
            `Dir::Etc "${etc}/";`,
            `Dir::State "${dir}/state/";`,
            `Dir::State::status "${admin}/status";`,
            `Dir::Cache "${dir}/cache/";`,
            `Dir::Log "${dir}/log/";`,
            'APT::Sandbox::User "root";',
            `DPkg::Options { "--root=${root}"; "--log=${dir}/log/dpkg.log"; };`,
            "",
        ].join("\n"));
        env = { ...process.env, APT_CONFIG: conf, DPKG_ADMINDIR: admin, GPU_WORKERS_STATE_DIR: path.join(dir, "gw-state"), DEBIAN_FRONTEND: "noninteractive" };
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("the program's fingerprints are gpg's, for the test key and for the shipped NVIDIA key", () => {
        assert.strictEqual(keyFingerprints(keys.vendor.armored).primary, keys.vendor.fingerprint);
        const data = readVendorRepository("nvidia-container-toolkit");
        const shipped = path.join(dir, "shipped.asc");
        fs.writeFileSync(shipped, data.key!.join("\n") + "\n");
        const gpgFprs = sh("gpg", ["--homedir", gnupg, "--batch", "--with-colons", "--show-keys", shipped]).split("\n").filter((l) => l.startsWith("fpr:")).map((l) => l.split(":")[9]);
        const ours = keyFingerprints(data.key!.join("\n"));
        assert.deepStrictEqual([ours.primary, ...ours.subkeys], gpgFprs);
        assert.strictEqual(checkedRepository(data)!.fingerprint, "C95B321B61E88C1809C4F759DDCAE044F796ECB0");
    });

    it("a key file that is not the published key is refused before it reaches a host", () => {
        const data = { ...readVendorRepository("nvidia-container-toolkit"), key: keys.other.armored.trimEnd().split("\n") };
        assert.throws(() => checkedRepository(data), new RegExp(`fingerprint is ${keys.other.fingerprint}, but the vendor publishes C95B321B61E88C1809C4F759DDCAE044F796ECB0`));
    });

    it("apt installs the pinned version from the vendor source and holds it against a newer one", () => {
        place("1.17.8");
        const r = run("bash", [TOOLKIT, "ensure", ...toolkitScriptArgs({ vendor: "nvidia", version: "1.17.8", repository: repository() }, paths).filter((a) => a !== "--dev-char-links")]);
        assert.strictEqual(r.status, 0, r.out);
        for (const pkg of ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1"]) assert.strictEqual(installed(pkg), "installed 1.17.8-1", pkg);
        const upgrade = run("apt-get", ["-y", "-q", "upgrade"]);
        assert.strictEqual(upgrade.status, 0, upgrade.out);
        assert.strictEqual(installed("nvidia-container-toolkit"), "installed 1.17.8-1", "an upgrade leaves the pin where it is");
        assert.strictEqual(installed("libnvidia-container1"), "installed 1.17.8-1");
        assert.match(run("apt-cache", ["policy", "nvidia-container-toolkit"]).out, /Candidate: 1\.17\.8-1/);
        assert.strictEqual(run("bash", [TOOLKIT, "ensure", "--vendor", "nvidia", "--version", "1.17.8"]).status, 0, "a second run does nothing");
    });

    it("remove takes away the package it installed", () => {
        const r = run("bash", [TOOLKIT, "remove", "--vendor", "nvidia", "--version", "1.17.8"]);
        assert.strictEqual(r.status, 0, r.out);
        assert.notStrictEqual(installed("nvidia-container-toolkit"), "installed 1.17.8-1");
    });

    it("a repository signed by another key is refused, naming that key", () => {
        publish(keys.other.fingerprint);
        const repo = repository();
        const r = run("bash", [REFRESH, "refresh", "--source", path.join(paths.sourcesDir, `gpu-workers-${repo.id}.sources`), "--keyring", path.join(paths.keyringDir, `gpu-workers-${repo.id}.asc`), "--fingerprint", repo.fingerprint]);
        assert.notStrictEqual(r.status, 0, r.out);
        const keyId = keys.other.fingerprint.slice(-16);
        assert.match(r.out, new RegExp(`apt refused the repository of .*: it is signed by key [0-9A-F]*${keyId}`, "i"), r.out);
        assert.match(r.out, new RegExp(`trusts only the vendor's key ${keys.vendor.fingerprint}`));
        publish(keys.vendor.fingerprint);
    });

    it("a preinstalled toolkit below the CVE floor is refused, naming the CVE and the fixed version", () => {
        for (const pkg of ["libnvidia-container1", "nvidia-container-toolkit-base", "nvidia-container-toolkit"]) {
            const d = run("dpkg", [`--root=${root}`, "-i", path.join(repoDir, `${pkg}_1.17.7-1_all.deb`)]);
            assert.strictEqual(d.status, 0, d.out);
        }
        const r = run("bash", [TOOLKIT, "ensure", "--vendor", "nvidia", "--version", "preinstalled", ...cveFloorArgs("nvidia")]);
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /nvidia-container-toolkit 1\.17\.7-1 is installed and has known container escapes: CVE-2025-23266 \(fixed in 1\.17\.8\)/);
        assert.doesNotMatch(r.out, /CVE-2024-0132/, "only the CVEs this version has");
    });
});
