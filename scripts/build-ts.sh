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
# The settings' interface with each field's doc as JSDoc (components/lib/settings/settings-layer.generated.ts,
# what GpuWorkerArgs and the package's .d.ts take the docs from) is written from the schema, the one place a doc
# is written, by the program just built; where that changed it, or the old one kept tsc from passing (a schema
# changed under it: tsc emits all the same), tsc compiles again, and only that second run decides.
generated="$root/components/lib/settings/settings-layer.generated.ts"
before=$(cat "$generated" 2>/dev/null || true)
passed=true
"$root/node_modules/.bin/tsc" --build "$root/tsconfig.json" || passed=false
node "$root/dist/cli/settings-types.js" >/dev/null
if [ "$passed" = false ] || [ "$(cat "$generated")" != "$before" ]; then
  "$root/node_modules/.bin/tsc" --build "$root/tsconfig.json"
fi
