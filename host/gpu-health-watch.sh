#!/usr/bin/env bash
# The GPU health watcher: the long-running loop its systemd unit runs (gpu-health.sh installs it).
#   gpu-health-watch.sh --config FILE [--state-dir DIR]
# It reads the kernel's own records as they come (/dev/kmsg: none from before it started) for
# NVIDIA Xid and SXid lines, amdgpu reset and RAS lines, and i915 and xe hang, reset and wedge
# lines, and every poll-seconds asks the vendor's tool (nvidia-smi; for AMD the amdgpu driver's
# sysfs; for Intel sysfs and, where installed, xpu-smi health) about each watched GPU: lost,
# uncorrectable ECC errors, a row-remap failure, a critical component, compute processes of no
# running container.
# A fatal event on a watched GPU lands the worker's unit (SIGUSR1; retire: SIGUSR2; none: only
# says so) and writes why to stdout (the journal). Once every GPU has polled healthy for
# settle-seconds after its last fatal event, the unit is started again (it registers running).
# With "pool yes" (GPUs handed out per task) a fatal event takes that GPU out of the pool alone
# (the runc wrapper reads gpus.tsv and hands its units to no new container): the worker lands
# only when no GPU is healthy, and starts again once one has settled.
# Status: DIR/gpus.tsv (index, bus id, healthy 1|0, Xid count, last Xid, reason; tab-separated)
# and DIR/status (healthy, degraded: some GPUs out of the pool, landed, retired or unhealthy),
# each replaced whole when it changes.
# A process "belongs to a running container" when its pid namespace is not the watcher's: a
# container's processes end with its namespace, so one in ours outlived or never had one.
#
# Only the kernel is believed (docs/gpu-health.md#what-the-watcher-believes): a record counts when
# its facility is 0, which userspace cannot write to /dev/kmsg, and when its message starts with
# the driver's whole line layout. Records are read as /dev/kmsg gives them, one a line with the
# kernel's escapes (a line break in a message is \x0a): dmesg would undo those, and a file name
# with a line break in a segfault line would then start a line of its own.
# GPU_WORKERS_KMSG (tests only) reads the records from another file, such as a FIFO.
set -uo pipefail

ROOT=${GPU_WORKERS_ROOT:-}
KMSG_SOURCE=${GPU_WORKERS_KMSG:-/dev/kmsg}
config=""; state_dir=/run/gpu-workers/health

log() { printf 'gpu-health: %s\n' "$*"; }
die() { printf 'gpu-health: %s\n' "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --state-dir) state_dir=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -r "$config" ] || die "--config FILE is required and readable (got '${config}')"

vendor=""; on_fatal=land; worker_unit=""; poll_seconds=30; settle=300; grace=600; nvswitch=no; pool=no
idx=(); bus=(); extra=(); declare -A ignored=() meaning=()
number() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "${config}: ${1} must be a positive whole number, not '${2}'"; }
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in '' | '#'*) continue ;; esac
  key=${line%% *}; value=${line#* }
  case "$key" in
    vendor) vendor=$value ;;
    on-fatal) on_fatal=$value ;;
    worker-unit) worker_unit=$value ;;
    poll-seconds) number "$key" "$value"; poll_seconds=$value ;;
    settle-seconds) number "$key" "$value"; settle=$value ;;
    dirty-grace-seconds) number "$key" "$value"; grace=$value ;;
    nvswitch) nvswitch=$value ;;
    pool) pool=$value ;;
    # The third field: AMD, the render node (no bus id declared); Intel, the GPU's driver.
    gpu) read -r i b x <<<"$value"; idx+=("$i"); bus+=("$b"); extra+=("${x:-}") ;;
    ignore-xids) for x in $value; do ignored[$x]=1; done ;;
    xid) meaning[${value%% *}]=${value#* } ;;
    *) die "${config}: unknown key '${key}'" ;;
  esac
