#!/usr/bin/env bash
# Builds cdi-check (cdi-check/: the CDI spec checker that generate-cdi.sh runs on hosts, with
# the CDI project's own library) into dist/cdi-check/cdi-check: static, reproducible paths, no
# symbols. Its modules beside Go's standard library (the CDI library and what it needs) come
# through the Go module proxy, checked against go.sum. Does nothing when the binary is newer
# than every source file.
#   build-cdi-check.sh [--output PATH]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
output="$root/dist/cdi-check/cdi-check"
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output=$2; shift 2 ;;
    *) echo "build-cdi-check: unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [ -x "$output" ] && \
   [ -z "$(find "$root/cdi-check" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$output" -print -quit)" ]; then
  exit 0
fi

go_bin=$(command -v go || true)
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "build-cdi-check: Go is not installed (no 'go' on PATH nor /usr/local/go/bin/go); cdi-check/ needs Go 1.23 or newer to build" >&2
  exit 1
fi
# go needs a build cache and a module cache; a service environment may have no HOME to put them in.
# shellcheck source-path=SCRIPTDIR source=go-caches.sh
. "$root/scripts/go-caches.sh"
go_private_caches "$root"

mkdir -p "$(dirname "$output")"
# -buildvcs=false: the same source gives the same bytes in any checkout (go would stamp the commit
# into the binary, and every commit would then place a "new" binary on the hosts).
tmp="$output.tmp.$$"
trap 'rm -f "$tmp"' EXIT
if ! (cd "$root/cdi-check" && CGO_ENABLED=0 GOOS=linux GOFLAGS=-mod=readonly "$go_bin" build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp" .); then
  echo "build-cdi-check: the build failed; it needs the CDI library from the Go module proxy (GOPROXY) or the module cache" >&2
  exit 1
fi
mv -f "$tmp" "$output"
