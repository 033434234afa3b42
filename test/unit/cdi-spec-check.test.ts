/**
 * CdiSpecCheck: the spec a vendor's tool generated on the host, as generate-cdi.sh prints it
 * once the CDI library accepted it there (cdi-check): its kind and device names are recorded,
 * and output without the library's verdict fails.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { CDI_SPEC_MARKER, cdiLibraryVerdict, create, diff } from "../../components/providers/checks/cdi-spec-check-ops";

const FIXTURES = path.join(PACKAGE_ROOT, "test", "fixtures", "discovery", "cdi");
const SPEC_PATH = "/etc/cdi/nvidia.yaml";
const ensureOutput = (spec: string, verdict = cdiLibraryVerdict(SPEC_PATH)) =>
    `generate-cdi: ${SPEC_PATH} is current\n${verdict}\ngenerate-cdi: 1 selected device(s) resolve: nvidia.com/gpu=0\n${CDI_SPEC_MARKER}\n${spec}`;
const inputs = (spec: string, verdict?: string) => ({ host: "gpu-a", path: SPEC_PATH, ensureOutput: ensureOutput(spec, verdict) });

describe("CdiSpecCheck (the kind and devices of the spec the CDI library accepted on the host)", () => {
    it("a spec nvidia-ctk wrote: its kind and device names come out", async () => {
        const { id, outs } = await create(inputs(fs.readFileSync(path.join(FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8")));
        assert.strictEqual(id, "gpu-a:/etc/cdi/nvidia.yaml");
        assert.strictEqual(outs.kind, "nvidia.com/gpu");
        assert.deepStrictEqual(outs.devices, ["0", "GPU-08b3c2e8-cb7b-ea3f-7711-a042c580b3e8", "all"]);
    });

    it("the CDI rules are the library's, not judged again here: a relative hook path passes", async () => {
        const spec = fs.readFileSync(path.join(PACKAGE_ROOT, "test", "fixtures", "cdi-corpus", "accepted-relative-hook-path.yaml"), "utf8");
        const { outs } = await create(inputs(spec));
        assert.deepStrictEqual([outs.kind, outs.devices], ["vendor.com/gpu", ["gpu0"]]);
    });

    it("output without the library's verdict on this path (a script from before cdi-check), or without the spec, is an error, not a silent pass", async () => {
        const spec = fs.readFileSync(path.join(FIXTURES, "nvidia-ctk-1gpu.yaml"), "utf8");
        await assert.rejects(create(inputs(spec, "")), /gpu-a:\/etc\/cdi\/nvidia\.yaml: generate-cdi\.sh printed no verdict of the CDI library/);
        await assert.rejects(create(inputs(spec, cdiLibraryVerdict("/etc/cdi/other.yaml"))), /printed no verdict of the CDI library/);
        await assert.rejects(create({ host: "gpu-a", path: SPEC_PATH, ensureOutput: `generate-cdi: ${SPEC_PATH} is current\n` }), /printed no spec/);
        await assert.rejects(create(inputs("devices: [unclosed")), /is not YAML or JSON/);
        await assert.rejects(create(inputs("kind: nvidia.com/gpu\n")), /has no kind or device names to record/);
    });

    it("a regenerated spec is checked again; the same output is no change", async () => {
        const a = inputs("x");
        assert.deepStrictEqual(await diff("id", a, a), { changes: false });
        assert.deepStrictEqual(await diff("id", a, inputs("y")), { changes: true });
    });
});