done <"$config"
case "$vendor" in nvidia | amd | intel) ;; *) die "${config}: vendor must be nvidia, amd or intel" ;; esac
case "$on_fatal" in land | retire | none) ;; *) die "${config}: on-fatal must be land, retire or none" ;; esac
case "$pool" in yes | no) ;; *) die "${config}: pool must be yes or no" ;; esac
[ "${#idx[@]}" -gt 0 ] || die "${config}: no gpu to watch"
if [ "$vendor" = intel ]; then
  for k in "${!idx[@]}"; do
    case "${extra[$k]}" in i915 | xe) ;; *) die "${config}: Intel GPU ${idx[$k]} needs its driver (i915 or xe) after its bus id, not '${extra[$k]}'" ;; esac
  done
fi

# 0000:3b:00 (NVRM), 00000000:3B:00.0 (nvidia-smi), 0000:03:00.0 (amdgpu) -> 0000:3b:00.
short_bus() {
  local b=${1,,}
  b=${b#pci:}; b=${b%.*}
  local domain=${b%%:*}
  [ "${#domain}" -ge 4 ] || return 1
  printf '%s:%s\n' "${domain: -4}" "${b#*:}"
}

# GPUs the inventory gives no bus id: nvidia-smi's answer, or the AMD render node's device.
for k in "${!idx[@]}"; do
  [ "${bus[$k]}" = "-" ] || continue
  if [ "$vendor" = nvidia ]; then
    found=$(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null | awk -F', *' -v i="${idx[$k]}" '$1 == i { print $2 }')
  else
    found=$(basename "$(readlink -f "$ROOT/sys/class/drm/${extra[$k]:-none}/device")")
  fi
  [[ $found =~ ^[0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$ ]] || die "GPU ${idx[$k]}: no bus id declared, and the host names none (declare pciBusId in the inventory)"
  bus[k]=$found
done
short=(); full=()
for k in "${!idx[@]}"; do
  short[k]=$(short_bus "${bus[$k]}") || die "${config}: '${bus[$k]}' is not a PCI bus id"
  full[k]="${short[$k]}.${bus[$k]##*.}"
done

bad=(); why=(); xids=(); last_xid=(); good_since=(); dirty_since=(); wedged=() wedge_why=()
for k in "${!idx[@]}"; do bad[k]=0; why[k]=""; xids[k]=0; last_xid[k]=""; good_since[k]=""; dirty_since[k]=""; wedged[k]=""; wedge_why[k]=""; done
acted="" # land or retire, once this watcher (or the one before it) signalled the worker
waiting="" # the GPUs settled, the worker has not exited yet

mkdir -p "$state_dir" || die "cannot create ${state_dir}"
# A watcher restarted after it landed the worker keeps that duty: the GPUs settle again first.
previous=$(cat "$state_dir/status" 2>/dev/null || true)
case "$previous" in landed) acted=land ;; retired) acted=retire ;; esac
if [ -n "$acted" ]; then
  for k in "${!idx[@]}"; do bad[k]=1; why[k]="the worker was ${previous} before this watcher started"; done
fi
# The GPUs a driver wedged (Intel) stay wedged across restarts of the watcher: DIR/wedged holds
# "BUS<tab>DRM-IDENTITY<tab>REASON" each. A reboot clears /run, and with it the wedge.
if [ -r "$state_dir/wedged" ]; then
  while IFS=$'\t' read -r b ident reason; do
    for k in "${!idx[@]}"; do
      [ "${full[$k]}" = "$b" ] || continue
      wedged[k]=$ident; wedge_why[k]=$reason; bad[k]=1; why[k]=$reason
    done
  done <"$state_dir/wedged"
fi

# Replaces FILE with CONTENT, whole, only when it differs.
put() {
  local file=$1 content=$2
  [ "$(cat "$file" 2>/dev/null)" = "$content" ] && return 0
  printf '%s\n' "$content" >"$file.tmp" && mv -f "$file.tmp" "$file"
}

save_wedged() {
  local k rows=""
  for k in "${!idx[@]}"; do
    [ -z "${wedged[$k]}" ] || rows+="${full[$k]}	${wedged[$k]}	${wedge_why[$k]}"$'\n'
  done
  if [ -n "$rows" ]; then put "$state_dir/wedged" "${rows%$'\n'}"; else rm -f "$state_dir/wedged"; fi
}

