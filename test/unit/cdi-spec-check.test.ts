/**
 * CdiSpecCheck: the spec a vendor's tool generated on the host, as generate-cdi.sh prints it,
 * goes through the project's CDI validator.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { CDI_SPEC_MARKER, create, diff } from "../../components/providers/checks/cdi-spec-check-ops";

const FIXTURES = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery", "cdi");
const ensureOutput = (spec: string) =>
    `generate-cdi: /etc/cdi/nvidia.yaml is current\ngenerate-cdi: 1 selected device(s) resolve: nvidia.com/gpu=0\n${CDI_SPEC_MARKER}\n${spec}`;
const inputs = (spec: string) => ({ host: "gpu-a", path: "/etc/cdi/nvidia.yaml", ensureOutput: ensureOutput(spec) });

describe("CdiSpecCheck (the generated spec through the project's validator)", () => {
    it("a spec nvidia-ctk wrote passes, and its kind and device names come out", async () => {
        const { id, outs } = await create(inputs(fs.readFileSync(path.join(FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8")));
        assert.strictEqual(id, "gpu-a:/etc/cdi/nvidia.yaml");
        assert.strictEqual(outs.kind, "nvidia.com/gpu");
        assert.ok(outs.devices.includes("0") && outs.devices.includes("all"), outs.devices.join(","));
    });

    it("a spec that breaks the CDI rules fails the update, naming host, path and every problem", async () => {
        const bad =
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: '0'\n    containerEdits:\n      env: [NVIDIA_VISIBLE_DEVICES]\n  - name: '0'\n    containerEdits:\n      deviceNodes: [{path: /dev/nvidia0}]\n";
        await assert.rejects(create(inputs(bad)), (e: Error) => {
            assert.match(e.message, /gpu-a:\/etc\/cdi\/nvidia\.yaml/);
            assert.match(e.message, /env\[0\]/);
            assert.match(e.message, /duplicate device name "0"/);
            return true;
        });
    });

    it("output without the marker (an older script) is an error, not a silent pass", async () => {
        await assert.rejects(
            create({ host: "gpu-a", path: "/etc/cdi/nvidia.yaml", ensureOutput: "generate-cdi: /etc/cdi/nvidia.yaml is current\n" }),
            /printed no spec to check/,
        );
    });

    it("a regenerated spec is checked again; the same output is no change", async () => {
        const a = inputs("x");
        assert.deepStrictEqual(await diff("id", a, a), { changes: false });
        assert.deepStrictEqual(await diff("id", a, inputs("y")), { changes: true });
    });
});
