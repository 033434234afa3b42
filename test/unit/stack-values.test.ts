/**
 * Hostile and careless values in the stack config: every string that reaches a host (a shell
 * command line, an env file, a unit, XML, the ssh command line) has a strict form, and each bad
 * value is reported at its path, all at once. Also the env-file renderer on its own (a component
 * used without the stack's schema), and `npm run render` on a stack with a typo'd key.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { stringify } from "yaml";
import { workerSpec } from "../../components/chain/gpu-worker";
import { renderWebEnv, renderWebSecretEnv } from "../../components/lib/render/concourse-web";
import { renderConcourseWorker, renderWorkerEnv } from "../../components/lib/links/concourse-worker/render";
import { EnvFileError, renderEnvFile } from "../../components/lib/render/env-file";
import { RawStackConfig } from "../../stacks/config/stack";
import { namespaceKeysOf } from "../../stacks/config/namespace-keys";
import { boardStack } from "../fixtures/stacks/boards";
import { HGX_H100_8X, NO_GPU, stackWith } from "../fixtures/stacks/inventories";
import { problemsOf } from "../support/stack-problems";
import { HOST_KEY, OTHER_TSA_KEY, TSA_KEY } from "../fixtures/ssh-keys/keys";
import { SSH_KEY_PASTE } from "../../components/lib/settings/ssh-public-key";

/** One SSH worker and a web with an external database: every field below is valid in it. */
function baseStack(): RawStackConfig & { hosts: Record<string, unknown>[]; web: Record<string, unknown> } {
    const raw = stackWith({ name: "a", inventory: NO_GPU });
    const lxd = {
        name: "b",
        transport: {
            lxd: {
                instance: "b",
                image: "gpu-workers/debian-12",
                sshPort: 2201,
                profiles: ["default"],
                datasetSource: "/var/lib/datasets",
                datasetFolders: ["models"],
            },
        },
        vendor: "none",
    };
    return {
        defaults: raw.defaults,
        hosts: [...raw.hosts, lxd] as Record<string, unknown>[],
        web: {
            name: "ci",
            transport: { ssh: { host: "10.0.0.2", user: "admin", privateKeySecret: "ci-ssh-key", hostKey: HOST_KEY } },
            externalUrl: "https://ci.example.test:8443/concourse",
            mainTeamUser: "admin",
            postgres: { external: { host: "db.example.test", database: "atc", user: "ci", passwordSecret: "ci-db" } },
        },
    };
}

/** Sets `value` at a dotted path (`hosts.0.concourse.team`), making objects on the way. */
function set(target: object, at: string, value: unknown): void {
    const parts = at.split(".");
    let node = target as Record<string, unknown>;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]] = value;
}

/** Where each value lands in the stack (dotted), and the path its problem is reported at. */
const FIELDS: { at: string; reported: string; kind: "text" | "path" | "list" | "url" | "binary" }[] = [
    { at: "hosts.0.concourse.team", reported: "hosts[0].concourse.team", kind: "text" },
    { at: "hosts.0.concourse.tsaHost", reported: "hosts[0].concourse.tsaHost", kind: "text" },
    { at: "hosts.0.concourse.workDir", reported: "hosts[0].concourse.workDir", kind: "path" },
    { at: "hosts.0.datasets.root", reported: "hosts[0].datasets.root", kind: "path" },
    { at: "hosts.0.datasets.writableSuffixes", reported: "hosts[0].datasets.writableSuffixes[0]", kind: "list" },
    { at: "hosts.0.transport.ssh.user", reported: "hosts[0].transport.ssh.user", kind: "text" },
    { at: "hosts.0.transport.ssh.host", reported: "hosts[0].transport.ssh.host", kind: "text" },
    { at: "hosts.1.transport.lxd.sshAddress", reported: "hosts[1].transport.lxd.sshAddress", kind: "text" },
    { at: "hosts.1.transport.lxd.image", reported: "hosts[1].transport.lxd.image", kind: "text" },
    { at: "hosts.1.transport.lxd.profiles", reported: "hosts[1].transport.lxd.profiles[0]", kind: "list" },
    { at: "hosts.1.transport.lxd.datasetSource", reported: "hosts[1].transport.lxd.datasetSource", kind: "path" },
    { at: "hosts.1.transport.lxd.datasetFolders", reported: "hosts[1].transport.lxd.datasetFolders[0]", kind: "list" },
    { at: "web.postgres.external.host", reported: "web.postgres.external.host", kind: "text" },
    { at: "web.postgres.external.database", reported: "web.postgres.external.database", kind: "text" },
    { at: "web.postgres.external.user", reported: "web.postgres.external.user", kind: "text" },
    { at: "web.externalUrl", reported: "web.externalUrl", kind: "url" },
    { at: "hosts.0.concourse.binary", reported: "hosts[0].concourse.binary.url", kind: "binary" },
    { at: "hosts.0.concourse.registration", reported: "hosts[0].concourse.registration.url", kind: "url" },
    { at: "web.mainTeamUser", reported: "web.mainTeamUser", kind: "text" },
    { at: "web.transport.ssh.user", reported: "web.transport.ssh.user", kind: "text" },
    { at: "web.transport.ssh.host", reported: "web.transport.ssh.host", kind: "text" },
];