# Whether the worker can serve: some GPU healthy where the pool serves with what is left, else every GPU.
serving() {
  local k
  for k in "${!idx[@]}"; do
    if [ "$pool" = yes ]; then [ "${bad[$k]}" = 1 ] || return 0; else [ "${bad[$k]}" = 0 ] || return 1; fi
  done
  [ "$pool" = no ]
}

write_state() {
  local k rows="" word=healthy any=0
  for k in "${!idx[@]}"; do
    rows+="${idx[$k]}	${full[$k]}	$((1 - bad[k]))	${xids[$k]}	${last_xid[$k]}	${why[$k]}"$'\n'
    [ "${bad[$k]}" = 0 ] || any=1
  done
  # The worker stays landed (or retired) until the watcher has started it again.
  case "$acted" in
    land) word=landed ;;
    retire) word=retired ;;
    *) if [ "$any" = 1 ]; then if serving; then word=degraded; else word=unhealthy; fi; fi ;;
  esac
  put "$state_dir/gpus.tsv" "${rows%$'\n'}"
  put "$state_dir/status" "$word"
}

# Signals the worker once, as on-fatal says; a worker that is not running is none of ours.
act() {
  [ -z "$acted" ] || return 0
  [ "$on_fatal" != none ] || return 0
  [ -n "$worker_unit" ] || { log "no worker unit on this host: reporting only"; return 0; }
  if ! systemctl is-active --quiet "$worker_unit"; then
    log "${worker_unit} is not running: nothing to ${on_fatal}"
    return 0
  fi
  local signal=SIGUSR1 what="no new builds, running ones finish"
  [ "$on_fatal" = land ] || { signal=SIGUSR2; what="it leaves the cluster once its running builds finish"; }
  if systemctl kill --kill-whom=main --signal="$signal" "$worker_unit"; then
    acted=$on_fatal
    log "${on_fatal} ${worker_unit} (${signal}): ${what}"
  else
    log "could not signal ${worker_unit} (${signal})"
  fi
}

# A fatal event on watched GPU K: mark it, say why, act.
fatal() {
  local k=$1 reason=$2
  good_since[k]=""
  if [ "${bad[$k]}" = 0 ]; then
    bad[k]=1; why[k]=$reason
    log "GPU ${idx[$k]} (${full[$k]}) unhealthy: ${reason}"
    [ "$pool" = no ] || ! serving || log "GPU ${idx[$k]} is out of the pool: new containers get other GPUs"
  elif [ "${why[$k]}" != "$reason" ]; then
    why[k]=$reason
    log "GPU ${idx[$k]} (${full[$k]}) still unhealthy: ${reason}"
  fi
  serving || act
  write_state
}

# The watched GPU at BUS (any form), or nothing.
gpu_at() {
  local s k
  s=$(short_bus "$1") || return 1
  for k in "${!idx[@]}"; do [ "${short[$k]}" = "$s" ] && { echo "$k"; return 0; }; done
  return 1
}

# The drivers' own line layouts, anchored at the message's start (test/fixtures/gpu-health/
# source.md says where each comes from). A user's text reaches the kernel's own records only
# behind a prefix of its own: a segfault line starts with the process name, at most 15
# characters, then "[pid]: segfault", which completes none of these prefixes.
HEX4='[0-9A-Fa-f]{4}' HEX2='[0-9A-Fa-f]{2}'
# NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
# (older drivers: no pid and name). NVRM names the GPU by domain:bus:device.
XID_RE="^NVRM: Xid \(PCI:(${HEX4}:${HEX2}:${HEX2})\): ([0-9]+), "
# nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up
SXID_RE="^nvidia-nvswitch[0-9]+: SXid \(PCI:(${HEX4}:${HEX2}:${HEX2}\.[0-7])\): ([0-9]+), (Non-fatal|Fatal), "
# amdgpu 0000:03:00.0: amdgpu: GPU reset begin!
AMDGPU="^amdgpu (${HEX4}:${HEX2}:${HEX2}\.[0-7]): (amdgpu: )?"
AMD_RESET_RE="${AMDGPU}GPU reset begin!"
# "N uncorrectable ... in umc block", newer kernels after "socket: S, die: D" or as "N new ..."; never "no uncorrectable".
AMD_RAS_RE="${AMDGPU}(socket: [0-9]+(, die: [0-9]+)?,? )?([0-9]+) (new )?uncorrectable hardware errors detected in ([A-Za-z0-9_]+) block"

