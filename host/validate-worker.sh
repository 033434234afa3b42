#!/usr/bin/env bash
# Proves, after the chain has converged, that the worker gives containers what its plan says.
#   validate-worker.sh ensure [options]   run every check; on success record what was validated
#   validate-worker.sh check  [options]   exit 1 when the driver, toolkit or CDI spec changed since
#   validate-worker.sh remove             forget the record
#   validate-worker.sh inside [options]   (run in the test container by "ensure")
# Options:
#   --vendor nvidia|amd|intel|none
#   --gpus I[:UUID],...       every declared GPU index (with its UUID where declared)
#   --selected I,...          the worker's GPUs
#   --driver VERSION          the driver the host must run (a pin, or the declared version)
#   --cuda VERSION            the CUDA version nvidia-smi must report
#   --wrapper PATH            the runc wrapper: the runtime containerd's GPU entry names
#   --socket PATH             containerd's socket (default /run/containerd/containerd.sock)
#   --env NAME=VALUE          a variable every container must see (repeatable)
#   --unset NAME              a variable no container may see (repeatable)
#   --device PATH             a device node every container must be able to open (repeatable)
#   --datasets-root DIR       every subfolder (not a link) must be read-write exactly when it has a suffix;
#                             DIR must be writable by its owner only (the folders above it too,
#                             unless sticky)
#   --writable-suffix SUFFIX  (repeatable)
#   --cdi-spec PATH           the CDI spec whose changes "check" notices
#   --toolkit-package NAME    the toolkit package: it must be installed at --toolkit-version
#   --toolkit-version V       (preinstalled: any version), and "check" watches it
# The test container runs through containerd, the wrapper and what the wrapper runs
# (nvidia-container-runtime or runc), with the host's root read-only as its root file system,
# so the checks inside use the host's own tools. Each failure says what was expected and what
# was found.
set -uo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
STATE="$STATE_DIR/validated"
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
NAMESPACE=gpu-workers-validate

die() { echo "validate-worker: $*" >&2; exit 1; }

action=${1:-}; shift || true
all_args=("$@")
vendor=none; gpus=""; selected=""; driver=""; cuda=""; wrapper=""; socket=/run/containerd/containerd.sock
datasets_root=""; cdi_spec=""; toolkit_package=""; toolkit_version=""
envs=(); unsets=(); devices=(); suffixes=(); expect_uuids=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vendor) vendor=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --selected) selected=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --cuda) cuda=$2; shift 2 ;;
    --wrapper) wrapper=$2; shift 2 ;;
    --socket) socket=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --unset) unsets+=("$2"); shift 2 ;;
    --device) devices+=("$2"); shift 2 ;;
    --datasets-root) datasets_root=$2; shift 2 ;;
    --writable-suffix) suffixes+=("$2"); shift 2 ;;
    --cdi-spec) cdi_spec=$2; shift 2 ;;
    --toolkit-package) toolkit_package=$2; shift 2 ;;
    --toolkit-version) toolkit_version=$2; shift 2 ;;
    --expect-uuids) expect_uuids=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

failures=0
fail() { echo "validate-worker: FAILED $*" >&2; failures=$((failures + 1)); }
pass() { echo "validate-worker: ok $*"; }
# same FOUND WANT PASS-MESSAGE FAIL-MESSAGE
same() { if [ "$1" = "$2" ]; then pass "$3"; else fail "$4"; fi; }

# --- on the host --------------------------------------------------------------------------

