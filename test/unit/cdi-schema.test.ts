/** The CDI spec validator: real nvidia-ctk specs pass; each rule of the spec fails with its path. */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { buildCdiSpec, renderCdiSpec } from "../../components/lib/cdi/render";
import { CDI_VERSIONS, CdiSpecError, minimumCdiVersion, validateCdiSpec } from "../../components/lib/cdi/schema";
import { parse as parseYaml } from "yaml";

const CDI_FIXTURES = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery", "cdi");

/** A valid spec to break one rule at a time. */
function base(): { devices: Record<string, unknown>[]; [key: string]: unknown } {
    return {
        cdiVersion: "0.5.0",
        kind: "vendor.com/gpu",
        devices: [{ name: "gpu0", containerEdits: { env: ["A=1"], deviceNodes: [{ path: "/dev/gpu0", type: "c", permissions: "rw" }] } }],
    };
}

function problems(spec: unknown, source = "test.yaml"): string[] {
    try {
        validateCdiSpec(spec, source);
    } catch (err) {
        assert.ok(err instanceof CdiSpecError, String(err));
        return err.problems;
    }
    return [];
}

describe("CDI spec validator", () => {
    it("accepts the specs nvidia-ctk writes (YAML 0.3.0 and 0.5.0, JSON) and an amd-ctk-shaped one", () => {
        for (const file of ["nvidia-ctk-wsl2.yaml", "nvidia-ctk-1gpu.yaml", "nvidia-ctk-1gpu.json", "amd-ctk-2gpu.json"]) {
            const spec = validateCdiSpec(fs.readFileSync(path.join(CDI_FIXTURES, file), "utf8"), file);
            assert.ok(spec.devices.length > 0, file);
        }
        assert.deepStrictEqual(
            validateCdiSpec(fs.readFileSync(path.join(CDI_FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8")).devices.map((d) => d.name),
            ["0", "GPU-08b3c2e8-cb7b-ea3f-7711-a042c580b3e8", "all"],
        );
    });

    it("reports every problem with the file and the path, in one error", () => {
        const spec = base();
        spec.devices.push({ name: "gpu0", containerEdits: { env: ["NOEQUALS"], hooks: [{ hookName: "createContainer", path: "nvidia-cdi-hook" }] } });
        assert.throws(
            () => validateCdiSpec(spec, "/etc/cdi/nvidia.yaml"),
            (err: Error) => {
                assert.strictEqual(
                    err.message,
                    [
                        "/etc/cdi/nvidia.yaml: invalid CDI spec (3 problems):",
                        '  - /etc/cdi/nvidia.yaml: devices[1].containerEdits.env[0]: environment entry "NOEQUALS" is not KEY=VALUE',
                        "  - /etc/cdi/nvidia.yaml: devices[1].containerEdits.hooks[0].path: expected an absolute path",
                        '  - /etc/cdi/nvidia.yaml: devices[1].name: duplicate device name "gpu0" (also devices[0])',
                    ].join("\n"),
                );
                return true;
            },
        );
    });

    it("requires cdiVersion, kind and at least one device, and knows the released versions", () => {
        assert.deepStrictEqual(problems({ devices: [] }), [
            'cdiVersion: expected the CDI version, e.g. "0.5.0"',
            "kind: expected the kind, vendor/class",
            "devices: a CDI spec needs at least one device",
        ]);
        assert.deepStrictEqual(problems({ ...base(), cdiVersion: "0.2.0" }), [
            'cdiVersion: unknown CDI version "0.2.0" (CDI before 0.3.0 used another format); known: 0.3.0, 0.4.0, 0.5.0, 0.6.0, 0.7.0, 0.8.0, 1.0.0, 1.1.0',
        ]);
        assert.deepStrictEqual(problems({ ...base(), cdiVersion: 0.5 }), ['cdiVersion: expected the CDI version, e.g. "0.5.0"']);
        assert.deepStrictEqual(CDI_VERSIONS, ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"]);
    });

    it("kind: vendor/class as SPEC.md's examples say (valid: vendor.com/foo, foo.bar.baz/foo-bar123.B_az; invalid: foo, vendor.com/foo/, vendor.com/foo/bar)", () => {
        assert.deepStrictEqual(problems({ ...base(), kind: "vendor.com/foo" }), []);
        assert.deepStrictEqual(problems({ ...base(), kind: "foo.bar.baz/foo-bar123.B_az", cdiVersion: "0.6.0" }), []);
        for (const kind of ["foo", "vendor.com/foo/", "vendor.com/foo/bar"]) {
            assert.deepStrictEqual(problems({ ...base(), kind }), [`kind: kind ${JSON.stringify(kind)} must be vendor/class, e.g. vendor.com/gpu`], kind);
        }
        assert.deepStrictEqual(problems({ ...base(), kind: "1vendor.com/gpu" }), [
            'kind: vendor "1vendor.com" must be a DNS subdomain starting with a letter (e.g. vendor.com)',
        ]);
        assert.deepStrictEqual(problems({ ...base(), kind: "vendor.com/gpu-" }), [
            'kind: class "gpu-" must start with a letter, end with a letter or digit, and hold only letters, digits, -, _ and . (63 at most)',
        ]);
        assert.deepStrictEqual(problems({ ...base(), kind: `vendor.com/${"a".repeat(64)}` }).length, 1);
        // Dots in the class came with 0.6.0.
        assert.deepStrictEqual(problems({ ...base(), kind: "foo.bar.baz/foo-bar123.B_az" }), [
            "kind: a dot in the class part of kind needs cdiVersion 0.6.0 or later (the spec declares 0.5.0)",
        ]);
    });

    it("device names: letters or digits at both ends, - _ . : between; a leading digit needs 0.5.0; names are unique; a number is not a name", () => {
        for (const name of ["0", "0:1", "GPU-08b3c2e8-cb7b-ea3f-7711-a042c580b3e8", "all", "a_b.c"])
            assert.deepStrictEqual(problems({ ...base(), devices: [{ ...base().devices[0], name }] }), [], name);
        for (const name of ["-a", "a-", "a b", "a/b", ""])
            assert.strictEqual(problems({ ...base(), devices: [{ ...base().devices[0], name }] }).length, 1, name);
        assert.deepStrictEqual(problems({ ...base(), cdiVersion: "0.4.0", devices: [{ ...base().devices[0], name: "0" }] }), [
            'devices[0].name: a device name starting with a digit ("0") needs cdiVersion 0.5.0 or later (the spec declares 0.4.0)',
        ]);
        assert.deepStrictEqual(problems(parseYaml("cdiVersion: 0.5.0\nkind: vendor.com/gpu\ndevices:\n- name: 0\n  containerEdits: {env: [A=1]}\n")), [
            "devices[0].name: expected the device name",
        ]);
    });

    it("container edits: env KEY=VALUE, absolute device paths, device types b/c/u/p, permissions from r/w/m, no negative device numbers", () => {
        const spec = base();
        spec.devices[0].containerEdits = {
            env: ["=x", "OK=1", "NOVALUE"],
            deviceNodes: [{ path: "dev/gpu0", type: "x", permissions: "rwx", major: -1 }],
        };
        assert.deepStrictEqual(problems(spec), [
            'devices[0].containerEdits.env[0]: environment entry "=x" is not KEY=VALUE',
            'devices[0].containerEdits.env[2]: environment entry "NOVALUE" is not KEY=VALUE',
            "devices[0].containerEdits.deviceNodes[0].path: expected an absolute path",
            "devices[0].containerEdits.deviceNodes[0].type: expected device type b, c, u or p",
            "devices[0].containerEdits.deviceNodes[0].major: expected a non-negative device number",
            "devices[0].containerEdits.deviceNodes[0].permissions: expected cgroup permissions made of r, w and m",
        ]);
    });

    it("mounts need a host path and an absolute container path; hooks a known name, an absolute path and a positive timeout", () => {
        const spec = base();
        spec.devices[0].containerEdits = {
            mounts: [{ hostPath: "", containerPath: "opt" }],
            hooks: [{ hookName: "prestop", path: "/bin/true", timeout: 0, env: ["X"] }],
        };
        assert.deepStrictEqual(problems(spec), [
            "devices[0].containerEdits.mounts[0].hostPath: expected the host path",
            "devices[0].containerEdits.mounts[0].containerPath: expected an absolute path",
            "devices[0].containerEdits.hooks[0].hookName: expected a hook name: prestart, createRuntime, createContainer, startContainer, poststart, poststop",
            'devices[0].containerEdits.hooks[0].env[0]: environment entry "X" is not KEY=VALUE',
            "devices[0].containerEdits.hooks[0].timeout: expected a timeout above 0 seconds",
        ]);
    });

    it("a device needs at least one edit; unknown keys are errors (runtimes parse specs strictly)", () => {
        const spec = base();
        spec.devices[0].containerEdits = {};
        spec.devices[0].extra = true;
        spec.containerEdits = { annotations: { a: "b" } };
        assert.deepStrictEqual(problems(spec), [
            "devices[0]: unknown key extra (not part of CDI up to 1.1.0)",
            "containerEdits: unknown key annotations (not part of CDI up to 1.1.0)",
            "devices[0].containerEdits: a device needs at least one container edit (env, deviceNodes, mounts, hooks, ...)",
        ]);
    });

    it("fields that need a newer cdiVersion, each from the version history", () => {
        const spec = base();
        spec.cdiVersion = "0.3.0";
        spec.annotations = { "vendor.com/owner": "ci" };
        spec.devices[0].name = "gpu0";
        spec.devices[0].annotations = { note: "x" };
        spec.devices[0].containerEdits = {
            deviceNodes: [{ path: "/dev/gpu0", hostPath: "/dev/null" }],
            mounts: [{ hostPath: "tmpfs", containerPath: "/scratch", type: "tmpfs" }],
            additionalGids: [44],
            intelRdt: { closID: "gpu" },
            netDevices: [{ hostInterfaceName: "eth1", name: "net0" }],
        };
        assert.deepStrictEqual(problems(spec), [
            "annotations: the annotations field needs cdiVersion 0.6.0 or later (the spec declares 0.3.0)",
            "devices[0].annotations: the annotations field needs cdiVersion 0.6.0 or later (the spec declares 0.3.0)",
            "devices[0].containerEdits.deviceNodes[0].hostPath: hostPath needs cdiVersion 0.5.0 or later (the spec declares 0.3.0)",
            "devices[0].containerEdits.mounts[0].type: a mount type needs cdiVersion 0.4.0 or later (the spec declares 0.3.0)",
            "devices[0].containerEdits.intelRdt: intelRdt needs cdiVersion 0.7.0 or later (the spec declares 0.3.0)",
            "devices[0].containerEdits.additionalGids: additionalGids needs cdiVersion 0.7.0 or later (the spec declares 0.3.0)",
            "devices[0].containerEdits.netDevices: netDevices needs cdiVersion 1.1.0 or later (the spec declares 0.3.0)",
        ]);
        assert.deepStrictEqual(problems({ ...spec, cdiVersion: "1.1.0" }), []);
        const { cdiVersion: _v, ...body } = spec;
        assert.strictEqual(minimumCdiVersion(body as never), "1.1.0");
        spec.devices[0].containerEdits = { intelRdt: { closID: "gpu", enableCMT: true } };
        assert.deepStrictEqual(problems({ ...spec, cdiVersion: "1.1.0" }), [
            "devices[0].containerEdits.intelRdt.enableCMT: enableCMT is not valid from cdiVersion 1.1.0 on (use enableMonitoring)",
        ]);
        assert.deepStrictEqual(problems({ ...spec, cdiVersion: "0.7.0" }), []);
    });

    it("says when the text is neither YAML nor JSON", () => {
        assert.deepStrictEqual(problems("devices: [unclosed", "/etc/cdi/broken.yaml").length, 1);
        assert.match(problems("devices: [unclosed")[0], /^not YAML or JSON: /);
    });
});

describe("CDI spec renderer", () => {
    it("renders YAML that validates, with the lowest cdiVersion its content needs", () => {
        const simple = renderCdiSpec({ kind: "vendor.test/gpu", devices: [{ name: "gpu0", env: { B: "2", A: "1" } }] });
        assert.strictEqual(
            simple,
            "---\ncdiVersion: 0.3.0\nkind: vendor.test/gpu\ndevices:\n  - name: gpu0\n    containerEdits:\n      env:\n        - A=1\n        - B=2\n",
        );
        const spec = buildCdiSpec({
            kind: "vendor.test/gpu",
            devices: [
                {
                    name: "0",
                    deviceNodes: [{ path: "/dev/fakegpu0", hostPath: "/dev/null", type: "c" }],
                    mounts: [{ hostPath: "/srv/x", containerPath: "/opt/x", options: ["ro", "rbind"] }],
                },
            ],
            containerEdits: { env: ["FAKE_GPU_DRIVER=1"] },
        });
        assert.strictEqual(spec.cdiVersion, "0.5.0");
        assert.deepStrictEqual(spec.containerEdits, { env: ["FAKE_GPU_DRIVER=1"] });
        const yaml = renderCdiSpec({ kind: "vendor.test/gpu", devices: [{ name: "0", env: ["A=1"] }] });
        assert.match(yaml, /name: "0"/, "a numeric-looking name stays a string");
        assert.deepStrictEqual(validateCdiSpec(yaml).devices[0].name, "0");
        assert.strictEqual(buildCdiSpec({ kind: "vendor.test/gpu", annotations: { owner: "ci" }, devices: [{ name: "a", env: ["A=1"] }] }).cdiVersion, "0.6.0");
    });

    it("renders JSON on request, and keeps an explicit cdiVersion", () => {
        const json = renderCdiSpec({ kind: "amd.com/gpu", cdiVersion: "0.6.0", format: "json", devices: [{ name: "0", deviceNodes: [{ path: "/dev/kfd" }] }] });
        assert.deepStrictEqual(JSON.parse(json), {
            cdiVersion: "0.6.0",
            kind: "amd.com/gpu",
            devices: [{ name: "0", containerEdits: { deviceNodes: [{ path: "/dev/kfd" }] } }],
        });
    });

    it("refuses to render a spec the validator rejects", () => {
        assert.throws(
            () =>
                renderCdiSpec({
                    kind: "vendor.test/gpu",
                    devices: [
                        { name: "a", env: ["A=1"] },
                        { name: "a", env: ["NOPE"] },
                    ],
                }),
            /CDI spec vendor\.test\/gpu: invalid CDI spec \(2 problems\):\n {2}- CDI spec vendor\.test\/gpu: devices\[1\]\.containerEdits\.env\[0\]: environment entry "NOPE" is not KEY=VALUE\n {2}- CDI spec vendor\.test\/gpu: devices\[1\]\.name: duplicate device name "a" \(also devices\[0\]\)$/,
        );
        assert.throws(
            () => renderCdiSpec({ kind: "vendor.test/gpu", cdiVersion: "0.3.0", devices: [{ name: "0", env: ["A=1"] }] }),
            /needs cdiVersion 0\.5\.0/,
        );
    });
});