# i915 and xe print through dev_printk and drm's "[drm] " (drm_err adds "*ERROR* "); newer
# kernels name the GT ("GT0: ") and xe the tile before it ("Tile0: GT0: "):
#   i915 0000:03:00.0: [drm] GT0: Resetting chip for stopped heartbeat on rcs0
#   xe 0000:03:00.0: [drm] *ERROR* Tile0: GT0: reset failed (-ETIMEDOUT)
INTEL_RE="^(i915|xe) (${HEX4}:${HEX2}:${HEX2}\.[0-7]): \[drm\] (\*ERROR\* )?(Tile[0-9]+: )?(GT[0-9]+: )?"

# A hang or reset line of i915 or xe: fatal where the driver could not bring the GPU back (it is
# wedged: every job on it fails until the driver is bound again), noted and counted where it did
# (a hung job's context is reset, the GPU goes on). TEXT is the message after the prefix.
intel_line() {
  local drv=$1 at=$2 text=$3 k
  k=$(gpu_at "$at") || return 0
  # The GPU's own function and driver: an i915 line names no xe GPU.
  [ "${full[$k]}" = "$at" ] && [ "${extra[$k]}" = "$drv" ] || return 0
  case "$drv" in
    i915)
      if [[ $text =~ ^Failed\ to\ reset\ chip ]]; then
        wedge "$k" "i915: the GPU reset failed (the driver wedged the GPU)"
      elif [[ $text =~ ^Failed\ to\ initialise\ HW\ following\ reset ]]; then
        wedge "$k" "i915: the GPU did not come back after its reset (the driver wedged the GPU)"
      elif [[ $text =~ ^Resetting\ chip\ for\  ]]; then
        noted "$k" "i915 reset the whole GPU"
      elif [[ $text =~ ^Resetting\ ([a-z]+[0-9]+)\ for\  ]]; then
        noted "$k" "i915 reset engine ${BASH_REMATCH[1]}"
      elif [[ $text =~ ^GPU\ HANG:\ ecode\ [0-9]+:[0-9a-fA-F]+:(0x)?[0-9a-fA-F]{8}(,|$) ]]; then
        noted "$k" "i915 GPU hang (a job's context)"
      fi ;;
    xe)
      if [[ $text =~ ^CRITICAL:\ Xe\ has\ declared\ device\ (${HEX4}:${HEX2}:${HEX2}\.[0-7])\ as\ wedged\. ]] && [ "${BASH_REMATCH[1],,}" = "$at" ]; then
        wedge "$k" "xe declared the GPU wedged"
      elif [[ $text =~ ^reset\ failed\ \( ]]; then
        wedge "$k" "xe: the GT reset failed"
      elif [[ $text =~ ^reset\ started$ ]]; then
        noted "$k" "xe reset the GT"
      elif [[ $text =~ ^Engine\ reset:\ engine_class=([a-z]+), ]]; then
        noted "$k" "xe reset a ${BASH_REMATCH[1]} engine"
      fi ;;
  esac
}

# A driver's event that it recovered from: counted (gpus.tsv's event count), said, not fatal.
noted() {
  local k=$1 what=$2
  xids[k]=$((xids[k] + 1))
  log "GPU ${idx[$k]} (${full[$k]}): ${what}, noted"
  write_state
}

# The device's identity in sysfs: its drm folder, made anew when the driver is bound again.
drm_identity() { stat -L -c %i "$ROOT/sys/bus/pci/devices/${full[$1]}/drm" 2>/dev/null; }

