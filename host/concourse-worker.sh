#!/usr/bin/env bash
# Installs the Concourse release and runs the worker unit; on remove, retires the worker and
# leaves the host without its debris.
#   concourse-worker.sh ensure --version V (--url URL --sha256 HEX | --archive PATH) --unit NAME
#                              --env FILE --watch FILE... [--wrap-runc INSTALLER --wrapper PATH --wrapper-sha256 HEX]
#   concourse-worker.sh remove --unit NAME --env FILE [--wrap-runc INSTALLER] [--retire-timeout SECONDS]
#
# ensure: the release goes in, and the unit starts, with concourse-install.sh (beside this
# script): restarted only when a watched file (unit, env, keys, containerd config) or the
# release changed. Concourse starts its own containerd on /run/containerd/containerd.sock, so the
# distribution's containerd service, which would hold that socket, is stopped and disabled
# (how it was is recorded and put back on remove). Concourse's containerd runs the first runc
# on PATH, its own bin folder's, for the containers it creates without runtime options; no
# containerd setting reaches those, so with --wrap-runc the wrapper takes that runc's place
# (again after every unpack).
#
# remove: the worker is retired through the TSA (concourse retire-worker with the keys of the
# env file), so the web forgets it, and the unit is stopped once it exits or after
# --retire-timeout (default 120 s). Then what a stopped worker leaves behind goes: its
# containers and shims, the mounts under the work dir, the concourse0 bridge, the CNI and
# Concourse iptables chains, ip_forward as it was; then the release and the wrapped runc.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
PREFIX=${GPU_WORKERS_CONCOURSE_PREFIX:-/usr/local}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INSTALL="$HERE/concourse-install.sh"
RUNC_STATE=/run/containerd/runc/concourse
HOST_CONTAINERD=containerd.service
HOST_CONTAINERD_BEFORE="$STATE_DIR/host-containerd.before"

die() { echo "concourse-worker: $*" >&2; exit 1; }
say() { echo "concourse-worker: $*"; }

action=${1:-}; shift || true
release=(); version=""; unit=""; env_file=""; watch=(); retire_timeout=120
wrap_installer=""; wrapper=""; wrapper_sha=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; release+=("$1" "$2"); shift 2 ;;
    --url|--sha256|--archive) release+=("$1" "$2"); shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --env) env_file=$2; shift 2 ;;
    --watch) watch+=("$1" "$2"); shift 2 ;;
    --wrap-runc) wrap_installer=$2; shift 2 ;;
    --wrapper) wrapper=$2; shift 2 ;;
    --wrapper-sha256) wrapper_sha=$2; shift 2 ;;
    --retire-timeout) retire_timeout=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$unit" ] || die "--unit is required"
CONCOURSE_RUNC="$PREFIX/concourse/bin/runc"
CONCOURSE_RUNC_ASIDE="$STATE_DIR/concourse-runc.real"

wrap_concourse_runc() {
  [ -n "$wrap_installer" ] || return 0
  if [ -z "$wrapper" ] || [ -z "$wrapper_sha" ]; then die "--wrap-runc needs --wrapper and --wrapper-sha256"; fi
  [ -e "$CONCOURSE_RUNC" ] || die "${CONCOURSE_RUNC} is missing: the Concourse tarball should bring its runc"
  "$wrap_installer" install --runc "$CONCOURSE_RUNC" --wrapper "$wrapper" --sha256 "$wrapper_sha" --aside "$CONCOURSE_RUNC_ASIDE"
}

unwrap_concourse_runc() {
  if [ -z "$wrap_installer" ] || [ ! -x "$wrap_installer" ] || [ ! -e "$CONCOURSE_RUNC_ASIDE" ]; then return 0; fi
  "$wrap_installer" remove --runc "$CONCOURSE_RUNC" --aside "$CONCOURSE_RUNC_ASIDE"
}

# The distribution's containerd would hold Concourse's socket: stop it, remembering how it was.
hold_host_containerd() {
  systemctl cat "$HOST_CONTAINERD" >/dev/null 2>&1 || return 0
  bash "$HERE/ownership.sh" service-keep "$HOST_CONTAINERD_BEFORE" "$HOST_CONTAINERD"
  if systemctl is-enabled --quiet "$HOST_CONTAINERD" 2>/dev/null || systemctl is-active --quiet "$HOST_CONTAINERD"; then
    systemctl disable --now "$HOST_CONTAINERD" >/dev/null 2>&1
    say "stopped and disabled ${HOST_CONTAINERD}: Concourse runs its own containerd on its socket"
  fi
}

release_host_containerd() {
  bash "$HERE/ownership.sh" service-restore "$HOST_CONTAINERD_BEFORE" "$HOST_CONTAINERD"
}

