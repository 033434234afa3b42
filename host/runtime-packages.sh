#!/usr/bin/env bash
# Installs the container runtime the chain configures, from the distribution's packages, where
# the host lacks it; the chain assumes nothing of the host's runtime.
#   runtime-packages.sh ensure COMMAND=PACKAGE...   e.g. containerd=containerd runc=runc
#   runtime-packages.sh remove COMMAND=PACKAGE...   purge what ensure installed, nothing else
#   runtime-packages.sh check  COMMAND=PACKAGE...   exit 1 when a command is missing
# A command already on the host (from any source) is left as it is. What ensure installs is
# recorded, so remove takes away only that.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
INSTALLED="$STATE_DIR/runtime-packages.installed"

die() { echo "runtime-packages: $*" >&2; exit 1; }

action=${1:-}; shift || true
[ $# -gt 0 ] || die "usage: runtime-packages.sh ensure|remove|check COMMAND=PACKAGE..."
for pair in "$@"; do
  case "$pair" in
    *=*) ;;
    *) die "expected COMMAND=PACKAGE, got '$pair'" ;;
  esac
done

# A command the host has: on PATH, or in the sbin folders a login shell of another user lacks.
has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

# Keeps in the record only what is installed (an install that failed leaves nothing to purge).
forget_uninstalled() {
  local package
  [ -f "$INSTALLED" ] || return 0
  while read -r package; do
    dpkg-query -W -f '${Status}\n' "$package" 2>/dev/null | grep -q "install ok installed" && echo "$package"
  done <"$INSTALLED" >"$INSTALLED.new" || true
  mv -f "$INSTALLED.new" "$INSTALLED"
  [ -s "$INSTALLED" ] || rm -f "$INSTALLED"
}

ensure() {
  local pair command package missing=()
  for pair in "$@"; do
    command=${pair%%=*}; package=${pair#*=}
    has "$command" || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || { echo "runtime-packages: present"; return 0; }
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get to install them; install them and run again"
  mkdir -p "$STATE_DIR"
  # Recorded first: an install cut short is still undone by remove.
  for package in "${missing[@]}"; do
    grep -qxF "$package" "$INSTALLED" 2>/dev/null || echo "$package" >>"$INSTALLED"
  done
  local log
  log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    rm -f "$log"
    forget_uninstalled
    die "${missing[*]} missing, and apt-get could not install them from the distribution's packages (above)"
  fi
  rm -f "$log"
  for pair in "$@"; do
    command=${pair%%=*}
    has "$command" || die "installed ${missing[*]}, but there is still no $command"
  done
  echo "runtime-packages: installed ${missing[*]}"
}

remove() {
  [ -f "$INSTALLED" ] || return 0
  local pair package ours=()
  for pair in "$@"; do
    package=${pair#*=}
    grep -qxF "$package" "$INSTALLED" && ours+=("$package")
  done
  if [ ${#ours[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${ours[@]}" >/dev/null 2>&1 || true
    grep -vxF -f <(printf '%s\n' "${ours[@]}") "$INSTALLED" >"$INSTALLED.new" || true
    mv -f "$INSTALLED.new" "$INSTALLED"
  fi
  [ -s "$INSTALLED" ] || rm -f "$INSTALLED"
}

check() {
  local pair
  for pair in "$@"; do
    has "${pair%%=*}" || { echo "${pair%%=*} is missing"; exit 1; }
  done
}

case "$action" in
  ensure) ensure "$@" ;;
  remove) remove "$@" ;;
  check) check "$@" ;;
  *) die "usage: runtime-packages.sh ensure|remove|check COMMAND=PACKAGE..." ;;
esac