# "index, uuid, driver" per GPU from nvidia-smi, into the globals below.
host_uuids=""
check_driver_nvidia() {
  local out found_idx="" want_idx="" entry idx uuid row found_driver found_cuda
  command -v nvidia-smi >/dev/null 2>&1 || { fail "driver: expected nvidia-smi on the host, found none"; return; }
  if ! out=$(nvidia-smi --query-gpu=index,uuid,driver_version --format=csv,noheader 2>&1); then
    fail "driver: nvidia-smi failed: $(echo "$out" | head -n 1)"; return
  fi
  found_idx=$(echo "$out" | awk -F', *' 'NF >= 3 {print $1}' | sort -n | paste -sd, -)
  want_idx=$(echo "$gpus" | tr ',' '\n' | cut -d: -f1 | sort -n | paste -sd, -)
  same "$found_idx" "$want_idx" "driver: nvidia-smi lists GPUs $found_idx" "driver: expected GPUs $want_idx (the inventory), found $found_idx"
  for entry in $(echo "$gpus" | tr ',' ' '); do
    idx=${entry%%:*}; uuid=${entry#*:}
    row=$(echo "$out" | awk -F', *' -v i="$idx" '$1 == i')
    [ "$uuid" != "$entry" ] && [ -n "$row" ] && [ "$(echo "$row" | awk -F', *' '{print $2}')" != "$uuid" ] && \
      fail "driver: GPU $idx: expected UUID $uuid, found $(echo "$row" | awk -F', *' '{print $2}')"
  done
  host_uuids=$(echo "$out" | awk -F', *' 'NF >= 3 {print $1 ":" $2}' | paste -sd, -)
  found_driver=$(echo "$out" | awk -F', *' 'NF >= 3 {print $3; exit}')
  if [ -n "$driver" ]; then
    case "$found_driver" in
      "$driver"|"$driver".*) pass "driver: version $found_driver" ;;
      *) fail "driver: expected version $driver, found $found_driver" ;;
    esac
  fi
  if [ -n "$cuda" ]; then
    found_cuda=$(nvidia-smi 2>/dev/null | sed -nE 's/.*CUDA (UMD )?Version: *([0-9.]+).*/\2/p' | head -n 1)
    same "$found_cuda" "$cuda" "driver: CUDA $found_cuda" "driver: expected CUDA $cuda, found ${found_cuda:-none}"
  fi
}

# Intel: the cards the inventory names are there, each on i915 or xe.
check_driver_intel() {
  local want found card driver
  want=$(echo "$gpus" | tr ',' '\n' | grep -c .)
  found=0
  for card in /sys/class/drm/card*; do
    case "${card##*/}" in card[0-9]*) ;; *) continue ;; esac
    case "${card##*/}" in *-*) continue ;; esac
    [ "$(cat "$card/device/vendor" 2>/dev/null)" = 0x8086 ] || continue
    driver=$(basename "$(readlink "$card/device/driver" 2>/dev/null)")
    case "$driver" in
      i915|xe) found=$((found + 1)) ;;
      *) fail "driver: expected ${card##*/} on i915 or xe, found ${driver:-no driver}" ;;
    esac
  done
  same "$found" "$want" "driver: $found Intel GPUs on i915 or xe" "driver: expected $want Intel GPUs (the inventory), sysfs has $found"
}

check_driver_amd() {
  local want found tool
  want=$(echo "$gpus" | tr ',' '\n' | grep -c .)
  [ -e /dev/kfd ] || fail "driver: expected /dev/kfd (the amdgpu driver's compute node), found none"
  if command -v amd-smi >/dev/null 2>&1; then tool=amd-smi; found=$(amd-smi list 2>/dev/null | grep -cE '^GPU: *[0-9]+')
  elif command -v rocm-smi >/dev/null 2>&1; then tool=rocm-smi; found=$(rocm-smi --showid 2>/dev/null | grep -oE '^GPU\[[0-9]+\]' | sort -u | grep -c .)
  else fail "driver: expected amd-smi or rocm-smi on the host, found neither"; return
  fi
  same "$found" "$want" "driver: $tool lists $found GPUs" "driver: expected $want GPUs (the inventory), $tool lists $found"
  if [ -n "$driver" ] && [ -r /opt/rocm/.info/version ]; then
    case "$(head -n 1 /opt/rocm/.info/version)" in
      "$driver"|"$driver".*|"$driver"-*) pass "driver: ROCm $(head -n 1 /opt/rocm/.info/version)" ;;
      *) fail "driver: expected ROCm $driver, found $(head -n 1 /opt/rocm/.info/version)" ;;
    esac
  fi
}

# The UUIDs of the selected GPUs, from the declaration or nvidia-smi on the host.
selected_uuids() {
  local i entry out=""
  for i in $(echo "$selected" | tr ',' ' '); do
    for entry in $(echo "$gpus,$host_uuids" | tr ',' ' '); do
      if [ "${entry%%:*}" = "$i" ] && [ "$entry" != "$i" ]; then out="$out${out:+,}${entry#*:}"; break; fi
    done
  done
  echo "$out"
}

