#!/usr/bin/env bash
# Builds the runc wrapper (wrapper/: Go's standard library and a small C front) into
# dist/wrapper/runc-wrapper: static, reproducible paths, no symbols. Does nothing when the
# binary is newer than every source file, so `npm run build` stays fast.
#   build-wrapper.sh [--output PATH] [--config-path PATH [--real-runc PATH] [--log-path PATH] [--state-dir DIR]]
# --config-path builds a test variant that reads its settings from PATH instead of
# /etc/gpu-workers/runc-wrapper.json; every other path it uses is its own too: the log for
# failures that come before the settings (default: beside PATH), the runc that calls other
# than create and run go to (default: runc on this machine's PATH) and the folder of what it
# learns about the runtime (default: beside PATH). Production never uses a variant.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
output="$root/dist/wrapper/runc-wrapper"
config_path=""; real_runc=""; log_path=""; state_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output=$2; shift 2 ;;
    --config-path) config_path=$2; shift 2 ;;
    --real-runc) real_runc=$2; shift 2 ;;
    --log-path) log_path=$2; shift 2 ;;
    --state-dir) state_dir=$2; shift 2 ;;
    *) echo "build-wrapper: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$config_path" ] && [ -n "$real_runc$log_path$state_dir" ]; then
  echo "build-wrapper: --real-runc, --log-path and --state-dir make a test variant and need --config-path" >&2
  exit 2
fi

# Up to date: the output exists and no source is newer (a variant always rebuilds).
if [ -z "$config_path" ] && [ -x "$output" ] && \
   [ -z "$(find "$root/wrapper" -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' -o -name go.mod \) -newer "$output" -print -quit)" ]; then
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
# The front (wrapper/front.c) is C, linked statically against the C library.
cc=${CC:-gcc}
libc_a=$("$cc" -print-file-name=libc.a 2>/dev/null || true)
if ! command -v "$cc" >/dev/null 2>&1 || [ "$libc_a" = libc.a ] || [ ! -f "$libc_a" ]; then
  echo "build-wrapper: the wrapper's C front needs a C compiler and the static C library (Debian: apt-get install gcc libc6-dev)" >&2
  exit 1
fi

# go needs a build cache; a service environment may have no HOME to put it in.
# shellcheck source-path=SCRIPTDIR source=go-caches.sh
. "$root/scripts/go-caches.sh"
go_private_caches "$root"

# A variant's paths reach front.c as -D definitions, which cgo splits on spaces.
cflags=""
define() {
  case "$2" in
    /*) ;;
    *) echo "build-wrapper: $1 must be an absolute path (got '$2')" >&2; exit 2 ;;
  esac
  case "$2" in
    *[[:space:]\"\'\\]*) echo "build-wrapper: $1 must not hold spaces, quotes or backslashes (got '$2')" >&2; exit 2 ;;
  esac
  cflags="$cflags -D$1=\"$2\""
}
if [ -n "$config_path" ]; then
  config_dir=$(dirname "$config_path")
  define GW_CONFIG_PATH "$config_path"
  define GW_LOG_PATH "${log_path:-$config_dir/runc-wrapper.log}"
  define GW_REAL_RUNC "${real_runc:-$(command -v runc || echo /usr/sbin/runc)}"
  define GW_STATE_DIR "${state_dir:-$config_dir/run}"
fi

mkdir -p "$(dirname "$output")"
tmp="$output.tmp.$$"
trap 'rm -f "$tmp"' EXIT
(cd "$root/wrapper" && CGO_ENABLED=1 CGO_CFLAGS="-O2 $cflags" GOOS=linux CC="$cc" "$go_bin" build -trimpath -buildvcs=false -tags gpuworkers_front \
  -ldflags "-s -w -linkmode external -extldflags -static" -o "$tmp" .)
mv -f "$tmp" "$output"
