#!/usr/bin/env bash
# Installs the GPU health watcher's unit (its files are placed beside it) and keeps it running.
#   gpu-health.sh ensure --unit NAME --state-dir DIR --watch FILE...
#   gpu-health.sh check  --unit NAME --state-dir DIR --watch FILE...
#   gpu-health.sh remove --unit NAME --state-dir DIR
# ensure enables the unit and restarts it when a watched file (the watcher, its config, its
# unit) changed since it last started it, or when it is not running; it prints "restarted"
# when it did. check exits 0 while the unit is enabled, running and started from the watched
# files as they are. remove stops and disables the unit, and deletes the watcher's status
# folder and the stamp: all it made (the placed files go with their own resources).
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}

die() { echo "gpu-health: $*" >&2; exit 1; }

action=${1:-}; shift || true
unit=""; status_dir=""; watch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --unit) unit=$2; shift 2 ;;
    --state-dir) status_dir=$2; shift 2 ;;
    --watch) watch+=("$2"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$unit" ] || die "--unit is required"
[ -n "$status_dir" ] || die "--state-dir is required"
stamp="$STATE_DIR/${unit}.sha256"

sum() {
  [ "${#watch[@]}" -gt 0 ] || die "--watch FILE is required"
  local f
  for f in "${watch[@]}"; do [ -r "$f" ] || die "${f} is missing (it is placed before this step)"; done
  cat "${watch[@]}" | sha256sum | cut -d' ' -f1
}

ensure() {
  local want
  want=$(sum)
  systemctl daemon-reload
  systemctl enable "$unit" >/dev/null 2>&1
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || ! systemctl is-active --quiet "$unit"; then
    systemctl restart "$unit"
    mkdir -p "$STATE_DIR"
    echo "$want" >"$stamp"
    echo restarted
  fi
}

check() {
  systemctl is-enabled --quiet "$unit" || die "${unit} is not enabled"
  systemctl is-active --quiet "$unit" || die "${unit} is not running"
  [ "$(cat "$stamp" 2>/dev/null || true)" = "$(sum)" ] || die "${unit} was started from other files than the ones in place"
}

remove() {
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  rm -f "$stamp"
  rm -rf -- "$status_dir"
  # Its parent is the project's own folder under /run; it goes once nothing else is in it.
  rmdir "$(dirname "$status_dir")" 2>/dev/null || true
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  *) die "usage: gpu-health.sh ensure|check|remove --unit NAME --state-dir DIR [--watch FILE]..." ;;
esac
