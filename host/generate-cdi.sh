#!/usr/bin/env bash
# Keeps the vendor's CDI spec current and checks the worker's GPUs are in it.
#   generate-cdi.sh ensure --vendor nvidia|amd --output FILE --checker CDI-CHECK [--tegra] --driver-pin preinstalled|X.Y.Z -- CDI-ID...
#   generate-cdi.sh check  --vendor nvidia|amd --output FILE --checker CDI-CHECK [--tegra] [--driver-pin PIN] [-- CDI-ID...]
#   generate-cdi.sh remove --vendor nvidia|amd --output FILE
#
# ensure: (re)generates FILE with the vendor's tool when it is missing, when it changed since
# it was generated, or when the driver or the GPU layout (MIG devices included) changed; it
# leaves it alone otherwise. A spec the tool wrote is judged by CDI-CHECK (cdi-check/: the CDI
# project's own library, the one runtimes read specs with) before it replaces FILE: a spec the
# library refuses fails the update naming every problem, and FILE stays as it was. The spec
# in place is judged again on every run, and generated again when refused. Then every CDI id
# given (nvidia.com/gpu=0, nvidia.com/gpu=0:1, amd.com/gpu=1) must resolve, or it fails naming
# the missing ones. Last, it prints the spec after the line "generate-cdi: the spec runtimes
# read:", for the program to record its kind and devices.
# check: changes nothing; exits 0 while FILE is what ensure would leave, else says why (a
# refresh runs it, so a driver upgraded by hand or a MIG change is noticed).
#   NVIDIA: nvidia-ctk cdi generate --device-name-strategy=index (Tegra: --mode=csv --class=igpu),
#           ids checked with `nvidia-ctk cdi list` (what runtimes see, /var/run/cdi included).
#   AMD:    amd-ctk cdi generate; ids checked against FILE (amd-ctk's list shows hardware, not specs).
# What it generated, and for which driver, is recorded in STATE_DIR. A spec that was at FILE
# before the first one it generated is kept aside (ownership.sh), and remove puts it back byte
# for byte; remove deletes only a spec it generated, and leaves any other alone.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
ROOT=${GPU_WORKERS_ROOT:-}
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "generate-cdi: $*" >&2; exit 1; }
usage() { die "usage: generate-cdi.sh ensure|check|remove --vendor nvidia|amd --output FILE [--checker CDI-CHECK] [--tegra] [--driver-pin PIN] [-- CDI-ID...]"; }

action=${1:-}; shift || true
case "$action" in ensure|check|remove) ;; *) usage ;; esac
vendor=""; output=""; checker=""; tegra=no; pin=preinstalled
while [ $# -gt 0 ]; do
  case "$1" in
    --vendor) [ $# -ge 2 ] || usage; vendor=$2; shift 2 ;;
    --output) [ $# -ge 2 ] || usage; output=$2; shift 2 ;;
    --checker) [ $# -ge 2 ] || usage; checker=$2; shift 2 ;;
    --tegra) tegra=yes; shift ;;
    --driver-pin) [ $# -ge 2 ] || usage; pin=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown argument: $1" ;;
  esac
done
ids=("$@")
case "$vendor" in
  nvidia) tool=nvidia-ctk; kind_prefix=nvidia.com/ ;;
  amd) tool=amd-ctk; kind_prefix=amd.com/ ;;
  *) die "--vendor must be nvidia or amd (got '${vendor}')" ;;
esac
case "$output" in
  /*.yaml|/*.json) ;;
  *) die "--output must be an absolute path ending in .yaml or .json (got '${output}')" ;;
esac
if [ "$action" != remove ] && [ ! -x "$checker" ]; then
  die "--checker must name the cdi-check executable the program uploads (got '${checker}')"
fi
state="$STATE_DIR/cdi-$vendor.state"

# The loaded NVIDIA driver's version, from nvidia-smi, else from the kernel module.
nvidia_driver() {
  local v=""
  if command -v nvidia-smi > /dev/null 2>&1; then
    v=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2> /dev/null | head -n 1 | tr -d ' ') || v=""
  fi
  if [ -z "$v" ] && [ -r "$ROOT/proc/driver/nvidia/version" ]; then
    # "... x86_64 Kernel Module  550.54.15 ..." or "... Open Kernel Module for x86_64  560.35.03 ..."
    v=$(sed -nE 's/.*Kernel Module( for [^ ]+)? +([0-9]+\.[0-9.]+).*/\2/p' "$ROOT/proc/driver/nvidia/version" | head -n 1)
  fi
  echo "$v"
}

