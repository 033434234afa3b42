#!/usr/bin/env bash
# Builds one of the project's small Go tools that hosts run (containerd-toml/, cdi-check/: a
# folder of its own with go.mod and go.sum) into dist/<tool>/<tool>: static, reproducible paths,
# no symbols. Its modules beside Go's standard library come through the Go module proxy, checked
# against go.sum. Does nothing when the binary is newer than every source file.
#   build-go-tool.sh TOOL MIN_GO MODULES [--output PATH]
# MIN_GO and MODULES (what it needs from the proxy, in words) only go into the error messages.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=${1:?build-go-tool: the tool folder is required}
min_go=${2:?build-go-tool: the least Go version is required}
modules=${3:?build-go-tool: what it needs from the module proxy is required}
shift 3
output="$root/dist/$tool/$tool"
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output=$2; shift 2 ;;
    *) echo "build-$tool: unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [ -x "$output" ] && \
   [ -z "$(find "$root/$tool" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$output" -print -quit)" ]; then
  exit 0
fi

go_bin=$(command -v go || true)
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "build-$tool: Go is not installed (no 'go' on PATH nor /usr/local/go/bin/go); $tool/ needs Go $min_go or newer to build" >&2
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
if ! (cd "$root/$tool" && CGO_ENABLED=0 GOOS=linux GOFLAGS=-mod=readonly "$go_bin" build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp" .); then
  echo "build-$tool: the build failed; it needs $modules from the Go module proxy (GOPROXY) or the module cache" >&2
  exit 1
fi
mv -f "$tmp" "$output"