/** What an attacker or a slip of the keyboard would put there. */
const HOSTILE = ["gpu\nCONCOURSE_WORK_DIR=/", "x$(touch /tmp/pwned)", "x`touch /tmp/pwned`", "-oProxyCommand=touch /tmp/pwned #", "x'y", 'x"y', "x\\y", " x"];
const CARELESS_PATHS = ["/srv/../etc", "/", "/etc", "srv", "/srv/", "/srv//x", "/srv/./x"];

describe("stack values: hostile and careless values are refused at their path", () => {
    it("the base stack is valid", () => {
        assert.deepStrictEqual(problemsOf(baseStack()), []);
    });

    for (const field of FIELDS) {
        it(`${field.reported}: a line break, $(), a backquote, a leading -, quotes, a backslash, a leading space${field.kind === "path" ? ", .., /, /etc, a relative path, // and trailing /" : ""}`, () => {
            const urlShaped = field.kind === "url" || field.kind === "binary";
            const values =
                field.kind === "path"
                    ? [...HOSTILE.map((v) => `/srv/${v}`), ...HOSTILE, ...CARELESS_PATHS]
                    : urlShaped
                      ? [...HOSTILE.map((v) => `https://ci.example.test/${v}`), ...HOSTILE.map((v) => `https://${v}/`), "file:///etc/passwd"]
                      : HOSTILE;
            for (const value of values) {
                const raw = baseStack();
                const given =
                    field.kind === "list"
                        ? [value]
                        : field.kind === "binary"
                          ? { url: value, sha256: "0".repeat(64) }
                          : field.at.endsWith("registration")
                            ? { url: value, username: "admin", passwordSecret: "ci-pw" }
                            : value;
                set(raw, field.at, given);
                const problems = problemsOf(raw);
                assert.strictEqual(problems.length, 1, `${JSON.stringify(value)}:\n${problems.join("\n")}`);
                assert.ok(
                    problems[0].startsWith(`${field.reported}: expected `) || problems[0].startsWith(`${field.reported}: ${value} `),
                    `${JSON.stringify(value)}: ${problems[0]}`,
                );
            }
        });
    }

    it("the TSA key: one key on one line (a second line was a second trusted key)", () => {
        const raw = baseStack();
        set(raw, "hosts.0.concourse.tsaPublicKey", `${TSA_KEY}\n${OTHER_TSA_KEY}`);
        assert.deepStrictEqual(problemsOf(raw), [
            `hosts[0].concourse.tsaPublicKey: 2 keys on 2 lines: pin one key, not several (ssh-keyscan prints one line per key type; \`-t ed25519\` picks one); ${SSH_KEY_PASTE.tsa}`,
        ]);
        set(raw, "hosts.0.concourse.tsaPublicKey", `${TSA_KEY} ci@example`);
        assert.deepStrictEqual(problemsOf(raw), [], "a comment after the key is fine");
    });

    it("every problem of a hostile stack at once, each with its path", () => {
        const raw = baseStack();
        set(raw, "hosts.0.concourse.team", "gpu\nCONCOURSE_WORK_DIR=/");
        set(raw, "hosts.0.concourse.workDir", "/opt/x$(touch pwned)");
        set(raw, "hosts.0.datasets.root", "/srv/../etc");
        set(raw, "hosts.0.transport.ssh.user", "-oProxyCommand=touch pwned #");
        set(raw, "hosts.1.transport.lxd.sshAddress", "127.0.0.1 -oProxyCommand=x");
        set(raw, "web.postgres.external.host", "-hdb");
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0].transport.ssh.user: expected a POSIX user name: a letter or _, then letters, digits, _ . or - (at most 32)",
            "hosts[0].datasets.root: expected the path in normal form (no . or .. segment, no // and no trailing /): /etc",
            "hosts[0].concourse.team: expected a team name of letters, digits, _ . and - (not starting with . or -, at most 63)",
            "hosts[0].concourse.workDir: expected an absolute path of letters, digits and . _ - + @ : , = ~ (no space, quote, $, backquote, backslash or %)",
            "hosts[1].transport.lxd.sshAddress: expected an IP address, e.g. 127.0.0.1",
            "web.postgres.external.host: expected a DNS name or an IP address, e.g. ci.example.com or 10.0.0.5",
        ]);
    });

    it("a shared board's service VM: its network, libvirt URI, name and image", () => {
        const raw = boardStack([{ gpus: 4 }]) as RawStackConfig & { hosts: { fabric: { serviceVm: object } }[] };
        Object.assign(raw.hosts[0].fabric.serviceVm, {
            network: 'default"/><hostdev',
            libvirtUri: "qemu:///system\n",
            name: "-fabric",
            image: "/var/lib/images/../../../etc/shadow",
        });
        assert.deepStrictEqual(problemsOf(raw).sort(), [
            "hosts[0].fabric.serviceVm.image: expected the path in normal form (no . or .. segment, no // and no trailing /): /etc/shadow",
            "hosts[0].fabric.serviceVm.libvirtUri: expected a libvirt URI of the board's own QEMU daemon: qemu:///system or qemu:///session, or qemu+unix:///system?socket=/path (no remote transport, no other parameter: qemu+ext and qemu+ssh run a program)",
            "hosts[0].fabric.serviceVm.name: expected a domain name of letters, digits, _ . and - (not starting with . or -, at most 63)",
            "hosts[0].fabric.serviceVm.network: expected a libvirt network name of letters, digits, _ . and - (not starting with . or -, at most 63)",
        ]);
    });

    it("what is fine stays fine: IPv6 and DNS hosts, a user with a dot, /data, /mnt and /var/lib/x as dataset roots", () => {
        const raw = baseStack();
        set(raw, "hosts.0.transport.ssh.host", "fd00::10");
        set(raw, "hosts.0.transport.ssh.user", "ci.deploy");
        set(raw, "hosts.0.concourse.tsaHost", "fd00::2");
        for (const root of ["/data/datasets", "/mnt", "/var/lib/datasets", "/srv"]) {
            set(raw, "hosts.0.datasets.root", root);
            assert.deepStrictEqual(problemsOf(raw), [], root);
        }
    });
});

