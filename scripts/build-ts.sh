#!/usr/bin/env bash
# Compiles the TypeScript into dist/ (the first step of `npm run build`) with `tsc --build`, which
# keeps what it knows of the last build in dist/tsconfig.tsbuildinfo (tsconfig.json: incremental)
# and does nothing when no source file changed: 1 s on the project's 2-core machine where a whole
# build takes 14 s, so `npm run render` and `npm run discover` start at once when dist/ is current.
# tsc --build does not look into node_modules: after an npm install (node_modules/.package-lock.json
# newer than that record) this builds everything again, type checks included. It never makes again
# a file removed from dist/ by hand: remove dist/ (or its tsconfig.tsbuildinfo) for that.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
record="$root/dist/tsconfig.tsbuildinfo"
if [ -f "$record" ] && [ "$root/node_modules/.package-lock.json" -nt "$record" ]; then
  rm -f "$record"
fi
# The settings' interfaces with each field's doc as JSDoc (components/lib/**/*.generated.ts, what GpuWorkerArgs,
# ConcourseWebArgs, KubernetesGpuNodesArgs and the package's .d.ts take the docs from) are written from the
# schemas, the one place a doc is written, by the program just built; where that changed one, or an old one kept
# tsc from passing (a schema changed under it: tsc emits all the same), tsc compiles again, and that run decides.
generated() { cat "$root"/components/lib/settings/*.generated.ts "$root"/components/lib/kubernetes/*.generated.ts 2>/dev/null || true; }
before=$(generated)
passed=true
"$root/node_modules/.bin/tsc" --build "$root/tsconfig.json" || passed=false
node "$root/dist/cli/settings-types.js" >/dev/null
if [ "$passed" = false ] || [ "$(generated)" != "$before" ]; then
  "$root/node_modules/.bin/tsc" --build "$root/tsconfig.json"
fi
