#!/usr/bin/env node
// The dev stack's config as `npm run up` hands it to pulumi (--config-file): Pulumi.dev.yaml, with
// the Concourse release that is reachable here, or, where none is, without the web and without the
// worker's release (the chain then stops before the Concourse worker).
//   node scripts/dev-stack-config.js --release PATH VERSION   a release tarball and its version
//   node scripts/dev-stack-config.js --no-release
// Writes the config to stdout; comments and the encryption salt stay as they are.
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");

const [mode, release, version] = process.argv.slice(2);
if (!(mode === "--no-release" || (mode === "--release" && release && /^[0-9]+(\.[0-9]+)+$/.test(version || "")))) {
    process.stderr.write("usage: dev-stack-config.js --release PATH VERSION | --no-release\n");
    process.exit(2);
}
const file = path.resolve(__dirname, "..", "Pulumi.dev.yaml");
const doc = YAML.parseDocument(fs.readFileSync(file, "utf8"));
const concourse = ["config", "gpu-workers:defaults", "concourse"];
if (mode === "--release") {
    doc.setIn([...concourse, "version"], version);
    doc.setIn([...concourse, "binary"], doc.createNode({ path: release }));
} else {
    doc.deleteIn(["config", "gpu-workers:web"]);
    doc.deleteIn([...concourse, "binary"]);
}
process.stdout.write(doc.toString());