describe("stack values: careless folders", () => {
    const withFolders = (root: string, workDir: string) => {
        const raw = baseStack();
        set(raw, "hosts.0.datasets.root", root);
        set(raw, "hosts.0.concourse.workDir", workDir);
        return problemsOf(raw);
    };

    it("datasets.root: not /, a system folder, /home or /tmp, saying why", () => {
        assert.deepStrictEqual(withFolders("/", "/opt/concourse/worker"), [
            "hosts[0].datasets.root: / is the whole file system: every folder of the dataset root is mounted into every task; give a folder of its own, such as /srv or /data/datasets",
        ]);
        assert.deepStrictEqual(withFolders("/etc", "/opt/concourse/worker"), [
            "hosts[0].datasets.root: /etc is a system folder: every folder of the dataset root is mounted into every task; give a folder of its own, such as /srv or /data/datasets",
        ]);
        assert.match(withFolders("/var/lib", "/opt/concourse/worker")[0], /^hosts\[0\]\.datasets\.root: \/var\/lib is a system folder: /);
        assert.match(
            withFolders("/home/ml", "/opt/concourse/worker")[0],
            /^hosts\[0\]\.datasets\.root: \/home\/ml is in \/home, the users' folders \(their owners could put there what a task then gets\)/,
        );
        assert.match(
            withFolders("/tmp/sets", "/opt/concourse/worker")[0],
            /^hosts\[0\]\.datasets\.root: \/tmp\/sets is in \/tmp, which every user may write to/,
        );
        // Written out here, not read from the production lists: dropping a folder there fails this test.
        const refusedTrees = [
            ...["/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run", "/sbin", "/sys", "/usr"],
            ...["/var/lock", "/var/run", "/home", "/tmp", "/var/tmp", "/var/log", "/var/mail", "/var/spool"],
            ...["/var/lib/apt", "/var/lib/containerd", "/var/lib/docker", "/var/lib/dpkg", "/var/lib/gpu-workers", "/var/lib/incus"],
            ...["/var/lib/kubelet", "/var/lib/libvirt", "/var/lib/lxcfs", "/var/lib/lxd", "/var/lib/mysql", "/var/lib/postgresql"],
            ...["/var/lib/private", "/var/lib/sudo", "/var/lib/systemd"],
        ];
        for (const tree of refusedTrees) {
            assert.strictEqual(withFolders(tree, "/opt/concourse/worker").length, 1, tree);
            assert.strictEqual(withFolders(`${tree}/x`, "/opt/concourse/worker").length, 1, `${tree}/x`);
        }
        for (const folder of ["/", "/var", "/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/opt"]) {
            assert.strictEqual(withFolders(folder, "/opt/concourse/worker").length, 1, folder);
        }
        for (const own of ["/var/lib/datasets", "/var/cache/datasets", "/srv/datasets", "/data", "/mnt/datasets"]) {
            assert.deepStrictEqual(withFolders(own, "/opt/concourse/worker"), [], `${own} is a folder of its own`);
        }
    });

    it("concourse.workDir: not /, a system folder, a shared one, nor the dataset root, inside it or holding it", () => {
        assert.deepStrictEqual(withFolders("/srv", "/"), [
            "hosts[0].concourse.workDir: / is the whole file system: destroy deletes the work dir with everything in it; give a folder of its own, such as /opt/concourse/worker",
        ]);
        assert.deepStrictEqual(withFolders("/srv", "/usr/local/concourse"), [
            "hosts[0].concourse.workDir: /usr/local/concourse is in /usr, a system folder: destroy deletes the work dir with everything in it; give a folder of its own, such as /opt/concourse/worker",
        ]);
        assert.deepStrictEqual(withFolders("/srv", "/opt"), [
            "hosts[0].concourse.workDir: /opt is a folder other software shares: destroy deletes the work dir with everything in it; give a folder of its own, such as /opt/concourse/worker",
        ]);
        assert.deepStrictEqual(withFolders("/data/sets", "/data/sets"), [
            "hosts[0].concourse.workDir: /data/sets is datasets.root too: destroy deletes the work dir, and with it every dataset",
        ]);
        assert.deepStrictEqual(withFolders("/srv", "/srv/concourse"), [
            "hosts[0].concourse.workDir: /srv/concourse is inside datasets.root /srv: every task would get the worker's own files, and destroy would delete them from under the datasets",
        ]);
        assert.deepStrictEqual(withFolders("/data/sets", "/data"), [
            "hosts[0].concourse.workDir: /data holds datasets.root /data/sets: destroy deletes the work dir, and with it every dataset",
        ]);
        for (const folder of ["/media", "/mnt", "/opt", "/srv"]) assert.strictEqual(withFolders("/data/sets", folder).length, 1, folder);
        assert.deepStrictEqual(withFolders("/srv", "/var/lib/concourse"), [], "a folder of its own below /var/lib is fine");
    });

    it("the work dir and the dataset root may come from the defaults: the host that gets both is named", () => {
        const raw = baseStack();
        set(raw, "defaults.datasets", { root: "/data" });
        set(raw, "defaults.concourse.workDir", "/data/work");
        assert.deepStrictEqual(problemsOf(raw), [
            "hosts[0].concourse.workDir: /data/work is inside datasets.root /data: every task would get the worker's own files, and destroy would delete them from under the datasets",
            "hosts[1].concourse.workDir: /data/work is inside datasets.root /data: every task would get the worker's own files, and destroy would delete them from under the datasets",
        ]);
    });

    it("a GpuWorker made without the stack refuses a work dir inside its dataset root too", () => {
        assert.throws(
            () =>
                workerSpec("w", {
                    transport: { ssh: { host: "10.0.0.1", privateKey: "k", hostKey: HOST_KEY } },
                    inventory: { vendor: "none", gpus: [], nvswitches: 0, tegra: false },
                    datasets: { root: "/srv" },
                    concourse: { workDir: "/srv/w" },
                }),
            /GpuWorker w: concourse\.workDir: \/srv\/w is inside datasets\.root \/srv/,
        );
    });
});

