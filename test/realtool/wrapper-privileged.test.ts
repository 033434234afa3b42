/**
 * Specs that would let a task undo the datasets' modes, with real runc behind the wrapper.
 * The control first: a container with CAP_SYS_ADMIN remounts the read-only datasets
 * read-write and writes into them, with a user namespace of its own as well as without (runc
 * makes its mounts inside the container's namespaces, so the kernel does not lock them).
 * Then the wrapper refuses each capability and device rule that opens the way, on create and
 * on `exec --process`, unless the settings say allowPrivileged; Concourse's unprivileged spec
 * passes and its two privileged ones (full, fuse-only) do not.
 */
import * as assert from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { renderWrapperConfig } from "../../components/lib/links/runc-wrapper/render";
import { buildTestWrapper, ensureWrapperTools, makeBundle, makeBusyboxRootfs, sh, sha256, tempDir, withSettings, writeSettings } from "./wrapper-support";

// Concourse's capability sets (worker/runtime/spec/capabilities.go) and device rules (devices.go).
const UNPRIVILEGED_CAPS = [
    "CAP_AUDIT_WRITE",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYS_CHROOT",
];
const FULL_CAPS = [
    "CAP_AUDIT_CONTROL",
    "CAP_AUDIT_READ",
    "CAP_AUDIT_WRITE",
    "CAP_BLOCK_SUSPEND",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_KILL",
    "CAP_LEASE",
    "CAP_LINUX_IMMUTABLE",
    "CAP_MAC_ADMIN",
    "CAP_MAC_OVERRIDE",
    "CAP_MKNOD",
    "CAP_NET_ADMIN",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYSLOG",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_CHROOT",
    "CAP_SYS_MODULE",
    "CAP_SYS_NICE",
    "CAP_SYS_PACCT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_WAKE_ALARM",
];
const CONCOURSE_DEVICE_RULES = [
    { allow: false, access: "rwm" },
    // Older releases allow mknod (only) of every device, as runc does.
    { allow: true, type: "c", major: -1, minor: -1, access: "m" },
    { allow: true, type: "b", major: -1, minor: -1, access: "m" },
    { allow: true, type: "c", major: 1, minor: 3, access: "rwm" },
    { allow: true, type: "c", major: 1, minor: 5, access: "rwm" },
    { allow: true, type: "c", major: 136, minor: -1, access: "rwm" },
    { allow: true, type: "c", major: 10, minor: 229, access: "rwm" },
];
const FUSE_NODE = { path: "/dev/fuse", type: "c", major: 10, minor: 229, fileMode: 0o666, uid: 0, gid: 0 };
/** The uid and gid that root in a user-namespaced container is on the host. */
const MAPPED_ROOT = 100000;

/** The parts of an OCI runtime spec (config.json) these tests change; the rest is written back as read. */
interface Spec {
    process: { capabilities: Record<string, string[]> };
    linux: {
        namespaces: { type: string }[];
        uidMappings?: { containerID: number; hostID: number; size: number }[];
        gidMappings?: { containerID: number; hostID: number; size: number }[];
        resources: { devices: Record<string, unknown>[] };
        devices?: Record<string, unknown>[];
    };
    mounts: { destination: string; type?: string; source?: string; options?: string[] }[];
}