# Everything the spec depends on; a change means the spec must be generated again.
fingerprint() {
  if [ "$vendor" = nvidia ]; then
    echo "driver=$(nvidia_driver)"
    echo "tegra=$tegra"
    [ "$tegra" = yes ] && [ -r "$ROOT/etc/nv_tegra_release" ] && head -n 1 "$ROOT/etc/nv_tegra_release"
    # GPUs and MIG devices (their UUIDs change when MIG is reconfigured).
    if command -v nvidia-smi > /dev/null 2>&1; then nvidia-smi -L 2> /dev/null || true; fi
  else
    if [ -r "$ROOT/sys/module/amdgpu/version" ]; then
      echo "amdgpu=$(cat "$ROOT/sys/module/amdgpu/version")"
    else
      echo "kernel=$(uname -r)" # amdgpu built into the kernel
    fi
    for node in "$ROOT"/dev/dri/renderD* "$ROOT"/dev/kfd; do
      [ -e "$node" ] && echo "node=${node#"$ROOT"}"
    done
  fi
  return 0
}

checksum() { sha256sum "$1" | cut -d' ' -f1; }

# judge SPEC: the CDI library's verdict (cdi-check), its problems named as problems of $output.
judge() {
  local problems rc=0
  problems=$("$checker" --as "$output" "$1" 2>&1) || rc=$?
  [ "$rc" -ne 0 ] || return 0
  [ "$rc" -eq 1 ] || problems="cdi-check could not judge the spec (exit $rc): $problems"
  printf '%s\n' "$problems" | sed 's/^/  /' >&2
  return 1
}

recorded() { # recorded KEY: a value from the state file
  [ -r "$state" ] && sed -n "s/^$1=//p" "$state" | head -n 1
  return 0
}

# Major.minor[.patch] of the loaded driver starts with the pin's components.
driver_matches_pin() {
  case "$1" in "$2"|"$2".*) return 0 ;; *) return 1 ;; esac
}

generate() {
  local work file
  mkdir -p "$STATE_DIR" "$(dirname "$output")"
  # Generated beside the state, not in a CDI folder: runtimes would read a half-written spec.
  work=$(mktemp -d "$STATE_DIR/cdi-new.XXXXXX")
  file="$work/$(basename "$output")"
  if [ "$vendor" = nvidia ]; then
    local args=(cdi generate "--output=$file" --device-name-strategy=index)
    [ "$tegra" = yes ] && args+=(--mode=csv --class=igpu)
    "$tool" "${args[@]}" || { rm -rf "$work"; die "nvidia-ctk cdi generate failed (see above)"; }
  else
    "$tool" cdi generate "--output=$file" || { rm -rf "$work"; die "amd-ctk cdi generate failed (see above)"; }
  fi
  [ -s "$file" ] || { rm -rf "$work"; die "$tool wrote no spec to $file"; }
  if ! judge "$file"; then
    rm -rf "$work"
    die "the spec $tool wrote is one the CDI library refuses (problems above); $output is left as it was"
  fi
  chmod 0644 "$file"
  # A spec of the host's is kept aside before the first one of ours replaces it (a spec the
  # state records as ours, from an earlier version, is not).
  if [ "$(recorded output)" != "$output" ]; then bash "$HERE/ownership.sh" file-keep "$output"; fi
  mv -f "$file" "$output"
  rm -rf "$work"
}