# The driver wedged GPU K: fatal, and it stays so until the driver is bound to it again (a new
# drm folder) or the host reboots; polls alone never settle it.
wedge() {
  local k=$1 reason=$2
  xids[k]=$((xids[k] + 1))
  wedged[k]=$(drm_identity "$k"); wedged[k]=${wedged[$k]:-gone}; wedge_why[k]=$reason
  save_wedged
  fatal "$k" "$reason"
}

on_kernel_line() {
  local line=$1 k code name
  if [[ $line =~ $XID_RE ]]; then
    k=$(gpu_at "${BASH_REMATCH[1]}") || return 0
    code=${BASH_REMATCH[2]}; name=${meaning[$code]:-not in the watcher\'s table}
    xids[k]=$((xids[k] + 1)); last_xid[k]=$code
    if [ -n "${ignored[$code]:-}" ]; then
      log "GPU ${idx[$k]} (${full[$k]}): Xid ${code} (${name}), ignored"
      write_state
    else
      fatal "$k" "Xid ${code}: ${name}"
    fi
  elif [[ $line =~ $SXID_RE ]]; then
    [ "$nvswitch" = yes ] || return 0
    # An NVSwitch's error: it is on the fabric every GPU of the board uses.
    if [ "${BASH_REMATCH[3]}" = Fatal ]; then
      for k in "${!idx[@]}"; do fatal "$k" "fatal SXid ${BASH_REMATCH[2]} on NVSwitch ${BASH_REMATCH[1]}"; done
    else
      log "non-fatal SXid ${BASH_REMATCH[2]} on NVSwitch ${BASH_REMATCH[1]}, noted"
    fi
  elif [[ $line =~ $AMD_RESET_RE ]]; then
    k=$(gpu_at "${BASH_REMATCH[1]}") || return 0
    fatal "$k" "amdgpu GPU reset (a job hung or the GPU failed)"
  elif [[ $line =~ $AMD_RAS_RE ]]; then
    k=$(gpu_at "${BASH_REMATCH[1]}") || return 0
    fatal "$k" "amdgpu RAS: ${BASH_REMATCH[5]} uncorrectable errors in the ${BASH_REMATCH[7]} block"
  elif [ "$vendor" = intel ] && [[ $line =~ $INTEL_RE ]]; then
    intel_line "${BASH_REMATCH[1]}" "${BASH_REMATCH[2],,}" "${line:${#BASH_REMATCH[0]}}"
  fi
}

# Lines "lost BUS", "seen BUS", "ecc BUS N", "remap BUS" and "rc N" from nvidia-smi's CSV
# answers, which hold bus ids, numbers and words alone: -q's free text carries process names,
# which a task chooses (the answers: docs/gpu-health.md#what-the-watcher-believes).
nvidia_poll() {
  local out rc remap
  out=$(nvidia-smi --query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits 2>&1); rc=$?
  # GPUs without a row remapper (before Ampere) answer [N/A] there, or refuse the query.
  remap=$(nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.failure --format=csv,noheader 2>/dev/null)
  printf '%s\n' "$out" | awk -F', *' -v rc="$rc" '
    /^Unable to determine the device handle for GPU / {
      if (match($0, /[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7]/)) print "lost " substr($0, RSTART, RLENGTH); next }
    $1 ~ /^[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7]$/ {
      print "seen " $1
      if ($2 ~ /^[0-9]+$/ && $2 > 0) print "ecc " $1 " " $2 }
    END { if (rc != 0) print "rc " rc }'
  printf '%s\n' "$remap" | awk -F', *' '$1 ~ /^[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7]$/ && ($2 ~ /^[Yy]es$/ || $2 ~ /^[1-9][0-9]*$/) { print "remap " $1 }'
}

# The pids of compute processes of no running container, per watched GPU: "BUS PID".
nvidia_strays() {
  local me b pid ns
  me=$(readlink /proc/self/ns/pid)
  nvidia-smi --query-compute-apps=gpu_bus_id,pid --format=csv,noheader 2>/dev/null | while IFS=', ' read -r b pid; do
    [[ $pid =~ ^[0-9]+$ ]] || continue
    ns=$(readlink "/proc/${pid}/ns/pid" 2>/dev/null || true)
    # Not visible here, or in our own pid namespace: no container of this worker holds it.
    if [ -z "$ns" ] || [ "$ns" = "$me" ]; then echo "$b $pid"; fi
  done
}

# Lines like nvidia_poll's, from the amdgpu driver's sysfs: the device, and its RAS counters.
amd_poll() {
  local k dev f ue
  for k in "${!idx[@]}"; do
    dev="$ROOT/sys/bus/pci/devices/${full[$k]}"
    if [ ! -e "$dev" ]; then echo "lost ${full[$k]}"; continue; fi
    echo "seen ${full[$k]}"
    for f in "$dev"/ras/*_err_count; do
      [ -r "$f" ] || continue
      ue=$(sed -n 's/^ue: *\([0-9][0-9]*\).*/\1/p' "$f")
      [ "${ue:-0}" -gt 0 ] && echo "ecc ${full[$k]} ${ue}"
    done
  done
}

# JSON as one "PATH=VALUE" line per string, number or word (device_list.0.power.status=OK),
# whatever its layout: xpu-smi's answers, read without jq, which hosts need not have.
json_lines() {
  awk '
    function path(   p, k) { p = ""; for (k = 1; k <= d; k++) p = p (k > 1 ? "." : "") key[k]; return p }
    { s = s $0 "\n" }
    END {
      n = length(s); d = 0; want = 0
      for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        if (c == "{") { d++; kind[d] = "o"; key[d] = ""; want = 1 }
        else if (c == "[") { d++; kind[d] = "a"; key[d] = 0; want = 0 }
        else if (c == "}" || c == "]") d--
        else if (c == ",") { if (kind[d] == "a") key[d]++; else want = 1 }
        else if (c == ":") want = 0
        else if (c == "\"") {
          v = ""
          for (i++; i <= n; i++) { c = substr(s, i, 1); if (c == "\\") { v = v substr(s, i, 2); i++; continue } if (c == "\"") break; v = v c }
          if (kind[d] == "o" && want) key[d] = v; else print path() "=" v
        } else if (c ~ /[-+.0-9A-Za-z]/) {
          for (j = i; j <= n && substr(s, j, 1) ~ /[-+.0-9A-Za-z]/; j++) ;
          print path() "=" substr(s, i, j - i); i = j - 1
        }
      }
    }'
}

