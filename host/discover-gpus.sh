#!/usr/bin/env bash
# Collects the raw output of every GPU fact source this host has into one JSON document
# on stdout (schema gpu-workers/discovery/v1). It interprets nothing: the TypeScript
# parser (components/discovery/) does that, where it can be tested on captured output.
#
# Runs on the host with bash, coreutils and awk only (no jq, python or node). It reads and
# never writes, apart from a private temporary folder it removes on exit.
#   GPU_WORKERS_ROOT=/some/tree   read /proc, /sys, /dev and /etc under that prefix (tests)
#   GPU_WORKERS_TOOL_TIMEOUT=60   seconds a vendor tool may take (a lost GPU can hang it)
# Tools (nvidia-smi, lspci, amd-smi, rocm-smi, xpu-smi) are taken from PATH.
set -u

ROOT=${GPU_WORKERS_ROOT:-}
TOOL_TIMEOUT=${GPU_WORKERS_TOOL_TIMEOUT:-60}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpu-discovery.XXXXXX") || { echo "discover-gpus: cannot create a temporary folder" >&2; exit 1; }
trap 'rm -rf "$TMP"' EXIT
: > "$TMP/sources"
: > "$TMP/errors"

# stdin -> one JSON string literal. Every byte below 0x20 is escaped, quotes and
# backslashes too; NUL bytes (sysfs strings end with one) are dropped; other bytes pass
# through, so UTF-8 text stays UTF-8. A final newline is not kept.
json_string() {
  tr -d '\000' | LC_ALL=C awk '
    BEGIN {
      for (i = 1; i < 32; i++) esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
      esc["\t"] = "\\t"; esc["\r"] = "\\r"; esc["\b"] = "\\b"; esc["\f"] = "\\f"
      esc["\\"] = "\\\\"; esc["\""] = "\\\""
      printf "\""
    }
    {
      if (NR > 1) printf "\\n"
      n = length($0); out = ""
      for (i = 1; i <= n; i++) {
        c = substr($0, i, 1)
        out = out ((c in esc) ? esc[c] : c)
      }
      printf "%s", out
    }
    END { printf "\"" }'
}

# json_string of a literal word. Words of printable characters but quotes and backslashes (keys,
# sysfs ids) need no escapes: those are written without the two processes json_string costs.
json_word() {
  case $1 in
    *[![:print:]]* | *[\"\\]*) printf '%s' "$1" | json_string ;;
    *) printf '"%s"' "$1" ;;
  esac
}

# JSON array of string literals from the arguments.
json_array() {
  local sep="" word
  printf '['
  for word in "$@"; do printf '%s' "$sep"; json_word "$word"; sep=","; done
  printf ']'
}

# add_member FILE KEY VALUE_JSON: appends "key": value to an object body kept in FILE.
add_member() {
  [ -s "$1" ] && printf ',' >> "$1"
  { json_word "$2"; printf ':%s' "$3"; } >> "$1"
}
add_source() { add_member "$TMP/sources" "$1" "$2"; }

# run_tool KEY COMMAND ARGS...: stdout becomes sources[KEY] on success. On failure
# errors[KEY] records the exit status and everything it printed (nvidia-smi prints its
# errors on stdout, and a partial table can come with a failure).
run_tool() {
  local key=$1 rc; shift
  if command -v timeout > /dev/null 2>&1; then
    timeout "$TOOL_TIMEOUT" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null; rc=$?
  else
    "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null; rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    add_source "$key" "$(json_string < "$TMP/out")"
  else
    add_member "$TMP/errors" "$key" "{\"exit\":$rc,\"output\":$(cat "$TMP/out" "$TMP/err" | json_string)}"
  fi
  return "$rc"
}

# add_file KEY PATH: the file's text, when it is readable.
add_file() {
  [ -r "$2" ] && [ -f "$2" ] && add_source "$1" "$(json_string < "$2")"
  return 0
}

have() { command -v "$1" > /dev/null 2>&1; }

