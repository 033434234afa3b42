/**
 * Shared by the real-apt tests: a local file: repository of small packages built here
 * (dpkg-deb, dpkg-scanpackages) and signed by a test key, and an apt and dpkg that run against
 * their own folders (APT_CONFIG, DPKG_ADMINDIR, dpkg --root), never the machine's.
 */
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { spawnSync } from "child_process";
import { AptPaths } from "../../components/lib/render/apt-sources";
import { ensureCommands } from "../support/tools";
import { sh } from "./wrapper-support";

export interface TestKey {
    fingerprint: string;
    armored: string;
}

/** What a test package declares beyond its name and version: files by absolute path, the conffiles among them. */
export interface DebOptions {
    depends?: string;
    files?: Record<string, string>;
    conffiles?: string[];
}

export class LocalAptRepository {
    readonly dir: string;
    private readonly gnupg: string;
    private readonly build: string;

    /** A repository in `dir`/repo, its gpg home and build folder beside it. */
    constructor(dir: string) {
        ensureCommands(["gpg", "gpgv", "dpkg-deb", "dpkg-scanpackages", "apt-get"], ["gnupg", "gpgv", "dpkg", "dpkg-dev", "apt"]);
        this.dir = path.join(dir, "repo");
        this.gnupg = path.join(dir, "gnupg");
        this.build = path.join(dir, "build");
        fs.mkdirSync(this.dir, { recursive: true });
        fs.mkdirSync(this.gnupg, { mode: 0o700 });
    }

    gpg(args: string[]): string {
        return sh("gpg", ["--homedir", this.gnupg, "--batch", "--quiet", ...args]);
    }

    makeKey(name: string): TestKey {
        this.gpg(["--passphrase", "", "--quick-gen-key", `${name} <${name}@gpu-workers.test>`, "ed25519", "sign", "never"]);
        const fpr = this.gpg(["--with-colons", "--list-keys", `${name}@gpu-workers.test`])
            .split("\n")
            .find((l) => l.startsWith("fpr:"))!
            .split(":")[9];
        return { fingerprint: fpr, armored: this.gpg(["--armor", "--export", fpr]) };
    }

    /** Builds NAME_VERSION_all.deb into the repository; returns its path. */
    deb(name: string, version: string, opts: DebOptions = {}): string {
        const build = path.join(this.build, `${name}_${version}`);
        fs.mkdirSync(path.join(build, "DEBIAN"), { recursive: true });
        fs.mkdirSync(path.join(build, "usr", "share", "doc", name), { recursive: true });
        fs.writeFileSync(path.join(build, "usr", "share", "doc", name, "version"), `${version}\n`);
        for (const [file, content] of Object.entries(opts.files ?? {})) {
            fs.mkdirSync(path.join(build, path.dirname(file)), { recursive: true });
            fs.writeFileSync(path.join(build, file), content, { mode: 0o644 });
        }
        if (opts.conffiles) fs.writeFileSync(path.join(build, "DEBIAN", "conffiles"), opts.conffiles.map((f) => `${f}\n`).join(""));
        fs.writeFileSync(
            path.join(build, "DEBIAN", "control"),
            [
                `Package: ${name}`,
                `Version: ${version}`,
                "Architecture: all",
                "Maintainer: gpu-workers tests <t@gpu-workers.test>",
                ...(opts.depends ? [`Depends: ${opts.depends}`] : []),
                `Description: test stand-in for ${name}`,
                "",
            ].join("\n"),
        );
        const out = path.join(this.dir, `${name}_${version}_all.deb`);
        sh("dpkg-deb", ["--root-owner-group", "--build", build, out]);
        return out;
    }

    /** Packages and an InRelease signed by `signer`. */
    publish(signer: string): void {
        const packages = sh("dpkg-scanpackages", ["--multiversion", "."], { cwd: this.dir });
        fs.writeFileSync(path.join(this.dir, "Packages"), packages);
        const sha = crypto.createHash("sha256").update(packages).digest("hex");
        const release = [
            "Origin: gpu-workers-test",
            "Label: gpu-workers-test",
            `Date: ${new Date().toUTCString()}`,
            "SHA256:",
            ` ${sha} ${Buffer.byteLength(packages)} Packages`,
            "",
        ].join("\n");
        fs.writeFileSync(path.join(this.dir, "Release"), release);
        fs.rmSync(path.join(this.dir, "InRelease"), { force: true });
        this.gpg(["--local-user", signer, "--clearsign", "--output", path.join(this.dir, "InRelease"), path.join(this.dir, "Release")]);
    }
}

export class AptSandbox {
    /** dpkg's root (--root). */
    readonly root: string;
    readonly admin: string;
    readonly paths: AptPaths;
    readonly conf: string;
    readonly env: NodeJS.ProcessEnv;

    /** apt's and dpkg's folders under `dir`; the host scripts' state in `dir`/gw-state. */
    constructor(readonly dir: string) {
        this.root = path.join(dir, "root");
        this.admin = path.join(this.root, "var", "lib", "dpkg");
        for (const d of ["info", "updates", "triggers"]) fs.mkdirSync(path.join(this.admin, d), { recursive: true });
        fs.writeFileSync(path.join(this.admin, "status"), "");
        fs.writeFileSync(path.join(this.admin, "available"), "");
        const etc = path.join(dir, "etc", "apt");
        for (const d of ["sources.list.d", "preferences.d", "apt.conf.d", "trusted.gpg.d"]) fs.mkdirSync(path.join(etc, d), { recursive: true });
        for (const d of ["state/lists/partial", "cache/archives/partial", "log"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
        this.paths = { keyringDir: path.join(dir, "keyrings"), sourcesDir: path.join(etc, "sources.list.d"), preferencesDir: path.join(etc, "preferences.d") };
        this.conf = path.join(dir, "apt.conf");
        fs.writeFileSync(
            this.conf,
            [
                `Dir::Etc "${etc}/";`,
                `Dir::State "${dir}/state/";`,
                `Dir::State::status "${this.admin}/status";`,
                `Dir::Cache "${dir}/cache/";`,
                `Dir::Log "${dir}/log/";`,
                'APT::Sandbox::User "root";',
                `DPkg::Options { "--root=${this.root}"; "--log=${dir}/log/dpkg.log"; };`,
                "",
            ].join("\n"),
        );
        this.env = {
            ...process.env,
            APT_CONFIG: this.conf,
            DPKG_ADMINDIR: this.admin,
            GPU_WORKERS_STATE_DIR: path.join(dir, "gw-state"),
            DEBIAN_FRONTEND: "noninteractive",
        };
    }

    run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; out: string } {
        const r = spawnSync(cmd, args, { encoding: "utf8", env: { ...this.env, ...env }, timeout: 120_000 });
        return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
    }

    /** dpkg's "STATUS VERSION" of a package, e.g. "installed 1.17.8-1"; "" for one it never saw. */
    installed(pkg: string): string {
        return this.run("dpkg-query", ["-W", "-f", "${db:Status-Status} ${Version}", pkg]).out.trim();
    }

    /** Installs .deb files with dpkg itself, as a host's own packages. */
    dpkgInstall(debs: string[]): void {
        const r = this.run("dpkg", [`--root=${this.root}`, "-i", ...debs]);
        if (r.status !== 0) throw new Error(`dpkg -i ${debs.join(" ")} failed: ${r.out}`);
    }
}