# The host's root as the containers' root: runc cannot pivot into "/" itself, so it gets a
# recursive bind of it (private: nothing done below it reaches the host, and nothing the host
# mounts later, writable, as systemd does while it boots, reaches it), removed on exit, and
# read-only all the way down: ctr's --read-only covers only its top mount, and a separate /var,
# /boot or /home would stay writable inside, where a task's files and links are.
# The tree is made read-only on a private staging point first, and only then bound where runc
# finds it: containerd may run in a mount namespace of its own (the worker's unit gives it one),
# which receives a copy of each new mount as it is at that moment; a later remount never follows.
rootfs=""; stage=""
host_root() {
  stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu-workers-validate.XXXXXX") || die "cannot create a folder for the containers' root"
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/gpu-workers-validate.XXXXXX") || die "cannot create a folder for the containers' root"
  trap 'drop_tree "$rootfs"; drop_tree "$stage"' EXIT
  mount --bind "$stage" "$stage" || die "cannot bind $stage on itself"
  mount --make-private "$stage" || die "cannot make $stage a private mount"
  mount --rbind / "$stage" || die "cannot bind the host's root at $stage"
  mount --make-rprivate "$stage" || die "cannot make $stage a private mount"
  read_only_below "$stage"
  mount --rbind "$stage" "$rootfs" || die "cannot bind the host's read-only root at $rootfs"
  mount --make-rprivate "$rootfs" || die "cannot make $rootfs a private mount"
  drop_tree "$stage"
}

# Unmounts every mount at DIR (the stack of them) and below, then removes DIR.
drop_tree() {
  [ -n "$1" ] && [ -d "$1" ] || return 0
  while umount -R "$1" 2>/dev/null; do :; done
  rmdir "$1" 2>/dev/null
}

# Remounts every mount at or below DIR read-only, keeping the flags a user namespace locks
# (nosuid, nodev, noexec, the atime ones), which a remount must repeat. Mount points come from
# mountinfo, their spaces and other odd bytes as octal escapes. Left as they are: mounts that
# are read-only already (a bind keeps its source's flag), and those below /proc, /sys and /dev,
# which the runtime covers with mounts of its own (the check inside exempts them alike).
# Only mount runs as a process: a host has dozens of mounts, and each process costs the step.
read_only_below() {
  local target options option keep _
  local -a flags
  while read -r _ _ _ _ target options _; do
    printf -v target '%b' "$target"
    case "$target" in
      "$1"/proc/* | "$1"/sys/* | "$1"/dev/*) continue ;;
      "$1" | "$1"/*) ;;
      *) continue ;;
    esac
    IFS=, read -ra flags <<<"$options"
    keep=""
    for option in "${flags[@]}"; do
      case "$option" in
        ro) continue 2 ;;
        nosuid | nodev | noexec | noatime | nodiratime | relatime | strictatime) keep="$keep,$option" ;;
      esac
    done
    mount -o "remount,bind,ro$keep" "$target" 2>/dev/null || die "cannot make $target read-only for the validator's containers"
  done </proc/self/mountinfo
}

# One container, which asks for every GPU as a hostile task would; it must still get exactly
# the plan. The wrapper removes or sets each of these variables whatever the task asked, so a
# container that asks for nothing would get the same spec and prove nothing more, at the cost
# of another containerd task, shim and runtime (on a small host, about half of this step).
run_container() {
  # No CPU shares (ctr asks for 1024 by default): a task container has none, and a host without
  # the cpu controller (an LXD container on some kernels) could not set them.
  ctr --address "$socket" -n "$NAMESPACE" run --rm --rootfs --read-only --cpu-shares 0 --runc-binary "$wrapper" \
    --env NVIDIA_VISIBLE_DEVICES=all --env AMD_VISIBLE_DEVICES=all "$rootfs" "validate-$$" \
    "$SELF" inside "${all_args[@]}" --expect-uuids "$(selected_uuids)"
}

check_chain() {
  command -v ctr >/dev/null 2>&1 || { fail "chain: expected containerd's ctr client on the host, found none"; return; }
  [ -S "$socket" ] || { fail "chain: expected containerd at $socket, found no socket"; return; }
  [ -x "$wrapper" ] || { fail "chain: expected the runc wrapper at $wrapper, found none"; return; }
  host_root
  run_container || fail "chain: a container started through $wrapper that asks for every GPU (NVIDIA_VISIBLE_DEVICES=all, AMD_VISIBLE_DEVICES=all) does not get what the plan says (above)"
}

fingerprint() {
  local d="" t="" c=""
  if [ -r /proc/driver/nvidia/version ]; then d=$(sed -nE 's/.*Kernel Module( for [^ ]+)? +([0-9.]+).*/\2/p' /proc/driver/nvidia/version | head -n 1)
  elif [ -r /opt/rocm/.info/version ]; then d=$(head -n 1 /opt/rocm/.info/version); fi
  [ -n "$toolkit_package" ] && t=$(dpkg-query -W -f '${Version}' "$toolkit_package" 2>/dev/null || true)
  [ -n "$cdi_spec" ] && [ -f "$cdi_spec" ] && c=$(sha256sum "$cdi_spec" | cut -d' ' -f1)
  echo "driver=$d toolkit=$t cdi=$c"
}

