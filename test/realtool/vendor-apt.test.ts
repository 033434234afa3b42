/**
 * Vendor repositories with real apt, gpg and dpkg: a local file: repository built here from
 * small packages (dpkg-deb, dpkg-scanpackages) and signed by a test key. The source, keyring
 * and pin the program renders let apt install the pinned version and hold it against a newer
 * one; a repository signed by another key is refused, naming that key; remove takes the
 * packages away; a preinstalled toolkit below the CVE floor is refused. apt runs against its
 * own folders (APT_CONFIG) and dpkg against its own root, never the machine's.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { keyFingerprints } from "../../components/lib/repos/openpgp";
import { checkedRepository, readVendorRepository, VendorRepository } from "../../components/lib/repos/vendor-repos";
import { AptPaths } from "../../components/lib/render/apt-sources";
import { renderToolkitAptFiles, toolkitScriptArgs } from "../../components/lib/links/container-toolkit/render";
import { cveFloorArgs } from "../../components/lib/toolkit/versions";
import { AptSandbox, LocalAptRepository, TestKey } from "./apt-sandbox";
import { HOST_DIR, tempDir } from "./wrapper-support";

const TOOLKIT = path.join(HOST_DIR, "container-toolkit.sh");
const REFRESH = path.join(HOST_DIR, "apt-vendor-source.sh");

describe("vendor apt repositories (real apt, gpg, dpkg)", function () {
    this.timeout(300_000);
    let dir: string;
    let repo: LocalAptRepository;
    let apt: AptSandbox;
    let paths: AptPaths;
    const keys: Record<"vendor" | "other", TestKey> = {} as never;

    function repository(): VendorRepository {
        return { id: "test-toolkit", uris: `file:${repo.dir}`, suites: "/", components: "", key: keys.vendor.armored, fingerprint: keys.vendor.fingerprint };
    }

    /** Places what the toolkit component renders, at the test's apt paths. */
    function place(version: string): void {
        for (const file of renderToolkitAptFiles({ vendor: "nvidia", version, repository: repository() }, paths)) {
            fs.mkdirSync(path.dirname(file.path), { recursive: true });
            fs.writeFileSync(file.path, file.content, { mode: 0o644 });
        }
    }

    const run = (cmd: string, args: string[]) => apt.run(cmd, args);
    const installed = (pkg: string) => apt.installed(pkg);

    before(() => {
        dir = tempDir("gw-apt-");
        fs.chmodSync(dir, 0o755);
        repo = new LocalAptRepository(dir);
        keys.vendor = repo.makeKey("vendor");
        keys.other = repo.makeKey("other");
        for (const v of ["1.17.7-1", "1.17.8-1", "1.17.9-1"]) {
            repo.deb("libnvidia-container1", v);
            repo.deb("nvidia-container-toolkit-base", v);
            repo.deb("nvidia-container-toolkit", v, { depends: `nvidia-container-toolkit-base (= ${v}), libnvidia-container1 (= ${v})` });
        }
        repo.publish(keys.vendor.fingerprint);
        apt = new AptSandbox(dir);
        paths = apt.paths;
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it("the program's fingerprints are gpg's, for the test key and for the shipped NVIDIA key", () => {
        assert.strictEqual(keyFingerprints(keys.vendor.armored).primary, keys.vendor.fingerprint);
        const data = readVendorRepository("nvidia-container-toolkit");
        const shipped = path.join(dir, "shipped.asc");
        fs.writeFileSync(shipped, data.key!.join("\n") + "\n");
        const gpgFprs = repo
            .gpg(["--with-colons", "--show-keys", shipped])
            .split("\n")
            .filter((l) => l.startsWith("fpr:"))
            .map((l) => l.split(":")[9]);
        const ours = keyFingerprints(data.key!.join("\n"));
        assert.deepStrictEqual([ours.primary, ...ours.subkeys], gpgFprs);
        assert.strictEqual(checkedRepository(data)!.fingerprint, "C95B321B61E88C1809C4F759DDCAE044F796ECB0");
    });

    it("a key file that is not the published key is refused before it reaches a host", () => {
        const data = { ...readVendorRepository("nvidia-container-toolkit"), key: keys.other.armored.trimEnd().split("\n") };
        assert.throws(
            () => checkedRepository(data),
            new RegExp(`fingerprint is ${keys.other.fingerprint}, but the vendor publishes C95B321B61E88C1809C4F759DDCAE044F796ECB0`),
        );
    });

    it("apt installs the pinned version from the vendor source and holds it against a newer one", () => {
        place("1.17.8");
        const r = run("bash", [
            TOOLKIT,
            "ensure",
            ...toolkitScriptArgs({ vendor: "nvidia", version: "1.17.8", repository: repository() }, paths).filter((a) => a !== "--dev-char-links"),
        ]);
        assert.strictEqual(r.status, 0, r.out);
        for (const pkg of ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1"])
            assert.strictEqual(installed(pkg), "installed 1.17.8-1", pkg);
        const upgrade = run("apt-get", ["-y", "-q", "upgrade"]);
        assert.strictEqual(upgrade.status, 0, upgrade.out);
        assert.strictEqual(installed("nvidia-container-toolkit"), "installed 1.17.8-1", "an upgrade leaves the pin where it is");
        assert.strictEqual(installed("libnvidia-container1"), "installed 1.17.8-1");
        assert.match(run("apt-cache", ["policy", "nvidia-container-toolkit"]).out, /Candidate: 1\.17\.8-1/);
        assert.strictEqual(run("bash", [TOOLKIT, "ensure", "--vendor", "nvidia", "--version", "1.17.8"]).status, 0, "a second run does nothing");
    });

    it("remove takes away the packages it installed, its dependencies too", () => {
        const r = run("bash", [TOOLKIT, "remove", "--vendor", "nvidia", "--version", "1.17.8"]);
        assert.strictEqual(r.status, 0, r.out);
        for (const pkg of ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1"])
            assert.doesNotMatch(installed(pkg), /^installed/, pkg);
    });

    it("a repository signed by another key is refused, naming that key", () => {
        repo.publish(keys.other.fingerprint);
        const source = repository();
        const r = run("bash", [
            REFRESH,
            "refresh",
            "--source",
            path.join(paths.sourcesDir, `gpu-workers-${source.id}.sources`),
            "--keyring",
            path.join(paths.keyringDir, `gpu-workers-${source.id}.asc`),
            "--fingerprint",
            source.fingerprint,
        ]);
        assert.notStrictEqual(r.status, 0, r.out);
        const keyId = keys.other.fingerprint.slice(-16);
        assert.match(r.out, new RegExp(`apt refused the repository of .*: it is signed by key [0-9A-F]*${keyId}`, "i"), r.out);
        assert.match(r.out, new RegExp(`trusts only the vendor's key ${keys.vendor.fingerprint}`));
        repo.publish(keys.vendor.fingerprint);
    });

    it("a preinstalled toolkit below the CVE floor is refused, naming the CVE and the fixed version", () => {
        for (const pkg of ["libnvidia-container1", "nvidia-container-toolkit-base", "nvidia-container-toolkit"]) {
            apt.dpkgInstall([path.join(repo.dir, `${pkg}_1.17.7-1_all.deb`)]);
        }
        const r = run("bash", [TOOLKIT, "ensure", "--vendor", "nvidia", "--version", "preinstalled", ...cveFloorArgs("nvidia")]);
        assert.notStrictEqual(r.status, 0, r.out);
        assert.match(r.out, /nvidia-container-toolkit 1\.17\.7-1 is installed and has known container escapes: CVE-2025-23266 \(fixed in 1\.17\.8\)/);
        assert.doesNotMatch(r.out, /CVE-2024-0132/, "only the CVEs this version has");
    });
});