# pci_ids DEV: the PCI function DEV's vendor, device and class from sysfs (one line each), each
# empty where it cannot be read. Read by the shell itself: a host has dozens of PCI functions,
# and a process each costs.
pci_ids() {
  vendor=""; device=""; class=""
  IFS= read -r vendor 2> /dev/null < "$1/vendor"
  IFS= read -r device 2> /dev/null < "$1/device"
  IFS= read -r class 2> /dev/null < "$1/class"
}

# --- NVIDIA ---------------------------------------------------------------------------
if have nvidia-smi; then
  query_ok=no
  run_tool nvidia-smi-query nvidia-smi \
    --query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version,mig.mode.current \
    --format=csv,noheader,nounits && query_ok=yes
  # MIG instances are listed only when a GPU runs in MIG mode.
  mig_on=$(awk -F', *' '$NF == "Enabled" { print "yes"; exit }' "$TMP/out" 2> /dev/null)
  # Compute capabilities on their own: drivers older than the compute_cap field fail this
  # query, and that must not cost the table above.
  if [ "$query_ok" = yes ]; then
    run_tool nvidia-smi-compute-cap nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader
  fi
  run_tool nvidia-smi-L nvidia-smi -L
  # The summary table: driver and CUDA versions in its header, GI/CI ids of MIG devices.
  run_tool nvidia-smi nvidia-smi
  if [ "${mig_on:-}" = yes ]; then
    run_tool nvidia-smi-mig-lgi nvidia-smi mig -lgi
    run_tool nvidia-smi-mig-lci nvidia-smi mig -lci
  fi
  # Module ids (fabric partitions name GPUs by them) only matter where NVSwitches are: the
  # driver's list, or NVIDIA bridge functions (class 0x0680) on PCI when they are bound to
  # vfio-pci for a service VM.
  has_switches=no
  for entry in "$ROOT"/proc/driver/nvidia-nvswitch/devices/*; do
    [ -e "$entry" ] && has_switches=yes
  done
  for dev in "$ROOT"/sys/bus/pci/devices/*; do
    { [ -r "$dev/vendor" ] && [ -r "$dev/class" ]; } || continue
    pci_ids "$dev"
    if [ "$vendor" = 0x10de ]; then
      case "$class" in 0x0680*) has_switches=yes ;; esac
    fi
  done
  if [ "$has_switches" = yes ]; then
    run_tool nvidia-smi-q nvidia-smi -q
  fi
fi
add_file driver-version "$ROOT/proc/driver/nvidia/version"
if [ -d "$ROOT/proc/driver/nvidia-nvswitch/devices" ]; then
  switches=()
  for entry in "$ROOT"/proc/driver/nvidia-nvswitch/devices/*; do
    [ -e "$entry" ] && switches+=("${entry##*/}")
  done
  add_source nvswitch-devices "$(json_array "${switches[@]+"${switches[@]}"}")"
fi
add_file tegra "$ROOT/etc/nv_tegra_release"
add_file device-tree-model "$ROOT/proc/device-tree/model"

# --- PCI (works before any driver is installed) ------------------------------------------
if have lspci; then
  run_tool lspci lspci -Dnn
fi
# The same facts from sysfs, for hosts without pciutils: only NVIDIA and AMD functions.
if [ -d "$ROOT/sys/bus/pci/devices" ]; then
  : > "$TMP/pci"
  for dev in "$ROOT"/sys/bus/pci/devices/*; do
    [ -r "$dev/vendor" ] || continue
    pci_ids "$dev"
    case "$vendor" in 0x10de|0x1002) ;; *) continue ;; esac
    add_member "$TMP/pci" "${dev##*/}" "$(json_array "$vendor" "$device" "$class")"
  done
  add_source pci-devices "{$(cat "$TMP/pci")}"
fi

