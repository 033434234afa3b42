#!/usr/bin/env bash
# Installs the Concourse release and runs the worker unit; on remove, retires the worker and
# leaves the host without its debris.
#   concourse-worker.sh ensure --version V (--url URL --sha256 HEX | --archive PATH) --unit NAME
#                              --env FILE --watch FILE... [--wrap-runc INSTALLER --wrapper PATH --wrapper-sha256 HEX [--runc-cves warn|refuse]]
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
#
# The env file is read, never sourced: only the keys used, each taken literally from the one
# line that sets it (a key set twice is refused). Whatever it says, remove deletes no work dir
# that is not an absolute path in normal form of a folder of its own (never /, a system folder,
# /home or /tmp); it refuses before it stops anything.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
PREFIX=${GPU_WORKERS_CONCOURSE_PREFIX:-/usr/local}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INSTALL="$HERE/concourse-install.sh"
RUNC_STATE=${GPU_WORKERS_CONCOURSE_RUNC_STATE:-/run/containerd/runc/concourse}
HOST_CONTAINERD=containerd.service
HOST_CONTAINERD_BEFORE="$STATE_DIR/host-containerd.before"

die() { echo "concourse-worker: $*" >&2; exit 1; }
say() { echo "concourse-worker: $*"; }

action=${1:-}; shift || true
release=(); version=""; unit=""; env_file=""; watch=(); retire_timeout=120
wrap_installer=""; wrapper=""; wrapper_sha=""; runc_cves=warn
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; release+=("$1" "$2"); shift 2 ;;
    --url|--sha256|--archive) release+=("$1" "$2"); shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --env) env_file=$2; shift 2 ;;
    --watch) watch+=("$1" "$2"); shift 2 ;;
    --wrap-runc) wrap_installer=$2; shift 2 ;;
    --runc-cves) runc_cves=$2; shift 2 ;;
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
  "$wrap_installer" install --runc "$CONCOURSE_RUNC" --wrapper "$wrapper" --sha256 "$wrapper_sha" --aside "$CONCOURSE_RUNC_ASIDE" --runc-cves "$runc_cves"
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

# The value of KEY in the env file, read literally (the file is never sourced): the text after
# "=" on the one line that sets it; empty when no line does. A key set twice is refused: a
# rendered env file sets each key once, and a second line would be someone else's.
env_value() {
  local key=$1 line value="" count=0
  [ -r "$env_file" ] || return 0
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in "$key="*) value=${line#*=}; count=$((count + 1)) ;; esac
  done <"$env_file"
  [ "$count" -le 1 ] || die "${env_file} sets ${key} ${count} times; a rendered env file sets each key once (fix the file, then run remove again)"
  printf '%s\n' "$value"
}

