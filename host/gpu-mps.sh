#!/usr/bin/env bash
# The MPS control daemons (allocation mode mps): one per GPU, instance N of the template unit
# for GPU N (docs/gpu-mps.md). The installer's step:
#   gpu-mps.sh ensure --unit TEMPLATE --run-dir DIR --log-dir DIR --config FILE --watch FILE...
#   gpu-mps.sh check  --unit TEMPLATE --run-dir DIR --log-dir DIR --config FILE --watch FILE...
#   gpu-mps.sh remove --unit TEMPLATE --run-dir DIR --log-dir DIR
# ensure refuses unless the kernel guards root in sticky folders (below); it enables and starts
# each configured GPU's instance, and restarts one whose settings (the watched files, the
# replicas and the thread share: not the list of GPUs) changed since it started it, or that is
# not running, printing "restarted UNIT" for each; it stops and disables the instances of GPUs
# no longer configured, puts their compute mode back and removes their folders. check exits 0
# while every configured GPU's instance is enabled, running, started from the settings in
# place and answering with its thread share, and no other GPU's runs. remove stops and
# disables every instance (each puts its GPU's compute mode back), and removes the run
# folder, the log folder and the records: all it made (the placed files go with their own
# resources).
#
# The unit runs, for its GPU N (CUDA_VISIBLE_DEVICES=N and the MPS folders in its environment):
#   gpu-mps.sh prepare|start|configure|stop|restore --gpu N --config FILE --run-dir DIR --log-dir DIR
# prepare (before the daemon) refuses unless fs.protected_symlinks is 1 and
# fs.protected_regular and fs.protected_fifos are at least 1: the daemon is root's and writes in
# the pipe folder, which tasks write to too (1777: a task's root is a high host uid). It makes
# the GPU's pipe folder afresh (root's, 1777), mounts a fresh tmpfs on its shm folder (the
# daemon's /dev/shm, nosuid,nodev,noexec, 1777), makes its log folder (root's alone, 0700),
# records the GPU's compute mode once, as the host had it, and sets EXCLUSIVE_PROCESS. start
# runs the daemon (nvidia-cuda-mps-control -d) in a mount namespace of its own (unshare; the
# host's mounts reach it), where the shm folder is bound on /dev/shm (action daemon: start's
# second half, in that namespace). configure gives each client total/replicas of
# the GPU's memory pinned and the thread share, and checks the daemon answers with that share.
# stop asks the daemon to quit. restore (after the daemon, a crash too) removes the pipe
# folder, which takes the GPU out of the runc wrapper's pool until the daemon runs again, and
# puts the recorded compute mode back and forgets it.
#
# GPU_WORKERS_SYSCTL_DIR (tests only) reads the fs.protected_* settings under another folder than /proc/sys.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
SYSCTL_DIR=${GPU_WORKERS_SYSCTL_DIR:-/proc/sys}
RECORDS="$STATE_DIR/mps"
# Where systemd keeps the links of enabled units (an instance's, for WantedBy=multi-user.target).
UNIT_DIR=/etc/systemd/system

die() { echo "gpu-mps: $*" >&2; exit 1; }

action=${1:-}; shift || true
template=""; run_dir=""; log_dir=""; config=""; gpu=""; watch=()
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --unit) template=$2 ;;
    --run-dir) run_dir=$2 ;;
    --log-dir) log_dir=$2 ;;
    --config) config=$2 ;;
    --gpu) gpu=$2 ;;
    --watch) watch+=("$2") ;;
    *) die "unknown argument: $1" ;;
  esac
  shift 2
done
case "$run_dir" in /?*) ;; *) die "--run-dir is required (an absolute path)" ;; esac
case "$log_dir" in /?*) ;; *) die "--log-dir is required (an absolute path)" ;; esac
run_dir=${run_dir%/}; log_dir=${log_dir%/}