# --- AMD ------------------------------------------------------------------------------
nodes_dir="$ROOT/sys/class/kfd/kfd/topology/nodes"
if [ -d "$nodes_dir" ]; then
  : > "$TMP/kfd"
  # Numeric order: node 10 comes after node 9.
  for node in $(for n in "$nodes_dir"/*; do [ -d "$n" ] && echo "${n##*/}"; done | sort -n); do
    dir="$nodes_dir/$node"
    item="\"node\":$(json_word "$node")"
    [ -r "$dir/properties" ] && item="$item,\"properties\":$(json_string < "$dir/properties")"
    [ -r "$dir/name" ] && item="$item,\"name\":$(json_string < "$dir/name")"
    banks=""
    for bank in "$dir"/mem_banks/*/properties; do
      [ -r "$bank" ] || continue
      banks="$banks${banks:+,}$(json_string < "$bank")"
    done
    item="$item,\"mem-banks\":[$banks]"
    [ -s "$TMP/kfd" ] && printf ',' >> "$TMP/kfd"
    printf '{%s}' "$item" >> "$TMP/kfd"
  done
  add_source kfd-nodes "[$(cat "$TMP/kfd")]"
fi
add_file rocm-version "$ROOT/opt/rocm/.info/version"
if [ -e "$ROOT/dev/kfd" ]; then add_source dev-kfd true; else add_source dev-kfd false; fi
if [ -d "$ROOT/dev/dri" ]; then
  renders=()
  for entry in "$ROOT"/dev/dri/renderD*; do
    [ -e "$entry" ] && renders+=("${entry##*/}")
  done
  add_source render-nodes "$(json_array "${renders[@]+"${renders[@]}"}")"
fi
if have amd-smi; then
  run_tool amd-smi amd-smi static --asic --bus --vram
fi
if have rocm-smi; then
  run_tool rocm-smi rocm-smi --showproductname --showbus --showmeminfo vram
fi

# --- Intel ----------------------------------------------------------------------------
# Each DRM card of an Intel display or 3D controller (vendor 0x8086, class 0x0300xx or
# 0x0380xx), as Intel's device plugin finds them: its PCI address, device id and driver, and
# its render node, from sysfs alone.
: > "$TMP/intel"
for card in "$ROOT"/sys/class/drm/card*; do
  name=${card##*/}
  case "$name" in card[0-9]*) ;; *) continue ;; esac
  case "$name" in *-*) continue ;; esac # connectors (card0-HDMI-A-1) are not cards
  [ -r "$card/device/vendor" ] || continue
  pci_ids "$card/device"
  [ "$vendor" = 0x8086 ] || continue
  case "$class" in 0x0300*|0x0380*) ;; *) continue ;; esac
  address=$(basename "$(readlink -f "$card/device")")
  driver=""
  [ -L "$card/device/driver" ] && driver=$(basename "$(readlink "$card/device/driver")")
  render=""
  for node in "$card"/device/drm/renderD*; do
    [ -e "$node" ] && render=${node##*/}
  done
  item="\"card\":$(json_word "$name"),\"pci\":$(json_word "$address"),\"device\":$(json_word "$device"),\"class\":$(json_word "$class"),\"driver\":$(json_word "$driver"),\"render\":$(json_word "$render")"
  [ -s "$TMP/intel" ] && printf ',' >> "$TMP/intel"
  printf '{%s}' "$item" >> "$TMP/intel"
done
[ -s "$TMP/intel" ] && add_source intel-drm "[$(cat "$TMP/intel")]"
if have xpu-smi; then
  # Device ID, PCI BDF Address, UUID, Memory Physical Size: gpu-metrics.sh asks the same.
  run_tool xpu-smi-discovery xpu-smi discovery --dump 1,11,4,16
fi

# --- host -----------------------------------------------------------------------------
if [ -r "$ROOT/proc/meminfo" ]; then
  add_source meminfo "$(awk '$1 == "MemTotal:"' "$ROOT/proc/meminfo" | json_string)"
fi

printf '{"schema":"gpu-workers/discovery/v1","sources":{%s},"errors":{%s}}\n' "$(cat "$TMP/sources")" "$(cat "$TMP/errors")"