# Lines like amd_poll's from sysfs ("lost BUS", "seen BUS"), and where xpu-smi is installed
# "critical BUS COMPONENTS" from its health answer (xpu-smi names GPUs by device id: its
# discovery answer gives each one's bus id), or "tool-error" where it answered no device list.
intel_poll() {
  local k disc health
  for k in "${!idx[@]}"; do
    if [ -e "$ROOT/sys/bus/pci/devices/${full[$k]}" ]; then echo "seen ${full[$k]}"; else echo "lost ${full[$k]}"; fi
  done
  [ "$xpu_smi" = yes ] || return 0
  disc=$(xpu-smi discovery -j 2>/dev/null | json_lines | sed 's/^/D /')
  health=$(xpu-smi health -l -j 2>/dev/null | json_lines | sed 's/^/H /')
  printf '%s\n%s\n' "$disc" "$health" | awk '
    { split($2, kv, "="); split(kv[1], p, "."); v = substr($2, length(kv[1]) + 2) }
    p[1] != "device_list" { next }
    $1 == "D" && p[3] == "device_id" { did[p[2]] = v }
    $1 == "D" && p[3] == "pci_bdf_address" { dbus[p[2]] = v }
    $1 == "H" { listed = 1 }
    $1 == "H" && p[3] == "device_id" { hid[p[2]] = v }
    $1 == "H" && p[4] == "status" && v == "Critical" { crit[p[2]] = crit[p[2]] (crit[p[2]] == "" ? "" : ",") p[3] }
    END {
      for (i in did) at[did[i]] = dbus[i]
      for (j in crit) if (at[hid[j]] != "") print "critical " at[hid[j]] " " crit[j]
      if (!listed) print "tool-error"
    }'
}