# The CDI ids runtimes can resolve, one per line.
available_ids() {
  if [ "$vendor" = nvidia ]; then
    "$tool" cdi list 2> /dev/null | grep -E '^[A-Za-z0-9.-]+/[A-Za-z0-9._-]+=[^ ]+$' || true
  else
    # amd-ctk writes JSON: the kind, and the device names.
    local kind
    kind=$(grep -o '"kind"[[:space:]]*:[[:space:]]*"[^"]*"' "$output" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
    grep -o '"name"[[:space:]]*:[[:space:]]*"[^"]*"' "$output" | sed "s|.*\"\\([^\"]*\\)\"\$|$kind=\\1|"
  fi
}

check_ids() {
  local have missing=() id
  have=$(available_ids)
  for id in "${ids[@]+"${ids[@]}"}"; do
    case "$id" in "$kind_prefix"*=*) ;; *) die "'$id' is not a ${vendor} CDI id (expected ${kind_prefix}CLASS=NAME)" ;; esac
    grep -qxF -- "$id" <<< "$have" || missing+=("$id")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    die "not in the CDI spec $output: ${missing[*]} (runtimes can resolve: $(tr '\n' ' ' <<< "$have" | sed 's/ $//')); the selection names GPUs or MIG devices this host does not have"
  fi
  echo "generate-cdi: ${#ids[@]} selected device(s) resolve: ${ids[*]+"${ids[*]}"}"
}

current_fingerprint() { fingerprint | sha256sum | cut -d' ' -f1; }

# Why the spec must be generated again, or nothing when it is current.
stale_reason() {
  if [ ! -f "$output" ]; then echo "$output is missing"
  elif [ "$(recorded fingerprint)" != "$1" ]; then echo "the driver or GPU layout changed (or it was not generated by gpu-workers)"
  elif [ "$(recorded spec)" != "$(checksum "$output")" ]; then echo "$output was changed since it was generated"
  fi
}

check() {
  local reason
  reason=$(stale_reason "$(current_fingerprint)")
  [ -z "$reason" ] || die "the CDI spec is stale: $reason"
  judge "$output" || die "the CDI spec is stale: the CDI library refuses $output (problems above)"
  check_ids
}

ensure() {
  command -v "$tool" > /dev/null 2>&1 || die "$tool is not installed (the container toolkit step installs it)"
  if [ "$vendor" = nvidia ] && [ "$pin" != preinstalled ] && [ "$tegra" = no ]; then
    local loaded
    loaded=$(nvidia_driver)
    [ -n "$loaded" ] || die "no NVIDIA driver is loaded; the spec would describe no GPU (pinned ${pin})"
    driver_matches_pin "$loaded" "$pin" || die "the loaded NVIDIA driver is ${loaded} but ${pin} is pinned; a spec generated now would mount the wrong libraries (reboot after the driver update?)"
  fi
  local now reason
  now=$(current_fingerprint)
  reason=$(stale_reason "$now")
  # A spec in place that the library refuses (an earlier cdi-check let it through) is generated again.
  if [ -z "$reason" ] && ! judge "$output" 2> /dev/null; then reason="the CDI library refuses $output"; fi
  if [ -n "$reason" ]; then
    echo "generate-cdi: generating $output: $reason"
    generate
    mkdir -p "$STATE_DIR"
    printf 'output=%s\nfingerprint=%s\nspec=%s\ndriver=%s\n' "$output" "$now" "$(checksum "$output")" "$([ "$vendor" = nvidia ] && nvidia_driver)" > "$state.new"
    mv -f "$state.new" "$state"
  else
    echo "generate-cdi: $output is current"
  fi
  echo "generate-cdi: the CDI library accepts $output"
  check_ids
  # The program records the spec's kind and devices: print it after a marker line.
  echo "generate-cdi: the spec runtimes read:"
  cat "$output"
}

remove() {
  if [ "$(recorded output)" = "$output" ]; then
    # An earlier version kept no record: what is there is ours.
    bash "$HERE/ownership.sh" file-adopt "$output"
    bash "$HERE/ownership.sh" file-restore "$output"
    rm -f "$state"
    echo "generate-cdi: removed the spec it generated at $output"
  else
    echo "generate-cdi: $output was not generated by gpu-workers; left alone"
  fi
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  *) usage ;;
esac
