#!/usr/bin/env bash
# Runs NVIDIA fabricmanager on an NVSwitch system, at exactly the loaded driver's version.
#   fabric-manager.sh ensure --config PATH [--partition ID]... [--report FILE --plan ID]
#   fabric-manager.sh remove [--config PATH]
# It refuses to start without NVSwitches, restarts the service only when the config
# changed, and activates the requested partitions (shared NVSwitch mode) through fmpm.
# remove puts back what the host had (ownership.sh keeps the records): the package's own
# config (kept aside when gpu-workers placed PATH over it), then the service as it was,
# enabled or not and running or not (restarted, so it reads its own config again); the
# package goes only when this script installed it.
# In a service VM it reports the outcome to FILE (the serial console, which the host logs):
# "gpu-workers-fabric: ready plan=ID partitions=1,2", or "... failed plan=ID: why".
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
ROOT=${GPU_WORKERS_ROOT:-}
HERE=$(cd "$(dirname "$0")" && pwd)
SERVICE=nvidia-fabricmanager
PACKAGES="$STATE_DIR/fabricmanager-package" # what apt installed (the name is older than the list)
SERVICE_BEFORE="$STATE_DIR/fabricmanager.service.before"
report=""; plan=""; reported=no

say() {
  if [ -n "$report" ] && [ "$reported" = no ]; then
    reported=yes
    printf 'gpu-workers-fabric: %s\n' "$1" > "$report" || true
  fi
}
die() { echo "fabric-manager: $*" >&2; say "failed plan=${plan}: $*"; exit 1; }
# A command that fails under set -e says nothing itself: report that much.
on_exit() {
  local rc=$1
  [ "$rc" -eq 0 ] || say "failed plan=${plan}: exit ${rc} (see the journal of the unit)"
}
trap 'on_exit $?' EXIT

action=${1:-}; shift || true
config=""; partitions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --partition) partitions+=("$2"); shift 2 ;;
    --report) report=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

nvswitch_count() {
  local dir="$ROOT/proc/driver/nvidia-nvswitch/devices"
  [ -d "$dir" ] || { echo 0; return; }
  find "$dir" -mindepth 1 -maxdepth 1 | wc -l
}

# "... x86_64 Kernel Module  550.54.15 ..." or "... Open Kernel Module for x86_64  560.35.03 ...";
# nothing when no driver is loaded.
driver_version() {
  [ -r "$ROOT/proc/driver/nvidia/version" ] || return 0
  sed -nE 's/.*Kernel Module( for [^ ]+)? +([0-9]+\.[0-9.]+).*/\2/p' "$ROOT/proc/driver/nvidia/version" | head -n 1
}

# Version of an installed package; nothing for one that is absent or removed with its
# conffiles kept (dpkg still reports a version for those).
installed_version() {
  dpkg-query -W -f '${db:Status-Status} ${Version}' "$1" 2>/dev/null | sed -n 's/^installed //p' || true
}

# IDs of the active partitions. fmpm -l prints styled JSON, one key per line and the GPU
# list inside each partition: drop the GPU lists, then one partition per line.
active_partitions() {
  fmpm -l | tr -d ' \t\r\n' | sed 's/"gpuInfo":\[[^]]*\]//g' | tr '}' '\n' |
    sed -nE '/"isActive":1(,|$)/s/.*"partitionId":([0-9]+).*/\1/p'
}

# Notes, once, how the service was before this script first changed it.
keep_service_state() { bash "$HERE/ownership.sh" service-keep "$SERVICE_BEFORE" "$SERVICE"; }

ensure_package() {
  local version=$1 major=${1%%.*} pkg full current
  for pkg in "nvidia-fabricmanager-${major}" nvidia-fabricmanager; do
    current=$(installed_version "$pkg")
    case "$current" in "$version"|"$version"-*) return 0 ;; esac
  done
  for pkg in "nvidia-fabricmanager-${major}" nvidia-fabricmanager; do
    full=$(apt-cache madison "$pkg" 2>/dev/null | awk -F'|' -v v="$version" '{gsub(/ /,"",$2)} $2 == v || index($2, v"-") == 1 {print $2; exit}')
    if [ -n "$full" ]; then
      keep_service_state # the package's install may enable and start it
      bash "$HERE/ownership.sh" apt-install "$PACKAGES" -o Dpkg::Options::=--force-confold "${pkg}=${full}"
      return 0
    fi
  done
  die "no nvidia-fabricmanager package matches the loaded driver ${version} exactly; fabricmanager must match the driver version"
}

ensure() {
  [ -n "$config" ] || die "--config is required"
  [ -r "$config" ] || die "config ${config} is missing"
  local switches version stamp sum
  switches=$(nvswitch_count)
  [ "$switches" -gt 0 ] || die "no NVSwitch under /proc/driver/nvidia-nvswitch/devices: fabricmanager must not start without NVSwitches"
  version=$(driver_version)
  [ -n "$version" ] || die "the NVIDIA driver is not loaded (/proc/driver/nvidia/version is missing)"
  ensure_package "$version"
  keep_service_state
  mkdir -p "$STATE_DIR"
  stamp="$STATE_DIR/fabricmanager.config.sha256"
  sum=$(sha256sum "$config" | cut -d' ' -f1)
  systemctl enable "$SERVICE" >/dev/null
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ] || ! systemctl is-active --quiet "$SERVICE"; then
    systemctl restart "$SERVICE"
    echo "$sum" > "$stamp"
  fi
  local id active=""
  if [ "${#partitions[@]}" -gt 0 ]; then
    command -v fmpm >/dev/null 2>&1 || die "partition ${partitions[0]} requested but fmpm (the fabric manager partition tool) is not installed"
    active=$(active_partitions) || die "could not list the fabric partitions (fmpm -l failed)"
  fi
  for id in "${partitions[@]}"; do
    # fabricmanager refuses to activate a partition twice.
    if printf '%s\n' "$active" | grep -qx "$id"; then continue; fi
    fmpm -a "$id" || die "could not activate fabric partition ${id} (fmpm -a ${id} failed)"
  done
  echo "fabric-manager: running for ${switches} NVSwitches, driver ${version}"
  local joined
  joined=$(IFS=,; echo "${partitions[*]+"${partitions[*]}"}")
  say "ready plan=${plan} partitions=${joined}"
}

remove() {
  # The config first: a service that ran before restarts with its own. The file's own delete
  # step then finds its record gone and leaves the file.
  if [ -n "$config" ]; then bash "$HERE/ownership.sh" file-restore "$config"; fi
  if [ -f "$SERVICE_BEFORE" ]; then
    bash "$HERE/ownership.sh" service-restore "$SERVICE_BEFORE" "$SERVICE"
  elif systemctl list-unit-files "${SERVICE}.service" >/dev/null 2>&1; then
    # Started by an earlier version, which kept no record.
    systemctl disable --now "$SERVICE" >/dev/null 2>&1 || true
  fi
  rm -f "$STATE_DIR/fabricmanager.config.sha256"
  bash "$HERE/ownership.sh" apt-remove "$PACKAGES"
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: fabric-manager.sh ensure --config PATH [--partition ID]... | remove" ;;
esac
