#!/usr/bin/env bash
# Installs the container runtime the chain configures, from the distribution's packages, where
# the host lacks it; the chain assumes nothing of the host's runtime.
#   runtime-packages.sh ensure COMMAND=PACKAGE...   e.g. containerd=containerd runc=runc
#   runtime-packages.sh remove COMMAND=PACKAGE...   purge what ensure installed, nothing else
#   runtime-packages.sh check  COMMAND=PACKAGE...   exit 1 when a command is missing
# A command already on the host (from any source) is left as it is. What ensure installs
# (dependencies included) is recorded by ownership.sh, one record per list of packages, so
# remove takes away only that: the steps that share this script (containerd's, the runc
# wrapper's) each undo their own install and never the other's.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
HERE=$(cd "$(dirname "$0")" && pwd)
# Earlier versions kept one list for every step.
LEGACY="$STATE_DIR/runtime-packages.installed"

die() { echo "runtime-packages: $*" >&2; exit 1; }

action=${1:-}; shift || true
[ $# -gt 0 ] || die "usage: runtime-packages.sh ensure|remove|check COMMAND=PACKAGE..."
for pair in "$@"; do
  case "$pair" in
    *=*) ;;
    *) die "expected COMMAND=PACKAGE, got '$pair'" ;;
  esac
done

packages=()
for pair in "$@"; do packages+=("${pair#*=}"); done
RECORD="$STATE_DIR/runtime-packages-$(printf '%s\n' "${packages[@]}" | sort -u | paste -sd+)"

# A command the host has: on PATH, or in the sbin folders a login shell of another user lacks.
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

ensure() {
  local pair command package missing=()
  for pair in "$@"; do
    command=${pair%%=*}; package=${pair#*=}
    has "$command" || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || { echo "runtime-packages: present"; return 0; }
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get to install them; install them and run again"
  local log
  log=$(mktemp)
  if ! bash "$HERE/ownership.sh" apt-install "$RECORD" --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    rm -f "$log"
    die "${missing[*]} missing, and apt-get could not install them from the distribution's packages (above)"
  fi
  rm -f "$log"
  for pair in "$@"; do
    command=${pair%%=*}
    has "$command" || die "installed ${missing[*]}, but there is still no $command"
  done
  echo "runtime-packages: installed ${missing[*]}"
}

# This step's packages in the list of an earlier version move to its record.
adopt_legacy() {
  [ -f "$LEGACY" ] || return 0
  local package
  for package in "${packages[@]}"; do
    if grep -qxF "$package" "$LEGACY" && ! grep -q "^$package " "$RECORD" 2>/dev/null; then
      echo "$package not-installed" >>"$RECORD"
    fi
  done
  grep -vxF -f <(printf '%s\n' "${packages[@]}") "$LEGACY" >"$LEGACY.new" || true
  mv -f "$LEGACY.new" "$LEGACY"
  [ -s "$LEGACY" ] || rm -f "$LEGACY"
}

remove() {
  adopt_legacy
  bash "$HERE/ownership.sh" apt-remove "$RECORD"
}

check() {
  local pair
  for pair in "$@"; do
    has "${pair%%=*}" || { echo "${pair%%=*} is missing"; exit 1; }
  done
}

case "$action" in
  ensure) ensure "$@" ;;
  remove) remove ;;
  check) check "$@" ;;
  *) die "usage: runtime-packages.sh ensure|remove|check COMMAND=PACKAGE..." ;;
esac