describe("stack values: keys of the project's namespace and fabric partitions", () => {
    it("a typo'd top-level key is an error naming it and the known keys; secret keys, named or left over, are fine", () => {
        const raw = baseStack();
        const keys = namespaceKeysOf({
            "gpu-workers:default": JSON.stringify(raw.defaults),
            "gpu-workers:hosts": JSON.stringify(raw.hosts),
            "gpu-workers:web": JSON.stringify(raw.web),
            "gpu-workers:a-ssh-key": "-----BEGIN OPENSSH PRIVATE KEY-----\n...",
            "gpu-workers:old-host-key": "-----BEGIN OPENSSH PRIVATE KEY-----\n...",
            "gpu-workers:allowNoHost": "true",
            "gpu-workers:extra": '{"concourse": {}}',
            "gpu-workers:more": "[1]",
            "aws:region": '{"x": 1}',
        });
        const known =
            "the project reads gpu-workers:defaults, gpu-workers:hosts, gpu-workers:web, gpu-workers:allowNoHosts, gpu-workers:kubernetes, gpu-workers:hostSteps, gpu-workers:fleet, gpu-workers:fleetMember, and the secret keys that settings name (privateKeySecret, passwordSecret, ...)";
        assert.deepStrictEqual(problemsOf({ ...raw, keys }), [
            `gpu-workers:default: unknown key (did you mean gpu-workers:defaults?); ${known}`,
            `gpu-workers:allowNoHost: unknown key (did you mean gpu-workers:allowNoHosts?); ${known}`,
            `gpu-workers:extra: unknown key, and it holds settings; ${known}`,
            `gpu-workers:more: unknown key, and it holds settings; ${known}`,
        ]);
        assert.deepStrictEqual(
            problemsOf({
                ...raw,
                keys: namespaceKeysOf({ "gpu-workers:defaults": "{}", "gpu-workers:hosts": "[]", "gpu-workers:a-ssh-key": '{"not": "really"}' }),
            }),
            [],
        );
        assert.deepStrictEqual(
            namespaceKeysOf({ "gpu-workers:k": { secure: "v1:abc" }, "gpu-workers:d": { concourse: {} }, "gpu-workers:l": ["x"] }),
            [
                { name: "k", structured: false },
                { name: "d", structured: true },
                { name: "l", structured: true },
            ],
            "a stack file's own values: a secure: value is text",
        );
    });

    it("a fabric partition the board's table lacks is refused naming the table's ids; a declared table is used", () => {
        const host = (extra: Record<string, unknown>) =>
            problemsOf(stackWith({ name: "hgx", inventory: HGX_H100_8X, extra: { fabricManager: { mode: "host", partitions: [1, 99] }, ...extra } }));
        assert.deepStrictEqual(host({}), [
            "hosts[0].fabricManager.partitions[1]: partition 99 is not in the HGX H100 8-GPU table (ids: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14) (the default table; another board declares its own as fabric.partitionTable)",
        ]);
        assert.deepStrictEqual(
            host({
                fabric: {
                    partitionTable: [
                        { id: 1, modules: [1, 2, 3, 4] },
                        { id: 99, modules: [5, 6, 7, 8] },
                    ],
                },
            }),
            [],
        );
        assert.deepStrictEqual(host({ fabric: { partitionTable: [{ id: 1, modules: [1, 2, 3, 4] }] } }), [
            "hosts[0].fabricManager.partitions[1]: partition 99 is not in the hgx table (ids: 1)",
        ]);
        assert.deepStrictEqual(problemsOf(stackWith({ name: "cpu", inventory: NO_GPU, extra: { fabric: { partitionTable: "hgx-h100-8gpu" } } })), [
            "hosts[0].fabric: only for a board: a shared one (fabricManager.mode: service-vm), or one that runs fabricmanager itself (NVSwitches declared, fabricManager.mode host or auto)",
        ]);
        assert.deepStrictEqual(problemsOf(boardStack([{ partition: 99 }])), [
            "hosts[1].board: partition 99 is not in the HGX H100 8-GPU table (ids: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)",
        ]);
    });

    it("npm run render: a typo'd key fails with the message", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gw-render-typo-"));
        const raw = stackWith({ name: "a", inventory: NO_GPU });
        fs.writeFileSync(path.join(dir, "Pulumi.test.yaml"), stringify({ config: { "gpu-workers:default": raw.defaults, "gpu-workers:hosts": raw.hosts } }));
        const r = spawnSync(
            "node",
            [path.join(__dirname, "..", "..", "cli", "render.js"), "--stack", "test", "--out", path.join(dir, "out"), "--project-dir", dir],
            { encoding: "utf8" },
        );
        fs.rmSync(dir, { recursive: true, force: true });
        assert.strictEqual(r.status, 1, r.stdout);
        assert.match(r.stderr, /gpu-workers:default: unknown key \(did you mean gpu-workers:defaults\?\)/);
    });
});

