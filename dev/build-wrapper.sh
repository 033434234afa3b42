#!/usr/bin/env bash
# Builds the runc wrapper (wrapper/, stdlib-only Go) into dist/wrapper/runc-wrapper:
# static (no cgo), reproducible paths, no symbols. Does nothing when the binary is newer
# than every source file, so `npm run build` stays fast.
#   build-wrapper.sh [--output PATH] [--config-path PATH]
# --config-path builds a variant that reads its settings from PATH instead of
# /etc/gpu-workers/runc-wrapper.json (tests use it; production never does).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
output="$root/dist/wrapper/runc-wrapper"
config_path=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output=$2; shift 2 ;;
    --config-path) config_path=$2; shift 2 ;;
    *) echo "build-wrapper: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# Up to date: the output exists and no source is newer (a variant always rebuilds).
if [ -z "$config_path" ] && [ -x "$output" ] && \
   [ -z "$(find "$root/wrapper" -type f \( -name '*.go' -o -name go.mod \) -newer "$output" -print -quit)" ]; then
  exit 0
fi

go_bin=$(command -v go || true)
if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then
  go_bin=/usr/local/go/bin/go
fi
if [ -z "$go_bin" ]; then
  echo "build-wrapper: Go is not installed (no 'go' on PATH nor /usr/local/go/bin/go); the runc wrapper in wrapper/ needs Go 1.19 or newer to build" >&2
  exit 1
fi

# go needs a build cache; a service environment may have no HOME to put it in.
if [ -z "${GOCACHE:-}" ] && [ -z "${HOME:-}" ] && [ -z "${XDG_CACHE_HOME:-}" ]; then
  export GOCACHE=/tmp/gpu-workers-go-cache
fi

ldflags="-s -w"
if [ -n "$config_path" ]; then
  ldflags="$ldflags -X main.configPath=$config_path"
fi
mkdir -p "$(dirname "$output")"
tmp="$output.tmp.$$"
trap 'rm -f "$tmp"' EXIT
(cd "$root/wrapper" && CGO_ENABLED=0 GOOS=linux "$go_bin" build -trimpath -ldflags "$ldflags" -o "$tmp" .)
mv -f "$tmp" "$output"