poll() {
  local now=$1 report strays k s problem line seen
  case "$vendor" in
    nvidia) report=$(nvidia_poll); strays=$(nvidia_strays) ;;
    amd) report=$(amd_poll); strays="" ;;
    intel) report=$(intel_poll); strays="" ;;
  esac
  if [ "$vendor" = intel ] && [ "$xpu_smi" = yes ]; then
    if grep -qx tool-error <<<"$report"; then
      [ -n "$xpu_failing" ] || log "xpu-smi gave no health answer: this poll has sysfs presence alone"
      xpu_failing=1
    elif [ -n "$xpu_failing" ]; then
      log "xpu-smi answers again"; xpu_failing=""
    fi
  fi
  declare -A found=() ecc=() remap=() lost=() stray=() critical=()
  while read -r what b n; do
    [ -n "$b" ] || continue
    s=$(short_bus "$b") || continue
    case "$what" in
      seen) found[$s]=1 ;;
      lost) lost[$s]=1 ;;
      ecc) ecc[$s]=$n ;;
      remap) remap[$s]=1 ;;
      critical) critical[$s]=$n ;;
    esac
  done <<<"$report"
  while read -r b n; do
    [ -n "$b" ] || continue
    s=$(short_bus "$b") || continue
    stray[$s]="${stray[$s]:-}${stray[$s]:+,}$n"
  done <<<"$strays"
  for k in "${!idx[@]}"; do
    s=${short[$k]}; problem=""
    seen=${found[$s]:-}
    if [ -n "${wedged[$k]}" ] && [ -n "$seen" ] && [ "$(drm_identity "$k" || echo gone)" != "${wedged[$k]}" ]; then
      wedged[k]=""; save_wedged
      log "GPU ${idx[$k]} (${full[$k]}): the driver is bound to it again; it no longer counts as wedged"
    fi
    if [ -n "${lost[$s]:-}" ] || [ -z "$seen" ]; then
      line=$(printf '%s\n' "$report" | sed -n 's/^rc //p')
      problem="lost: the vendor's tool no longer reaches it${line:+ (exit ${line})}"
      [ "$vendor" = nvidia ] || problem="lost: its PCI device (/sys/bus/pci/devices/${full[$k]}) is gone"
    elif [ -n "${wedged[$k]}" ] && [ "$(drm_identity "$k" || echo gone)" = "${wedged[$k]}" ]; then
      problem=${wedge_why[$k]}
    elif [ -n "${critical[$s]:-}" ]; then
      problem="xpu-smi health: critical (${critical[$s]})"
    elif [ -n "${ecc[$s]:-}" ]; then
      problem="uncorrectable ECC errors (${ecc[$s]} since the driver loaded)"
    elif [ -n "${remap[$s]:-}" ]; then
      problem="row-remap failure (the GPU needs service)"
    fi
    if [ -n "${stray[$s]:-}" ]; then
      if [ -z "${dirty_since[$k]}" ]; then
        dirty_since[k]=$now
        log "GPU ${idx[$k]} (${full[$k]}) holds processes of no running container (pid ${stray[$s]}): the worker lands after ${grace}s"
      elif [ $((now - dirty_since[k])) -ge "$grace" ]; then
        problem=${problem:-"dirty: compute processes of no running container (pid ${stray[$s]}) for ${grace}s"}
      fi
      [ -n "$problem" ] || [ "${bad[$k]}" = 0 ] || good_since[k]=""
    else
      dirty_since[k]=""
    fi
    if [ -n "$problem" ]; then
      fatal "$k" "$problem"
    elif [ "${bad[$k]}" = 1 ] && [ -z "${stray[$s]:-}" ]; then
      if [ -z "${good_since[$k]}" ]; then
        good_since[k]=$now
        log "GPU ${idx[$k]} (${full[$k]}) polls healthy: healthy again after ${settle}s"
      elif [ $((now - good_since[k])) -ge "$settle" ]; then
        bad[k]=0; why[k]=""; good_since[k]=""
        if [ "$pool" = yes ]; then log "GPU ${idx[$k]} (${full[$k]}) healthy again: back in the pool"; else log "GPU ${idx[$k]} (${full[$k]}) healthy again"; fi
      fi
    fi
  done
  serving || { write_state; return 0; }
  if [ -n "$acted" ]; then
    local settled="every GPU healthy"
    [ "$pool" = no ] || settled="a GPU healthy"
    # A landing worker still runs its builds, and starting an active unit does nothing: wait until it exits.
    if systemctl is-active --quiet "$worker_unit"; then
      local doing=landing
      [ "$acted" = land ] || doing=retiring
      [ -n "$waiting" ] || log "${settled} for ${settle}s: ${worker_unit} starts again once it has finished ${doing}"
      waiting=1
    elif systemctl start "$worker_unit"; then
      log "${settled} for ${settle}s: started ${worker_unit} again (it registers running)"
      acted=""; waiting=""
    else
      log "could not start ${worker_unit}"
    fi
  fi
  write_state
}