# The value the worker's CNI bridge will switch on; put back on remove.
remember_ip_forward() {
  local saved="$STATE_DIR/ip_forward.before"
  [ -f "$saved" ] || { mkdir -p "$STATE_DIR"; cat /proc/sys/net/ipv4/ip_forward >"$saved"; }
}

ensure() {
  [ -n "$env_file" ] || die "--env is required"
  bash "$INSTALL" ensure "${release[@]}" >/dev/null
  wrap_concourse_runc
  hold_host_containerd
  remember_ip_forward
  bash "$INSTALL" start --unit "$unit" "${watch[@]}" >/dev/null
  say "${unit} is running Concourse ${version}"
}

# Asks the TSA to retire this worker; the worker process exits once the web has let it go.
retire() {
  systemctl is-active --quiet "$unit" || return 0
  if [ ! -r "$env_file" ] || [ ! -x "$PREFIX/concourse/bin/concourse" ]; then
    say "cannot retire: ${env_file} or the concourse binary is gone; stopping the worker"
    return 0
  fi
  (
    set -a
    # shellcheck disable=SC1090 # the env file is rendered by gpu-workers
    . "$env_file"
    set +a
    team=()
    if [ -n "${CONCOURSE_TEAM:-}" ]; then team=(--team "$CONCOURSE_TEAM"); fi
    timeout 60 "$PREFIX/concourse/bin/concourse" retire-worker --name "$CONCOURSE_NAME" "${team[@]}" \
      --tsa-host "$CONCOURSE_TSA_HOST" --tsa-public-key "$CONCOURSE_TSA_PUBLIC_KEY" \
      --tsa-worker-private-key "$CONCOURSE_TSA_WORKER_PRIVATE_KEY" >/dev/null 2>&1
  ) || { say "retire-worker failed (is the TSA reachable?); stopping the worker, which the web may then list as stalled (fly prune-worker)"; return 0; }
  local waited=0
  while systemctl is-active --quiet "$unit" && [ "$waited" -lt "$retire_timeout" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if systemctl is-active --quiet "$unit"; then
    say "the worker did not retire within ${retire_timeout}s; stopping it (the web may list it as stalled: fly prune-worker)"
  else
    say "retired; the web no longer lists the worker"
  fi
}

# What a stopped worker leaves: containers (and their shims), mounts, network.
clean_containers() {
  local runc id
  runc=$CONCOURSE_RUNC
  [ -x "$CONCOURSE_RUNC_ASIDE" ] && runc=$CONCOURSE_RUNC_ASIDE
  if [ -d "$RUNC_STATE" ] && [ -x "$runc" ]; then
    for id in $("$runc" --root "$RUNC_STATE" list -q 2>/dev/null); do
      "$runc" --root "$RUNC_STATE" delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
  pkill -KILL -f 'containerd-shim-runc-v2 -namespace concourse ' 2>/dev/null || true
  rm -rf "$RUNC_STATE"
}

unmount_below() {
  local dir=$1 m
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  awk -v d="${dir%/}/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
}

clean_network() {
  local table rule chain
  ip link del concourse0 2>/dev/null || true
  command -v iptables-save >/dev/null 2>&1 || return 0
  for table in filter nat; do
    # Rules that jump to the worker's chains or filter its bridge, then the chains themselves.
    # iptables-save quotes comments as the shell does, so eval reads the rule back as it was written.
    { iptables-save -t "$table" | grep -E '^-A .*(-j (CNI-|CONCOURSE-)|-i concourse0|-o concourse0)' || true; } | while read -r rule; do
      eval "iptables -t $table -D ${rule#-A }" 2>/dev/null || true
    done
    { iptables-save -t "$table" | sed -n 's/^:\(\(CNI\|CONCOURSE\)-[^ ]*\) .*/\1/p'; } | while read -r chain; do
      iptables -t "$table" -F "$chain" 2>/dev/null || true
      iptables -t "$table" -X "$chain" 2>/dev/null || true
    done
  done
}

# Puts back the value remember_ip_forward saw, with or without iptables on the host.
restore_ip_forward() {
  local saved="$STATE_DIR/ip_forward.before"
  [ -f "$saved" ] || return 0
  cat "$saved" >/proc/sys/net/ipv4/ip_forward 2>/dev/null || true
  rm -f "$saved"
}

work_dir() {
  [ -r "$env_file" ] || return 0
  sed -n 's/^CONCOURSE_WORK_DIR=//p' "$env_file" | tail -n 1
}

remove() {
  local dir
  dir=$(work_dir)
  retire
  bash "$INSTALL" stop --unit "$unit"
  clean_containers
  unmount_below "$dir"
  clean_network
  restore_ip_forward
  if [ -n "$dir" ]; then rm -rf "$dir"; fi
  release_host_containerd
  unwrap_concourse_runc
  bash "$INSTALL" remove
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: concourse-worker.sh ensure|remove ..." ;;
esac
