#!/usr/bin/env bash
# Builds containerd-toml (containerd-toml/: the TOML merge that apply-containerd-config.sh
# runs on hosts) into dist/containerd-toml/containerd-toml: static, reproducible paths, no
# symbols. Its one module beside Go's standard library (a TOML parser) comes through the Go
# module proxy, checked against go.sum. Does nothing when the binary is newer than every
# source file.
#   build-containerd-toml.sh [--output PATH]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
output="$root/dist/containerd-toml/containerd-toml"
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output=$2; shift 2 ;;
    *) echo "build-containerd-toml: unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [ -x "$output" ] && \
   [ -z "$(find "$root/containerd-toml" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$output" -print -quit)" ]; then
  exit 0
fi

go_bin=$(command -v go || true)
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "build-containerd-toml: Go is not installed (no 'go' on PATH nor /usr/local/go/bin/go); containerd-toml/ needs Go 1.19 or newer to build" >&2
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
if ! (cd "$root/containerd-toml" && CGO_ENABLED=0 GOOS=linux GOFLAGS=-mod=readonly "$go_bin" build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp" .); then
  echo "build-containerd-toml: the build failed; it needs its TOML module from the Go module proxy (GOPROXY) or the module cache" >&2
  exit 1
fi
mv -f "$tmp" "$output"