# The newest record's sequence number as the watcher starts: what the log held before is not news.
# A non-blocking read gives every record the log holds, then stops.
last_seq=$(dd if="$KMSG_SOURCE" iflag=nonblock bs=65536 status=none 2>/dev/null | sed -n 's/^[0-9]*,\([0-9]*\),.*/\1/p' | tail -n 1)
last_seq=${last_seq:-"-1"}
# One read of /dev/kmsg is one record: dd reads it whole (bash's read would take a byte at a
# time, which /dev/kmsg refuses) and goes on past records the kernel overwrote (EPIPE).
coproc KMSG { exec dd if="$KMSG_SOURCE" bs=65536 conv=noerror status=none; }
# shellcheck disable=SC2153 # coproc KMSG sets KMSG_PID
kmsg_pid=$KMSG_PID
exec {kmsg}<&"${KMSG[0]}"
trap 'kill "$kmsg_pid" 2>/dev/null' EXIT
trap 'exit 0' TERM INT
xpu_smi=no; xpu_failing=""
if [ "$vendor" = intel ]; then
  if command -v xpu-smi >/dev/null 2>&1; then
    xpu_smi=yes
  else
    log "xpu-smi is not installed: Intel GPUs are watched by the kernel's lines and their sysfs presence alone"
  fi
fi
write_state
gpus=""
for k in "${!idx[@]}"; do gpus+=" ${idx[$k]}=${full[$k]}"; done
log "watching GPUs${gpus}; on a fatal event: ${on_fatal}${worker_unit:+ ${worker_unit}}; polls every ${poll_seconds}s"

# A record: "PRIORITY,SEQUENCE,MICROSECONDS,FLAGS[,...];MESSAGE", then lines of " KEY=VALUE".
# The priority is facility * 8 + level; facility 0 is the kernel's own.
on_record() {
  [[ $1 =~ ^([0-9]+),([0-9]+),[^\;]*\; ]] || return 0
  local priority=${BASH_REMATCH[1]} seq=${BASH_REMATCH[2]}
  [ "$seq" -gt "$last_seq" ] || return 0
  last_seq=$seq
  [ $((priority >> 3)) -eq 0 ] || return 0
  on_kernel_line "${1#*;}"
}

next_poll=0
partial="" # a line the read's timeout cut: its rest comes with the next read
while true; do
  if IFS= read -r -t 1 line <&"$kmsg"; then
    on_record "$partial$line"
    partial=""
  elif [ $? -gt 128 ]; then
    partial+=$line
  else
    log "the kernel log reader (dd of ${KMSG_SOURCE}) stopped"
    exit 1
  fi
  now=$EPOCHSECONDS
  if [ "$now" -ge "$next_poll" ]; then
    poll "$now"
    next_poll=$((now + poll_seconds))
  fi
done