check_toolkit() {
  [ -n "$toolkit_package" ] || return 0
  local found
  found=$(dpkg-query -W -f '${db:Status-Status} ${Version}' "$toolkit_package" 2>/dev/null | sed -n 's/^installed //p' || true)
  [ -n "$found" ] || { fail "toolkit: expected $toolkit_package installed, found none"; return; }
  case "$found" in
    "$toolkit_version"|"$toolkit_version"-*) pass "toolkit: $toolkit_package $found" ;;
    *) same "$toolkit_version" preinstalled "toolkit: $toolkit_package $found (preinstalled)" "toolkit: expected $toolkit_package $toolkit_version, found $found" ;;
  esac
}

# The dataset root must be writable by its owner only: where others may write, they could put
# there a folder that every task then gets. A folder above it may be writable by others only
# with the sticky bit (as /tmp), which keeps them from moving the root away and putting their
# own in its place. (The stack refuses /tmp, /home and system folders; only the host knows modes.)
check_datasets_root() {
  local dir mode
  [ -n "$datasets_root" ] && [ -d "$datasets_root" ] || return 0
  case "$datasets_root" in /*) ;; *) fail "datasets: expected an absolute dataset root, found $datasets_root"; return ;; esac
  mode=$(stat -L -c '%a' "$datasets_root")
  if (( 8#$mode & 8#022 )); then
    fail "datasets: the dataset root $datasets_root is writable by group or others (mode $mode), so they could put there a folder that every task then gets; make it writable by its owner only (chmod go-w $datasets_root)"
  fi
  dir=$datasets_root
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    mode=$(stat -L -c '%a' "$dir")
    if (( 8#$mode & 8#022 )) && ! (( 8#$mode & 8#1000 )); then
      fail "datasets: $dir, above the dataset root $datasets_root, is writable by group or others without the sticky bit (mode $mode), so they could put another folder in the root's place; make it writable by its owner only (chmod go-w $dir)"
    fi
  done
}

ensure() {
  check_datasets_root
  check_toolkit
  case "$vendor" in
    nvidia) check_driver_nvidia ;;
    amd) check_driver_amd ;;
    intel) check_driver_intel ;;
    none) ;;
    *) die "--vendor must be nvidia, amd, intel or none (got '$vendor')" ;;
  esac
  check_chain
  [ "$failures" -eq 0 ] || die "$failures check(s) failed: the worker does not give containers what its plan says"
  mkdir -p "$STATE_DIR"
  fingerprint > "$STATE"
  echo "validate-worker: the worker gives containers what its plan says"
}

check() {
  [ -f "$STATE" ] || { echo "validate-worker: never validated" >&2; exit 1; }
  local now
  now=$(fingerprint)
  [ "$(cat "$STATE")" = "$now" ] || { echo "validate-worker: validated with '$(cat "$STATE")', now '$now'" >&2; exit 1; }
}

# --- inside the test container ------------------------------------------------------------

inside_env() {
  local entry name want found
  for entry in "${envs[@]+"${envs[@]}"}"; do
    name=${entry%%=*}; want=${entry#*=}
    if [ -z "${!name+x}" ]; then fail "env: expected $name=$want, found it unset"
    elif [ "${!name}" != "$want" ]; then fail "env: expected $name=$want, found $name=${!name}"
    else pass "env: $name=$want"; fi
  done
  for name in "${unsets[@]+"${unsets[@]}"}"; do
    if [ -n "${!name+x}" ]; then fail "env: expected $name unset, found $name=${!name}"; else pass "env: $name unset"; fi
  done
  found=$(env | grep -cE '^(NVIDIA|AMD)_VISIBLE_DEVICES=' || true)
  [ "$found" -le 1 ] || fail "env: expected one *_VISIBLE_DEVICES variable at most, found $found"
}

inside_gpus_nvidia() {
  local out found want
  if ! out=$(nvidia-smi -L 2>&1); then fail "gpus: expected nvidia-smi -L to list the selected GPUs $selected, it failed: $(echo "$out" | head -n 1)"; return; fi
  found=$(echo "$out" | sed -nE 's/^GPU [0-9]+: .*\(UUID: (GPU-[0-9a-fA-F-]+)\)$/\1/p' | sort | paste -sd, -)
  if [ -n "$expect_uuids" ]; then
    want=$(echo "$expect_uuids" | tr ',' '\n' | sort | paste -sd, -)
    same "$found" "$want" "gpus: exactly $want" "gpus: expected exactly the selected GPUs $want, found ${found:-none}"
  else
    want=$(echo "$selected" | tr ',' '\n' | grep -c .)
    same "$(echo "$found" | tr ',' '\n' | grep -c .)" "$want" "gpus: $want" "gpus: expected $want GPUs, found ${found:-none}"
  fi
}

inside_devices() {
  local node gid
  for node in "${devices[@]+"${devices[@]}"}"; do
    [ -c "$node" ] || { fail "devices: expected the device node $node, found none"; continue; }
    gid=$(stat -c %g "$node")
    # A task's user is not root: it reaches the node through the node's group.
    # shellcheck disable=SC2016 # $1 is the inner shell's
    if setpriv --reuid=65534 --regid=65534 --groups="$gid" sh -c 'exec 3<>"$1"' _ "$node" 2>/dev/null; then
      pass "devices: $node opens for a non-root user in group $gid"
    else
      fail "devices: expected $node to open for a non-root user in its group $gid, it does not ($(stat -c '%A %U:%G' "$node"))"
    fi
  done
}

# Whether PATH is a writable dataset folder: a direct subfolder of the root with a writable suffix.
writable_dataset() {
  local name suffix
  [ -n "$datasets_root" ] && [ "${1%/*}" = "$datasets_root" ] || return 1
  name=${1##*/}
  for suffix in "${suffixes[@]+"${suffixes[@]}"}"; do
    case "$name" in *"$suffix") return 0 ;; esac
  done
  return 1
}