# Asks the TSA to retire this worker; the worker process exits once the web has let it go.
retire() {
  local name team tsa_host tsa_key worker_key flags
  systemctl is-active --quiet "$unit" || return 0
  if [ ! -r "$env_file" ] || [ ! -x "$PREFIX/concourse/bin/concourse" ]; then
    say "cannot retire: ${env_file} or the concourse binary is gone; stopping the worker"
    return 0
  fi
  name=$(env_value CONCOURSE_NAME)
  team=$(env_value CONCOURSE_TEAM)
  tsa_host=$(env_value CONCOURSE_TSA_HOST)
  tsa_key=$(env_value CONCOURSE_TSA_PUBLIC_KEY)
  worker_key=$(env_value CONCOURSE_TSA_WORKER_PRIVATE_KEY)
  # --flag=value: a value is never read as a flag of its own.
  flags=(--name="$name" --tsa-host="$tsa_host" --tsa-public-key="$tsa_key" --tsa-worker-private-key="$worker_key")
  if [ -n "$team" ]; then flags+=(--team="$team"); fi
  timeout 60 "$PREFIX/concourse/bin/concourse" retire-worker "${flags[@]}" >/dev/null 2>&1 ||
    { say "retire-worker failed (is the TSA reachable?); stopping the worker, which the web may then list as stalled (fly prune-worker)"; return 0; }
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

# The rules of TABLE that jump to the worker's chains or filter its bridge, as "CHAIN NUMBER"
# lines, last first: iptables -S lists a chain's rules in order after its -P or -N line, and
# deleting from the end keeps the numbers of the rules still to go. Nothing of a rule is run
# or quoted back (a comment can hold anything).
worker_rules() {
  local table=$1 chain
  for chain in $(iptables -t "$table" -S | awk '$1 == "-P" || $1 == "-N" { print $2 }'); do
    iptables -t "$table" -S "$chain" | awk -v chain="$chain" '
      $1 == "-A" { n++; if ($0 ~ / -j (CNI-|CONCOURSE-)| -[io] concourse0( |$)/) print chain, n }' | sort -k2,2nr
  done
}

clean_network() {
  local table chain number
  ip link del concourse0 2>/dev/null || true
  command -v iptables >/dev/null 2>&1 || return 0
  for table in filter nat; do
    worker_rules "$table" | while read -r chain number; do
      iptables -t "$table" -D "$chain" "$number" 2>/dev/null || true
    done
    # Then the chains: all emptied first, so none is still the target of another when it goes.
    for chain in $(iptables -t "$table" -S | awk '$1 == "-N" && $2 ~ /^(CNI|CONCOURSE)-/ { print $2 }'); do
      iptables -t "$table" -F "$chain" 2>/dev/null || true
    done
    for chain in $(iptables -t "$table" -S | awk '$1 == "-N" && $2 ~ /^(CNI|CONCOURSE)-/ { print $2 }'); do
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

# Why DIR may not be deleted as the worker's work dir (printed), or nothing: rm -rf runs as
# root, so the path must be absolute, in normal form, and a folder of its own: not /, not in a
# system folder, /home (users') or /tmp (everyone's), not a folder others share (/opt, /srv,
# /var/lib...). The same folders as components/lib/settings/value-patterns.ts refuses.
unsafe_work_dir() {
  local dir=$1
  case "$dir" in
    /) echo "the whole file system"; return ;;
    /*) ;;
    *) echo "not an absolute path"; return ;;
  esac
  case "$dir/" in
    *//*|*/./*|*/../*) echo "not in normal form (a . or .. segment, // or a trailing /)"; return ;;
  esac
  case "$dir" in
    /bin|/bin/*|/boot|/boot/*|/dev|/dev/*|/etc|/etc/*|/lib|/lib/*|/lib32|/lib32/*|/lib64|/lib64/*|/libx32|/libx32/*|\
    /proc|/proc/*|/root|/root/*|/run|/run/*|/sbin|/sbin/*|/sys|/sys/*|/usr|/usr/*|/var/lock|/var/lock/*|/var/run|/var/run/*)
      echo "a system folder, or in one" ;;
    /home|/home/*) echo "in /home, the users' folders" ;;
    /tmp|/tmp/*|/var/tmp|/var/tmp/*) echo "in a folder every user may write to" ;;
    /var|/var/backups|/var/cache|/var/lib|/var/local|/var/log|/var/mail|/var/opt|/var/spool) echo "a system folder" ;;
    /media|/mnt|/opt|/srv) echo "a folder other software shares" ;;
  esac
}

# The work dir the env file names, once it is known to be safe to delete (empty: none).
work_dir() {
  local dir why real
  # Run in $(...), where bash drops set -e: a refusal must still end it.
  dir=$(env_value CONCOURSE_WORK_DIR) || exit 1
  [ -n "$dir" ] || return 0
  why=$(unsafe_work_dir "$dir")
  # A link along the way counts as where it leads.
  if [ -z "$why" ] && command -v realpath >/dev/null 2>&1 && real=$(realpath -m -- "$dir") && [ "$real" != "$dir" ]; then
    why=$(unsafe_work_dir "$real")
    [ -z "$why" ] || why="$why (it leads to $real)"
  fi
  [ -z "$why" ] || die "refusing to remove the worker: ${env_file} names the work dir '${dir}', which is ${why}; remove would delete it with rm -rf (fix CONCOURSE_WORK_DIR there, then run remove again)"
  printf '%s\n' "$dir"
}

remove() {
  local dir
  # Before anything is stopped: a refusal leaves the worker as it was.
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