describe("runc wrapper: privileged specs (real runc)", function () {
    this.timeout(600_000);
    let dir: string;
    let settingsPath: string;
    let rendered: string;
    let wrapper: string;
    let rootfs: string;
    let datasets: string;
    let counter = 0;
    const made: string[] = [];
    const runcRoot = () => path.join(dir, "runc-root");
    const realRunc = () => sh("sh", ["-c", "command -v runc"]).trim();

    function settings(allowPrivileged?: boolean): void {
        writeSettings(settingsPath, allowPrivileged === undefined ? rendered : withSettings(rendered, { allowPrivileged }));
    }

    /** A bundle running `script` (busybox), with `change` applied to its spec. */
    function bundle(script: string, change: (spec: Spec) => void = () => undefined): { id: string; path: string } {
        const id = `pv${process.pid}-${++counter}`;
        const b = makeBundle(path.join(dir, "bundles", id), rootfs, ["sh", "-c", script], ["PATH=/bin", `R=${datasets}`]);
        const specPath = path.join(b, "config.json");
        const spec = JSON.parse(fs.readFileSync(specPath, "utf8")) as Spec;
        change(spec);
        fs.writeFileSync(specPath, JSON.stringify(spec, null, 2));
        return { id, path: b };
    }

    function call(args: string[]): { status: number | null; out: string; err: string } {
        const outFile = path.join(dir, `call-${++counter}.out`);
        const errFile = `${outFile}.err`;
        const out = fs.openSync(outFile, "w");
        const err = fs.openSync(errFile, "w");
        const r = spawnSync(wrapper, ["--root", runcRoot(), ...args], { stdio: ["ignore", out, err], timeout: 60_000 });
        fs.closeSync(out);
        fs.closeSync(err);
        return { status: r.status, out: fs.readFileSync(outFile, "utf8"), err: fs.readFileSync(errFile, "utf8") };
    }

    function create(b: { id: string; path: string }) {
        made.push(b.id);
        return call(["create", "--bundle", b.path, b.id]);
    }

    function destroy(id: string): void {
        spawnSync(realRunc(), ["--root", runcRoot(), "delete", "--force", id], { stdio: "ignore" });
    }

    const caps = (list: string[], sets = ["bounding", "effective", "inheritable", "permitted"]) => Object.fromEntries(sets.map((s) => [s, list]));

    /** Concourse's own shape of a user-namespaced container: root inside is MAPPED_ROOT outside. */
    function userns(spec: Spec): void {
        spec.linux.namespaces.push({ type: "user" });
        spec.linux.uidMappings = [{ containerID: 0, hostID: MAPPED_ROOT, size: 65536 }];
        spec.linux.gidMappings = [{ containerID: 0, hostID: MAPPED_ROOT, size: 65536 }];
        // A user namespace may not mount a new cgroup or sysfs here: bind the host's /sys, read-only.
        spec.mounts = spec.mounts.filter((m) => !m.destination.startsWith("/sys"));
        spec.mounts.push({ destination: "/sys", type: "bind", source: "/sys", options: ["rbind", "nosuid", "noexec", "nodev", "ro"] });
    }

    function concourse(mode: "unprivileged" | "full" | "fuse-only", script: string) {
        return bundle(script, (spec) => {
            spec.process.capabilities = caps(mode === "full" ? FULL_CAPS : mode === "fuse-only" ? [...UNPRIVILEGED_CAPS, "CAP_SYS_ADMIN"] : UNPRIVILEGED_CAPS);
            spec.linux.resources = { devices: CONCOURSE_DEVICE_RULES };
            if (mode !== "unprivileged") spec.linux.devices = [FUSE_NODE];
            if (mode !== "full") userns(spec);
        });
    }

    const refusedLine = (id: string, what: string) =>
        new RegExp(
            `^gpu-workers runc wrapper: create: container "${id}" refused: it would let a task undo the read-only datasets: .*${what}.*\\. To run such containers on purpose, set the worker's concourse\\.privilegedMode to full or fuse-only in the stack \\(it sets "allowPrivileged": true in ${settingsPath}\\)\\n$`,
        );

    before(() => {
        ensureWrapperTools();
        dir = tempDir("gw-priv-");
        fs.chmodSync(dir, 0o755); // root in a user namespace reaches the rootfs and the datasets
        settingsPath = path.join(dir, "runc-wrapper.json");
        wrapper = buildTestWrapper(dir, settingsPath);
        rootfs = path.join(dir, "rootfs");
        makeBusyboxRootfs(rootfs);
        datasets = path.join(dir, "srv");
        fs.mkdirSync(path.join(datasets, "models"), { recursive: true });
        fs.mkdirSync(path.join(datasets, "scratch_rw"));
        rendered = renderWrapperConfig({
            plan: { env: {}, unsetEnv: [], deviceNodes: [] },
            datasets: { root: datasets, writableSuffixes: ["_rw"] },
            realRuntime: realRunc(),
            logPath: path.join(dir, "wrapper.log"),
        });
    });

    afterEach(() => {
        while (made.length) destroy(made.pop() as string);
    });

    after(() => {
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    describe("control: what the refusal prevents", () => {
        const attack = (file: string) =>
            `(echo before >> "$R/models/${file}") 2>&1; mount -o remount,bind,rw "$R" 2>&1 && echo remounted; echo task >> "$R/models/${file}" && echo wrote`;

        it("CAP_SYS_ADMIN without a user namespace (Concourse's full mode): the task remounts the datasets read-write and writes into a read-only one", () => {
            settings(true);
            const file = path.join(datasets, "models", "weights.bin");
            fs.writeFileSync(file, "w\n");
            const b = bundle(attack("weights.bin"), (spec) => {
                spec.process.capabilities = caps([...UNPRIVILEGED_CAPS, "CAP_SYS_ADMIN"]);
            });
            made.push(b.id);
            const r = call(["run", "--bundle", b.path, b.id]);
            assert.strictEqual(r.status, 0, r.err);
            assert.match(r.out, /Read-only file system\nremounted\nwrote\n$/, `read-only at first, then undone: ${r.out}`);
            assert.strictEqual(fs.readFileSync(file, "utf8"), "w\ntask\n");
        });

        it("CAP_SYS_ADMIN with a user namespace of its own (Concourse's fuse-only mode): the same, into a file its mapped root owns", () => {
            settings(true);
            const file = path.join(datasets, "models", "owned.bin");
            fs.writeFileSync(file, "w\n");
            fs.chownSync(file, MAPPED_ROOT, MAPPED_ROOT);
            const b = concourse("fuse-only", attack("owned.bin"));
            made.push(b.id);
            const r = call(["run", "--bundle", b.path, b.id]);
            assert.strictEqual(r.status, 0, r.err);
            assert.match(r.out, /Read-only file system\nremounted\nwrote\n$/, `a user namespace does not lock runc's read-only mounts: ${r.out}`);
            assert.strictEqual(fs.readFileSync(file, "utf8"), "w\ntask\n");
        });
    });

    describe("refused unless allowPrivileged", () => {
        const cases: [string, string, (spec: Spec) => void][] = [
            [
                "CAP_SYS_ADMIN in bounding",
                "CAP_SYS_ADMIN in bounding \\(mount and remount",
                (s) => {
                    s.process.capabilities.bounding.push("CAP_SYS_ADMIN");
                },
            ],
            [
                "CAP_DAC_READ_SEARCH in effective",
                "CAP_DAC_READ_SEARCH in bounding, effective, permitted \\(open_by_handle_at",
                (s) => {
                    for (const k of ["bounding", "effective", "permitted"]) s.process.capabilities[k].push("CAP_DAC_READ_SEARCH");
                },
            ],
            [
                "CAP_SYS_MODULE in inheritable",
                "CAP_SYS_MODULE in bounding, inheritable \\(loads kernel modules",
                (s) => {
                    s.process.capabilities.bounding.push("CAP_SYS_MODULE");
                    s.process.capabilities.inheritable = ["CAP_SYS_MODULE"];
                },
            ],
            [
                "CAP_SYS_RAWIO in ambient",
                "CAP_SYS_RAWIO in bounding, inheritable, permitted, ambient \\(raw access",
                (s) => {
                    for (const k of ["bounding", "inheritable", "permitted", "ambient"])
                        s.process.capabilities[k] = [...(s.process.capabilities[k] ?? []), "CAP_SYS_RAWIO"];
                },
            ],
            [
                "an allow rule for every device (type a)",
                `device rule "a \\*:\\* rwm" \\(every device\\)`,
                (s) => {
                    s.linux.resources.devices.push({ allow: true, type: "a", access: "rwm" });
                },
            ],
            [
                "an allow rule without a type",
                `device rule "a \\*:\\* rwm" \\(every device\\)`,
                (s) => {
                    s.linux.resources.devices.push({ allow: true, access: "rwm" });
                },
            ],
            [
                "an allow rule for block devices",
                `device rule "b 7:\\* rw" \\(block devices`,
                (s) => {
                    s.linux.resources.devices.push({ allow: true, type: "b", major: 7, access: "rw" });
                },
            ],
            [
                "an allow rule for every character device",
                `device rule "c \\*:\\* rwm" \\(every character device\\)`,
                (s) => {
                    s.linux.resources.devices.push({ allow: true, type: "c", major: -1, minor: -1, access: "rwm" });
                },
            ],
            [
                "a block device node",
                "block device /dev/gw-test-block in linux.devices",
                (s) => {
                    s.linux.devices = [{ path: "/dev/gw-test-block", type: "b", major: 7, minor: 250, fileMode: 0o600, uid: 0, gid: 0 }];
                },
            ],
        ];
        for (const [name, finding, change] of cases) {
            it(`${name}: create refused in one line naming the container and what it found, the bundle unchanged; allowed with allowPrivileged`, () => {
                settings();
                const b = bundle("true", change);
                const before = sha256(path.join(b.path, "config.json"));
                const refused = create(b);
                assert.notStrictEqual(refused.status, 0);
                assert.match(refused.err, refusedLine(b.id, finding));
                assert.ok(fs.readFileSync(path.join(dir, "wrapper.log"), "utf8").includes(refused.err.trim()), "the same line is in the log");
                assert.strictEqual(sha256(path.join(b.path, "config.json")), before);
                assert.strictEqual(spawnSync(realRunc(), ["--root", runcRoot(), "state", b.id]).status, 1, "no container was made");
                settings(true);
                const allowed = create(b);
                assert.strictEqual(allowed.status, 0, allowed.err);
                settings(false);
                const again = bundle("true", change);
                assert.match(create(again).err, refusedLine(again.id, finding), "allowPrivileged: false is the default");
            });
        }
    });

    describe("Concourse's specs", () => {
        it("its unprivileged spec (user namespace, its capabilities and device rules, /dev/fuse allowed) passes and runs", () => {
            settings();
            const b = concourse("unprivileged", `id -u; ls "$R"`);
            made.push(b.id);
            const r = call(["run", "--bundle", b.path, b.id]);
            assert.strictEqual(r.status, 0, r.err);
            assert.strictEqual(r.out, "0\nmodels\nscratch_rw\n");
        });

        for (const [mode, finding] of [
            ["full", "CAP_DAC_READ_SEARCH in bounding, effective, inheritable, permitted .*; CAP_SYS_ADMIN in .*; CAP_SYS_MODULE in .*; CAP_SYS_RAWIO in "],
            ["fuse-only", "CAP_SYS_ADMIN in bounding, effective, inheritable, permitted \\(mount"],
        ] as const) {
            it(`its privileged "${mode}" spec is refused`, () => {
                settings();
                const b = concourse(mode, "true");
                const r = create(b);
                assert.notStrictEqual(r.status, 0);
                assert.match(r.err, refusedLine(b.id, finding));
            });
        }
    });

    describe("exec --process (how containerd starts a task's command)", () => {
        it("a process file with CAP_SYS_ADMIN is refused, the file untouched; an unprivileged one runs; allowPrivileged lets it run", () => {
            settings();
            const b = bundle("sleep 600");
            assert.strictEqual(create(b).status, 0);
            assert.strictEqual(call(["start", b.id]).status, 0);
            const spec = JSON.parse(fs.readFileSync(path.join(b.path, "config.json"), "utf8"));
            const processFile = (capabilities: Record<string, string[]>) => {
                const file = path.join(dir, `process-${++counter}.json`);
                fs.writeFileSync(file, JSON.stringify({ ...spec.process, args: ["sh", "-c", "echo ran"], capabilities }));
                return file;
            };
            const privileged = processFile(caps([...UNPRIVILEGED_CAPS, "CAP_SYS_ADMIN"], ["bounding", "effective", "permitted"]));
            const before = sha256(privileged);
            const refused = call(["exec", "--process", privileged, b.id]);
            assert.notStrictEqual(refused.status, 0);
            assert.match(
                refused.err,
                new RegExp(
                    `^gpu-workers runc wrapper: exec: process ${privileged} for container "${b.id}" refused: it would let a task undo the read-only datasets: CAP_SYS_ADMIN in bounding, effective, permitted \\(mount and remount.*"allowPrivileged": true in ${settingsPath}\\)\\n$`,
                ),
            );
            assert.strictEqual(sha256(privileged), before);
            const plain = call(["exec", "--process", processFile(caps(UNPRIVILEGED_CAPS)), b.id]);
            assert.strictEqual(plain.status, 0, plain.err);
            assert.strictEqual(plain.out, "ran\n");
            settings(true);
            const allowed = call(["exec", "--process", privileged, b.id]);
            assert.strictEqual(allowed.status, 0, allowed.err);
            assert.strictEqual(allowed.out, "ran\n");
        });
    });

    describe("one reading of the spec and of argv, runc's (trust, second round)", () => {
        /** A bundle whose spec is written as given: the keys exactly as the test spells them. */
        function rawBundle(script: string, change: (spec: Record<string, unknown>) => Record<string, unknown>): { id: string; path: string } {
            const b = bundle(script);
            const specPath = path.join(b.path, "config.json");
            fs.writeFileSync(specPath, JSON.stringify(change(JSON.parse(fs.readFileSync(specPath, "utf8")) as Record<string, unknown>)));
            return b;
        }
        /** Moves a member to another spelling of its key (runc reads it the same, by Go's case folding). */
        const respell = (o: Record<string, unknown>, key: string, as: string) => {
            const { [key]: value, ...rest } = o;
            return { ...rest, [as]: value };
        };

        before(() => settings());

        for (const [name, change] of [
            ["PROCESS", (spec: Record<string, unknown>) => respell(spec, "process", "PROCESS")],
            ["proceſſ (long s)", (spec: Record<string, unknown>) => respell(spec, "process", "proce\u017f\u017f")],
            [
                "Capabilities",
                (spec: Record<string, unknown>) => ({ ...spec, process: respell(spec.process as Record<string, unknown>, "capabilities", "Capabilities") }),
            ],
        ] as const) {
            it(`a spec that spells its keys otherwise (${name}) and carries CAP_SYS_ADMIN is refused, naming the key; runc never runs it`, () => {
                const b = rawBundle(`mount -o remount,rw "$R" && touch "$R/models/pwned"; echo ran`, (spec) => {
                    (spec.process as { capabilities: Record<string, string[]> }).capabilities = caps([...UNPRIVILEGED_CAPS, "CAP_SYS_ADMIN"]);
                    return change(spec);
                });
                const before = sha256(path.join(b.path, "config.json"));
                const r = call(["run", "--bundle", b.path, b.id]);
                made.push(b.id);
                assert.notStrictEqual(r.status, 0, r.out);
                assert.match(r.err, /refusing .*config\.json: the key ".*" .*: runc reads it as "(process|capabilities)"/);
                assert.ok(!fs.existsSync(path.join(datasets, "models", "pwned")), "nothing was written into the datasets");
                assert.strictEqual(sha256(path.join(b.path, "config.json")), before, "the bundle is untouched");
            });
        }

        it('a "Linux" key with an allow-all device rule is refused too', () => {
            const b = rawBundle("true", (spec) => {
                const linux = spec.linux as { resources: { devices: unknown[] } };
                linux.resources.devices = [{ allow: true, access: "rwm" }];
                return respell(spec, "linux", "Linux");
            });
            const r = create(b);
            assert.notStrictEqual(r.status, 0);
            assert.match(r.err, /the key "Linux" at the spec's top level: runc reads it as "linux"/);
        });

        it("run ID --bundle EVIL from a benign bundle's folder: the wrapper checks EVIL, the bundle runc runs", () => {
            const benign = bundle("echo benign");
            const evil = bundle(`mount -o remount,rw "$R" && touch "$R/models/pwned"; echo evil`, (spec) => {
                spec.process.capabilities = caps([...UNPRIVILEGED_CAPS, "CAP_SYS_ADMIN"]);
            });
            const benignBefore = sha256(path.join(benign.path, "config.json"));
            const outFile = path.join(dir, `cwd-${++counter}.out`);
            const r = spawnSync(wrapper, ["--root", runcRoot(), "run", evil.id, "--bundle", evil.path], {
                cwd: benign.path,
                encoding: "utf8",
                timeout: 60_000,
            });
            made.push(evil.id);
            fs.writeFileSync(outFile, r.stdout);
            assert.notStrictEqual(r.status, 0, r.stdout);
            assert.match(r.stderr, new RegExp(`container "${evil.id}" refused: it would let a task undo the read-only datasets: CAP_SYS_ADMIN`));
            assert.ok(!fs.existsSync(path.join(datasets, "models", "pwned")));
            assert.strictEqual(sha256(path.join(benign.path, "config.json")), benignBefore, "the benign bundle is not the one edited");
        });

        it("an argv that two runc versions read apart is refused, and runs nothing", () => {
            const b = bundle("echo ran");
            const r = call(["run", b.id, "--bundle", b.path, "--no-such-flag"]);
            assert.notStrictEqual(r.status, 0);
            assert.match(
                r.err,
                /^gpu-workers runc wrapper: run: the arguments cannot be read as runc reads them: flag provided but not defined: -no-such-flag\n$/,
            );
            assert.doesNotMatch(r.out, /ran/);
        });

        it("spec features outside the worker's settings are refused, each named, and let through by wrapper.allow", () => {
            const noPid = bundle("echo ran", (spec) => {
                spec.linux.namespaces = spec.linux.namespaces.filter((n) => n.type !== "pid");
            });
            const refusedNoPid = create(noPid);
            assert.notStrictEqual(refusedNoPid.status, 0);
            assert.match(refusedNoPid.err, /container ".*" refused: its spec carries no pid namespace of its own \(no-pid-namespace: /);
            const hook = path.join(dir, `hook-${++counter}`);
            const hooked = rawBundle("echo ran", (spec) => ({ ...spec, hooks: { createRuntime: [{ path: "/bin/sh", args: ["sh", "-c", `touch ${hook}`] }] } }));
            const refusedHook = create(hooked);
            assert.notStrictEqual(refusedHook.status, 0);
            assert.match(refusedHook.err, /hook hooks\.createRuntime \/bin\/sh \(host-hooks: it runs on the host as root\)/);
            assert.ok(!fs.existsSync(hook), "the hook never ran");
            const annotated = rawBundle("echo ran", (spec) => ({ ...spec, annotations: { "cdi.k8s.io/gpu": "nvidia.com/gpu=all" } }));
            assert.match(create(annotated).err, /annotation cdi\.k8s\.io\/gpu \(cdi-annotations: /);
            writeSettings(settingsPath, withSettings(rendered, { allowSpec: ["host-hooks"] }));
            const allowed = create(
                rawBundle("echo ran", (spec) => ({ ...spec, hooks: { createRuntime: [{ path: "/bin/sh", args: ["sh", "-c", `touch ${hook}`] }] } })),
            );
            assert.strictEqual(allowed.status, 0, allowed.err);
            assert.ok(fs.existsSync(hook), "allowed, the hook ran");
            settings();
        });
    });
});
