// Prints, one per line, the flags that an older Node.js language host (sdk v3.68, the engine
// bootstrap's fallback) takes for the runtime options of the project around the working
// directory: the engine hands those options over a newer RPC only, so without them that host
// runs with its defaults (typescript: true, which loads ts-node into every program).
// Run by the launcher bootstrap-engine.sh writes; the engine starts it in the program's folder.
"use strict";
const fs = require("fs");
const path = require("path");

// The runtime options that host reads as flags (-name=value), by their name in Pulumi.yaml.
const FLAG_OPTIONS = ["typescript", "tsconfig", "nodeargs"];

function fail(message) {
    process.stderr.write(`pulumi-language-nodejs: ${message}\n`);
    process.exit(1);
}

/** The project file in `dir` or the nearest folder above it, or undefined. */
function projectFile(dir) {
    for (;;) {
        const found = ["Pulumi.yaml", "Pulumi.yml"].map((name) => path.join(dir, name)).find((file) => fs.existsSync(file));
        if (found) return found;
        const parent = path.dirname(dir);
        if (parent === dir) return undefined;
        dir = parent;
    }
}

const file = projectFile(process.cwd());
if (!file) process.exit(0);
let yaml;
try {
    // js-yaml comes with @pulumi/pulumi, which every Node.js program has installed.
    const projectDir = path.dirname(file);
    const sdkDir = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [process.cwd(), projectDir] }));
    yaml = require(require.resolve("js-yaml", { paths: [projectDir, sdkDir] }));
} catch (e) {
    fail(`cannot load js-yaml through @pulumi/pulumi to read ${file}: ${e.message}`);
}
let project;
try {
    project = yaml.load(fs.readFileSync(file, "utf8"));
} catch (e) {
    fail(`${file}: ${e.message}`);
}
const runtime = project && project.runtime;
const options = (runtime && typeof runtime === "object" && runtime.options) || {};
for (const name of FLAG_OPTIONS) {
    const value = options[name];
    if (value === undefined || value === null) continue;
    if (typeof value === "object") fail(`${file}: runtime.options.${name} must be a string or a boolean`);
    if (String(value).includes("\n")) fail(`${file}: runtime.options.${name} must be one line`);
    console.log(`-${name}=${value}`);
}