describe("the env-file renderer", () => {
    it("writes KEY=value lines, and refuses what systemd would not carry verbatim, naming the key and never the value", () => {
        assert.strictEqual(
            renderEnvFile(
                [
                    ["A", "1"],
                    ["B_2", "x=y:z/@,"],
                ],
                "Rendered.",
            ),
            "# Rendered.\nA=1\nB_2=x=y:z/@,\n",
        );
        const bad: [string, RegExp][] = [
            ["s3cr3t\nB=1", /holds a line break/],
            ["s3cr3t\rb", /holds a line break/],
            ["s3cr3t\0b", /holds a control character/],
            ["s3cr3t\x1bb", /holds a control character/],
            ['s3cr3t"b', /holds a quote or backquote/],
            ["s3cr3t'b", /holds a quote or backquote/],
            ["s3cr3t`id`", /holds a quote or backquote/],
            ["s3cr3t\\b", /holds a backslash/],
            ["s3cr3t$(touch x)", /holds a \$/],
            [" s3cr3t", /begins or ends with a space/],
            ["s3cr3t\t", /begins or ends with a space/],
        ];
        for (const [value, why] of bad) {
            assert.throws(
                () =>
                    renderEnvFile([
                        ["OK", "1"],
                        ["SECRET_KEY", value],
                    ]),
                (e: Error) => {
                    assert.ok(e instanceof EnvFileError);
                    assert.match(e.message, /^env file: the value of SECRET_KEY /);
                    assert.match(e.message, why);
                    assert.ok(!e.message.includes("s3cr3t"), "the value is not in the message");
                    return true;
                },
                JSON.stringify(value),
            );
        }
        assert.throws(() => renderEnvFile([["A B", "1"]]), /"A B" is no variable name/);
        assert.throws(
            () =>
                renderEnvFile([
                    ["A", "1"],
                    ["A", "2"],
                ]),
            /A is set twice/,
        );
    });

    it("every env file goes through it: the worker's, the web's and the web's secret one", () => {
        const worker = {
            name: "w",
            version: "8.2.5",
            tsaHost: "ci.example.test",
            tsaPort: 2222,
            tsaPublicKey: TSA_KEY,
            tags: ["gpu"],
            workDir: "/opt/concourse/worker",
            binary: { path: "/tmp/c.tgz", sha256: "3".repeat(64) },
            containerdConfig: "",
            inUserNamespace: false,
            privilegedMode: "ignore" as const,
        };
        assert.throws(() => renderWorkerEnv({ ...worker, team: "gpu\nCONCOURSE_WORK_DIR=/" }), /the value of CONCOURSE_TEAM holds a line break/);
        assert.throws(() => renderWorkerEnv({ ...worker, workDir: "/opt/x$(touch pwned)" }), /the value of CONCOURSE_WORK_DIR holds a \$/);
        assert.match(renderWorkerEnv({ ...worker, tsaHost: "fd00::2" }), /^CONCOURSE_TSA_HOST=\[fd00::2\]:2222$/m, "an IPv6 TSA in brackets");
        assert.throws(
            () => renderConcourseWorker({ ...worker, tsaPublicKey: `${TSA_KEY}\n${OTHER_TSA_KEY}` }),
            /^Error: concourse worker: the TSA public key \(tsaPublicKey\): 2 keys on 2 lines: pin one key, not several/,
        );
        assert.throws(() => renderConcourseWorker({ ...worker, tags: ["gpu\nExecStartPre=/bin/sh"] }), /is not one plain word/);
        const web = {
            version: "8.2.5",
            binary: { path: "/tmp/c.tgz", sha256: "3".repeat(64) },
            externalUrl: "http://127.0.0.1:8080",
            bindIp: "127.0.0.1",
            port: 8080,
            tsaPort: 2222,
            postgres: { external: { host: "db`id`", port: 5432, database: "atc", user: "ci", sslmode: "require" } },
            mainTeamUser: "admin",
            keepDatabase: false,
        };
        assert.throws(() => renderWebEnv(web), /the value of CONCOURSE_POSTGRES_HOST holds a quote or backquote/);
        assert.throws(
            () => renderWebSecretEnv("admin", "pw", "p$w"),
            (e: Error) => /the value of CONCOURSE_POSTGRES_PASSWORD holds a \$/.test(e.message) && !e.message.includes("p$w"),
        );
    });
});