# --- the config: `key value` lines, read, never sourced ---
replicas=""; percentage=""; gpus=()
declare -A configured=()
read_config() {
  [ -n "$config" ] || die "--config is required"
  [ -r "$config" ] || die "${config} is missing (it is placed before this step)"
  local n=0 key value extra
  while IFS=' ' read -r key value extra || [ -n "${key:-}" ]; do
    n=$((n + 1))
    case "${key:-}" in '' | '#'*) continue ;; esac
    [ -z "$extra" ] || die "${config} line ${n}: expected 'key value', found more after ${key} ${value}"
    case "$key" in
      replicas)
        [[ $value =~ ^[1-9][0-9]*$ ]] || die "${config} line ${n}: replicas ${value}: expected a whole number above 0"
        replicas=$value ;;
      active-thread-percentage)
        if ! [[ $value =~ ^[1-9][0-9]*$ ]] || [ "$value" -gt 100 ]; then
          die "${config} line ${n}: active-thread-percentage ${value}: expected a whole number from 1 to 100"
        fi
        percentage=$value ;;
      gpu)
        [[ $value =~ ^(0|[1-9][0-9]*)$ ]] || die "${config} line ${n}: gpu ${value}: expected a GPU index"
        if [ -z "${configured[$value]:-}" ]; then configured[$value]=1; gpus+=("$value"); fi ;;
      *) die "${config} line ${n}: unknown key ${key}" ;;
    esac
  done <"$config"
  [ -n "$replicas" ] || die "${config}: no replicas line"
  [ -n "$percentage" ] || die "${config}: no active-thread-percentage line"
}

need_template() {
  [[ $template =~ ^[A-Za-z0-9_.-]+@\.service$ ]] || die "--unit is required: a template unit such as gpu-workers-mps@.service"
  prefix=${template%@.service}
}

need_gpu() {
  [[ $gpu =~ ^(0|[1-9][0-9]*)$ ]] || die "--gpu ${gpu:-}: expected a GPU index (the unit's instance)"
}

need_configured() {
  [ -n "${configured[$gpu]:-}" ] || die "GPU ${gpu} is not in ${config}: no daemon of ours runs for it"
}

# --- the kernel's guards for root in sticky, world-writable folders ---
check_sysctls() {
  local name value problems=()
  for name in protected_symlinks protected_regular protected_fifos; do
    value=""
    { read -r value <"$SYSCTL_DIR/fs/$name"; } 2>/dev/null || true
    case "$name:$value" in
      protected_symlinks:1 | protected_regular:[12] | protected_fifos:[12]) ;;
      protected_symlinks:*) problems+=("fs.${name} is ${value:-unreadable} (needs 1)") ;;
      *) problems+=("fs.${name} is ${value:-unreadable} (needs at least 1)") ;;
    esac
  done
  [ "${#problems[@]}" -eq 0 ] && return 0
  local said
  printf -v said '%s; ' "${problems[@]}"
  die "refused: ${said%; }. The MPS daemons are root's and write in folders that tasks can write to (sticky, world-writable);" \
    "these settings stop root from following a task's planted link or opening a task's file or FIFO there." \
    "Set them (sysctl -w fs.protected_symlinks=1 fs.protected_regular=1 fs.protected_fifos=1, and in /etc/sysctl.d/ for boot) and run again"
}

# --- folders ---
# A folder above ours: a real folder of root's that nobody else may write to; made 0755 where missing.
parent_dir() {
  local dir=$1 owner mode
  [ ! -L "$dir" ] || die "${dir} is a symbolic link; expected a folder of root's"
  [ -e "$dir" ] || mkdir -m 0755 -- "$dir"
  [ -d "$dir" ] || die "${dir} is not a folder"
  read -r owner mode < <(stat -c '%u %a' -- "$dir")
  [ "$owner" = 0 ] || die "${dir} is owned by uid ${owner}; expected root"
  (( (8#$mode & 8#022) == 0 )) || die "${dir} has mode ${mode}: group or others may write to it"
}

# A folder of ours: a real folder, root's, with exactly MODE.
own_dir() {
  local dir=$1 mode=$2
  [ ! -L "$dir" ] || die "${dir} is a symbolic link; expected a folder of root's"
  [ -e "$dir" ] || mkdir -- "$dir"
  [ -d "$dir" ] || die "${dir} is not a folder"
  chown root:root -- "$dir"
  chmod "$mode" -- "$dir"
}

unmount_all() {
  local dir=$1
  while mountpoint -q -- "$dir"; do
    umount -- "$dir" 2>/dev/null || umount -l -- "$dir" || die "cannot unmount ${dir}"
  done
}

# --- the GPU's compute mode, as nvidia-smi -c takes it ---
mode_word() {
  case "$1" in
    Default | DEFAULT) mode=DEFAULT ;;
    Exclusive_Process | EXCLUSIVE_PROCESS) mode=EXCLUSIVE_PROCESS ;;
    Prohibited | PROHIBITED) mode=PROHIBITED ;;
    Exclusive_Thread | EXCLUSIVE_THREAD) mode=EXCLUSIVE_THREAD ;;
    *) return 1 ;;
  esac
}