# The options of the mount DIR is on, as a path lookup finds it: where mounts stack on one
# point (a writable dataset bound over the read-only root's copy of it), the top one, which
# findmnt --target does not pick. The kernel names it by the mount id of an open descriptor.
mount_options() {
  local fd id
  exec {fd}<"$1" || return 1
  id=$(sed -n 's/^mnt_id:[[:space:]]*//p' "/proc/$BASHPID/fdinfo/$fd")
  exec {fd}<&-
  awk -v id="$id" '$1 == id { print $6 }' /proc/self/mountinfo
}

# Whether a file can be made in DIR: a name of its own, made exclusively (an existing name, or a
# link a task planted, fails it: nothing is written through a link) and removed at once. Asked
# only of folders whose mount is read-write; a read-only mount is read from mountinfo, not tried.
writable_folder() {
  local probe
  mount_options "$1" | tr ',' '\n' | grep -qx ro && return 1
  probe=$(mktemp -p "$1" .gpu-workers-validate.XXXXXX 2>/dev/null) || return 1
  rm -f -- "$probe"
}

inside_datasets() {
  local dir writable
  [ -n "$datasets_root" ] && [ -d "$datasets_root" ] || return 0
  for dir in "$datasets_root"/*/; do
    [ -d "$dir" ] || continue
    dir=${dir%/}
    # A link resolves inside the container and has the mode of what it leads to, whatever its name.
    [ -L "$dir" ] && continue
    writable=no
    writable_dataset "$dir" && writable=yes
    if writable_folder "$dir"; then
      same "$writable" yes "datasets: $dir is read-write" "datasets: expected $dir read-only, found it writable"
    else
      same "$writable" no "datasets: $dir is read-only" "datasets: expected $dir read-write, found it read-only"
    fi
  done
}

# The host's root, read-only all the way down: no mount in here is writable but the runtime's own
# (/proc, /dev, /sys, /run) and the writable datasets.
inside_root() {
  local target options found="" _
  while read -r _ _ _ _ target options _; do
    printf -v target '%b' "$target"
    case ",$options," in *,rw,*) ;; *) continue ;; esac
    case "$target" in /proc | /proc/* | /dev | /dev/* | /sys | /sys/* | /run) continue ;; esac
    writable_dataset "$target" && continue
    found="$found $target"
  done </proc/self/mountinfo
  if [ -z "$found" ]; then
    pass "root: the host's root is read-only inside, all the way down"
  else
    fail "root: expected the host's root read-only inside, found read-write:$found"
  fi
}

inside() {
  inside_root
  inside_env
  [ "$vendor" = nvidia ] && inside_gpus_nvidia
  inside_devices
  inside_datasets
  [ "$failures" -eq 0 ] || exit 1
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) rm -f "$STATE" ;;
  inside) inside ;;
  *) die "usage: validate-worker.sh ensure|check|remove|inside [options]" ;;
esac
