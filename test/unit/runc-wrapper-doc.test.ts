/**
 * docs/runc-wrapper.md's example of the wrapper's settings is the file the render writes for
 * the worker it names (a worker of an example stack): a change of renderWrapperConfig, or of
 * that stack, that leaves the doc behind fails here.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "../../components/lib/host/scripts";
import { WRAPPER_CONFIG_PATH } from "../../components/lib/links/runc-wrapper/render";
import { goldenStacks, renderGolden } from "../support/golden-stacks";

const DOC = "docs/runc-wrapper.md";

/** The worker the section names, its example stack, and the section's first JSON block. */
function settingsExample(doc: string): { worker: string; stack: string; json: string } {
    const start = doc.indexOf("\n## Its settings\n");
    assert.ok(start >= 0, `${DOC}: no section "## Its settings"`);
    const section = doc.slice(start, doc.indexOf("\n## ", start + 1));
    const named = /The worker `([^`]+)` of `examples\/stacks\/Pulumi\.([^.`]+)\.yaml`/.exec(section);
    assert.ok(named, `${DOC}, "## Its settings": names no worker of an example stack ("The worker \`NAME\` of \`examples/stacks/Pulumi.STACK.yaml\`")`);
    const block = /```json\n([\s\S]*?)```/.exec(section);
    assert.ok(block, `${DOC}, "## Its settings": no \`\`\`json block`);
    return { worker: named[1], stack: named[2], json: block[1] };
}

/** The settings file the render writes for a worker of an example stack. */
function renderedSettings(stack: string, worker: string): string {
    const golden = goldenStacks().find((s) => s.name === `example-${stack}`);
    assert.ok(golden, `no example stack examples/stacks/Pulumi.${stack}.yaml`);
    const host = renderGolden(golden).find((h) => h.manifest.host === worker);
    assert.ok(host, `examples/stacks/Pulumi.${stack}.yaml has no host ${worker}`);
    const content = host.contents.get(WRAPPER_CONFIG_PATH);
    assert.ok(typeof content === "string", `the render places no ${WRAPPER_CONFIG_PATH} on ${worker}`);
    return content;
}

describe(`${DOC}: the example settings are a render's`, () => {
    const doc = fs.readFileSync(path.join(PACKAGE_ROOT, DOC), "utf8");

    it("the example is, byte for byte, the settings file the render writes for the worker it names", () => {
        const example = settingsExample(doc);
        assert.strictEqual(example.json, renderedSettings(example.stack, example.worker), `${DOC}'s example of ${WRAPPER_CONFIG_PATH}`);
    });
});