record_mode() {
  local record="$RECORDS/$gpu.compute-mode" answer mode
  [ ! -e "$record" ] && [ ! -L "$record" ] || return 0
  answer=$(nvidia-smi -i "$gpu" --query-gpu=compute_mode --format=csv,noheader) || die "nvidia-smi cannot read GPU ${gpu}'s compute mode"
  answer=${answer//[[:space:]]/}
  mode_word "$answer" || die "nvidia-smi reads GPU ${gpu}'s compute mode as '${answer}': expected Default, Exclusive_Process or Prohibited"
  mkdir -p -- "$RECORDS"
  printf '%s\n' "$mode" >"$record.tmp"
  mv -f -- "$record.tmp" "$record"
}

restore_gpu() {
  local g=$1 record="$RECORDS/$1.compute-mode" kept="" mode
  [ -e "$record" ] || return 0
  { read -r kept <"$record"; } 2>/dev/null || true
  mode_word "$kept" || die "${record} holds '${kept}', no compute mode; put GPU ${g}'s back by hand (nvidia-smi -i ${g} -c MODE) and delete it"
  nvidia-smi -i "$g" -c "$mode" >/dev/null || die "cannot put GPU ${g}'s compute mode back to ${mode} (kept in ${record}: the next stop or remove tries again)"
  rm -f -- "$record"
}

# --- talking to a GPU's daemon ---
pipe_of() { printf -v pipe '%s/%s/pipe' "$run_dir" "$1"; }

# The daemon's answer to one command, as nvidia-cuda-mps-control prints it.
control() {
  local pipe
  pipe_of "$1"
  printf '%s\n' "$2" | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control
}

# The thread share the daemon of GPU $1 answers with (50 or 50.0) is $2.
answers_share() {
  local answer
  answer=$(control "$1" get_default_active_thread_percentage 2>/dev/null) || return 1
  answer=${answer//[[:space:]]/}
  [[ $answer =~ ^([0-9]+)(\.0+)?$ ]] && [ "${BASH_REMATCH[1]}" = "$2" ]
}

# --- the unit's actions, for its GPU ---
prepare() {
  need_gpu; read_config; need_configured
  check_sysctls
  local gpu_dir="$run_dir/$gpu"
  parent_dir "${run_dir%/*}"
  own_dir "$run_dir" 0755
  own_dir "$gpu_dir" 0755
  # The pipe folder afresh: what anyone left in the old one goes with it (rm follows no link).
  rm -rf -- "$gpu_dir/pipe"
  own_dir "$gpu_dir/pipe" 1777
  unmount_all "$gpu_dir/shm"
  own_dir "$gpu_dir/shm" 0755
  mount -t tmpfs -o nosuid,nodev,noexec,mode=1777 "gpu-workers-mps-$gpu" "$gpu_dir/shm"
  parent_dir "${log_dir%/*}"
  own_dir "$log_dir" 0700
  own_dir "$log_dir/$gpu" 0700
  record_mode
  nvidia-smi -i "$gpu" -c EXCLUSIVE_PROCESS >/dev/null || die "cannot set GPU ${gpu}'s compute mode to EXCLUSIVE_PROCESS"
}

start() {
  need_gpu; read_config; need_configured
  command -v nvidia-cuda-mps-control >/dev/null || die "nvidia-cuda-mps-control is not installed (it comes with the NVIDIA driver's utilities)"
  mountpoint -q -- "$run_dir/$gpu/shm" || die "${run_dir}/${gpu}/shm is not mounted (prepare mounts it)"
  # A mount namespace of the daemon's own (the host's mounts still reach it), where its shm folder is /dev/shm.
  exec unshare --mount --propagation slave -- "${BASH_SOURCE[0]}" daemon --gpu "$gpu" --config "$config" --run-dir "$run_dir" --log-dir "$log_dir"
}

# start's second half, in the daemon's mount namespace: the daemon, and the servers it starts, see GPU N's tmpfs as /dev/shm.
daemon() {
  need_gpu
  mount --bind "$run_dir/$gpu/shm" /dev/shm
  exec nvidia-cuda-mps-control -d
}

configure() {
  need_gpu; read_config; need_configured
  local pipe total limit tries=0
  pipe_of "$gpu"
  [ "${CUDA_MPS_PIPE_DIRECTORY:-$pipe}" = "$pipe" ] || die "CUDA_MPS_PIPE_DIRECTORY is ${CUDA_MPS_PIPE_DIRECTORY}; GPU ${gpu}'s pipe folder is ${pipe}"
  total=$(nvidia-smi -i "$gpu" --query-gpu=memory.total --format=csv,noheader,nounits) || die "nvidia-smi cannot read GPU ${gpu}'s memory.total"
  total=${total//[[:space:]]/}
  [[ $total =~ ^[1-9][0-9]*$ ]] || die "nvidia-smi reads GPU ${gpu}'s memory.total as '${total}': expected MiB"
  limit=$((total / replicas))
  # The daemon makes its control pipe just after it forks.
  until control "$gpu" get_default_active_thread_percentage >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || die "GPU ${gpu}'s daemon does not answer in ${pipe}"
    sleep 0.2
  done
  # Inside the daemon its GPU is CUDA's device 0 (CUDA_VISIBLE_DEVICES holds it alone).
  control "$gpu" "set_default_device_pinned_mem_limit 0 ${limit}M" >/dev/null
  control "$gpu" "set_default_active_thread_percentage ${percentage}" >/dev/null
  answers_share "$gpu" "$percentage" || die "GPU ${gpu}'s daemon does not answer with ${percentage} % of the threads"
  echo "gpu-mps: GPU ${gpu}: each of ${replicas} clients may pin ${limit} MiB and use ${percentage} % of the threads"
}

stop() {
  need_gpu
  control "$gpu" quit >/dev/null 2>&1 || true
  local main=${MAINPID:-} tries=0
  [[ $main =~ ^[1-9][0-9]*$ ]] || return 0
  while kill -0 "$main" 2>/dev/null && [ "$tries" -lt 50 ]; do
    tries=$((tries + 1))
    sleep 0.2
  done
}

restore() {
  need_gpu
  # No pipe folder: the wrapper hands this GPU to no new container (docs/gpu-mps.md).
  rm -rf -- "${run_dir:?}/$gpu/pipe"
  restore_gpu "$gpu"
}

# --- the installer's step ---
# The settings an instance starts from: the watched files, the replicas and the thread share.
settings_sum() {
  [ "${#watch[@]}" -gt 0 ] || die "--watch FILE is required"
  local f
  for f in "${watch[@]}"; do [ -r "$f" ] || die "${f} is missing (it is placed before this step)"; done
  { cat -- "${watch[@]}"; printf 'replicas %s\nactive-thread-percentage %s\n' "$replicas" "$percentage"; } | sha256sum | cut -d' ' -f1
}

stamp_of() {
  stamp=""
  { read -r stamp <"$RECORDS/$1.sha256"; } 2>/dev/null || true
}

# Every GPU an instance of ours was started, recorded, enabled, loaded or given folders for.
declare -A known=()
find_known() {
  local f name
  for f in "$RECORDS"/*.sha256 "$RECORDS"/*.compute-mode; do
    name=${f##*/}; name=${name%%.*}; known_add "$name"
  done
  for f in "$UNIT_DIR"/*.wants/"$prefix"@*.service; do
    name=${f##*/"$prefix"@}; known_add "${name%.service}"
  done
  for f in "$run_dir"/*/ "$log_dir"/*/; do
    name=${f%/}; known_add "${name##*/}"
  done
  while read -r name _; do
    name=${name#"$prefix"@}; known_add "${name%.service}"
  done < <(systemctl list-units --all --plain --no-legend --full "$prefix@*.service" 2>/dev/null || true)
}
known_add() {
  if [[ $1 =~ ^(0|[1-9][0-9]*)$ ]]; then known[$1]=1; fi
}

# GPU $1's daemon stopped and disabled, its compute mode put back, its folders and records gone.
drop_gpu() {
  local g=$1 inst="$prefix@$1.service"
  systemctl stop "$inst" 2>/dev/null || true
  systemctl disable --quiet "$inst" 2>/dev/null || rm -f -- "$UNIT_DIR"/*.wants/"$inst"
  systemctl reset-failed "$inst" 2>/dev/null || true
  # Its own stop puts the mode back; this finishes where it did not run (a daemon that never started).
  restore_gpu "$g"
  rm -f -- "$RECORDS/$g.sha256"
  unmount_all "$run_dir/$g/shm"
  rm -rf -- "${run_dir:?}/$g" "${log_dir:?}/$g"
}

ensure() {
  need_template; read_config
  check_sysctls
  local want g inst stamp
  want=$(settings_sum)
  systemctl daemon-reload
  mkdir -p -- "$RECORDS"
  for g in "${gpus[@]}"; do
    inst="$prefix@$g.service"
    systemctl enable --quiet "$inst"
    stamp_of "$g"
    if [ "$stamp" != "$want" ] || ! systemctl is-active --quiet "$inst"; then
      systemctl reset-failed "$inst" 2>/dev/null || true
      if ! systemctl restart "$inst"; then
        journalctl -u "$inst" -n 20 --no-pager >&2 || true
        die "${inst} did not start (its journal above)"
      fi
      echo "$want" >"$RECORDS/$g.sha256"
      echo "restarted $inst"
    fi
  done
  find_known
  for g in "${!known[@]}"; do
    [ -n "${configured[$g]:-}" ] || drop_gpu "$g"
  done
}

check() {
  need_template; read_config
  local want g inst stamp
  want=$(settings_sum)
  for g in "${gpus[@]}"; do
    inst="$prefix@$g.service"
    systemctl is-enabled --quiet "$inst" || die "${inst} is not enabled"
    systemctl is-active --quiet "$inst" || die "${inst} is not running"
    stamp_of "$g"
    [ "$stamp" = "$want" ] || die "${inst} was started from other settings than the ones in place"
    answers_share "$g" "$percentage" || die "${inst}: the daemon does not answer with ${percentage} % of the threads"
  done
  find_known
  for g in "${!known[@]}"; do
    [ -n "${configured[$g]:-}" ] && continue
    inst="$prefix@$g.service"
    ! systemctl is-active --quiet "$inst" || die "${inst} runs, but GPU ${g} is not in ${config}"
    ! systemctl is-enabled --quiet "$inst" 2>/dev/null || die "${inst} is enabled, but GPU ${g} is not in ${config}"
  done
}

remove() {
  need_template
  local g
  find_known
  for g in "${!known[@]}"; do drop_gpu "$g"; done
  # The project's own folders under /run and /var/log go once nothing else is in them.
  for g in "$run_dir"/*/shm; do unmount_all "$g"; done
  rm -rf -- "$run_dir" "$log_dir"
  rmdir -- "${run_dir%/*}" "${log_dir%/*}" 2>/dev/null || true
  rm -rf -- "$RECORDS"
  systemctl daemon-reload 2>/dev/null || true
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  prepare) prepare ;;
  start) start ;;
  daemon) daemon ;;
  configure) configure ;;
  stop) stop ;;
  restore) restore ;;
  *) die "usage: gpu-mps.sh ensure|check|remove --unit TEMPLATE --run-dir DIR --log-dir DIR [--config FILE --watch FILE...], or prepare|start|configure|stop|restore --gpu N ..." ;;
esac
