#!/usr/bin/env bash
# GPU metrics for the Prometheus node exporter's textfile collector (docs/gpu-metrics.md).
#   gpu-metrics.sh collect --vendor nvidia|amd|intel --gpus 0,1 [--bus-ids ADDR,ADDR] --textfile-dir DIR [--jobs-dir DIR] [--health-dir DIR]
#   gpu-metrics.sh ensure|check|remove --unit NAME --textfile-dir DIR
# collect (the unit's timer runs it) writes DIR/gpu_workers.prom atomically: per selected GPU its
# utilisation, memory, temperature and power from the vendor's tool (nvidia-smi; xpu-smi, each
# Intel GPU found by its PCI address, --bus-ids in the order of --gpus), the health watcher's Xid
# count, last Xid and health, each labelled with the GPU and with the build that holds it (the
# runc wrapper's records, one a container, in the jobs folder). ensure starts the timer and the
# node exporter; remove stops the timer, takes the file away and puts the exporter's service back
# as it was (ownership.sh; the packages step purges what it installed); check fails when the
# timer is not enabled.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
HERE=$(cd "$(dirname "$0")" && pwd)
# Whether the node exporter was enabled and running before ensure, so remove puts that back.
EXPORTER_BEFORE="$STATE_DIR/gpu-metrics-node-exporter.service-before"
OUT_NAME=gpu_workers.prom
NODE_EXPORTER=prometheus-node-exporter
NVIDIA_QUERY=index,pci.bus_id,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw
# xpu-smi discovery --dump properties: Device ID, PCI BDF Address, UUID, Memory Physical Size.
XPU_PROPERTIES=1,11,4,16
# xpu-smi dump metrics: GPU utilisation, GPU power, GPU core temperature, GPU memory used (MiB).
XPU_METRICS=0,1,3,18
# xpu-smi starts Level Zero at every call and dump samples for about a second: bound each call.
XPU_TIMEOUT=10

die() { echo "gpu-metrics: $*" >&2; exit 1; }

action=${1:-}; shift || true
vendor=""; gpus=""; bus_ids=""; textfile_dir=""; unit=""
jobs_dir=/run/gpu-workers/gpu-jobs; health_dir=/run/gpu-workers/health
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --vendor) vendor=$2 ;;
    --gpus) gpus=$2 ;;
    --bus-ids) bus_ids=$2 ;;
    --textfile-dir) textfile_dir=$2 ;;
    --jobs-dir) jobs_dir=$2 ;;
    --health-dir) health_dir=$2 ;;
    --unit) unit=$2 ;;
    *) die "unknown argument: $1" ;;
  esac
  shift 2
done
case "$textfile_dir" in
  /*) ;;
  *) die "--textfile-dir must be an absolute path (got '$textfile_dir')" ;;
esac

# A label value in the exposition format: backslash, double quote and newline escaped.
esc() {
  local v=${1//\\/\\\\}
  v=${v//\"/\\\"}
  printf '%s' "${v//$'\n'/\\n}"
}

number() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }

# MiB (xpu-smi gives two decimals) as whole bytes; anything else (N/A, blank) as it is, so add() drops it.
bytes_of_mib() {
  if number "$1"; then awk -v m="$1" 'BEGIN { printf "%.0f", m * 1048576 }'; else printf '%s' "$1"; fi
}

# Spaces and double quotes taken away: xpu-smi pads its CSV values and quotes its strings.
bare() { local v=${1//\"/}; printf '%s' "${v// /}"; }

# One value of a row kept in a space-separated list: "-" stands for a blank, which read would drop.
cell() { local v; v=$(bare "$1"); printf '%s' "${v:--}"; }

# The build labels of each container holding GPU $1, one label list a line ("" when none).
holders() {
  local dir="$jobs_dir/$1" record key value labels line any=0
  if [ -d "$dir" ]; then
    for record in "$dir"/*; do
      [ -f "$record" ] || continue
      local -A seen=()
      while IFS= read -r line; do
        key=${line%%=*}
        [ -n "${seen[$key]+set}" ] || seen[$key]=${line#*=}
      done <"$record"
      labels=""
      for key in container team pipeline job build build_id; do
        value=${seen[$key]:-}
        labels+=",$key=\"$(esc "$value")\""
      done
      unset seen
      printf '%s\n' "$labels"; any=1
    done
  fi
  [ "$any" = 1 ] || printf '%s\n' ',container="",team="",pipeline="",job="",build="",build_id=""'
}

declare -A bus uuid held
samples=()
# One sample per container holding the GPU: metric, GPU index, value.
add() {
  local holder
  number "$3" || return 0
  while IFS= read -r holder; do
    samples+=("$1{gpu=\"$2\",bus_id=\"$(esc "${bus[$2]:-}")\",uuid=\"$(esc "${uuid[$2]:-}")\"$holder} $3")
  done <<<"${held[$2]}"
}

# nvidia-smi's answer, one line a GPU, into bus, uuid and row.
nvidia_rows() {
  local line idx b u util mused mtotal temp power
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    IFS=, read -r idx b u util mused mtotal temp power <<<"$line"
    idx=${idx// /}
    [ -n "${selected[$idx]:-}" ] || continue
    bus[$idx]=${b// /}; uuid[$idx]=${u// /}
    row[$idx]="$(cell "$util") $(bytes_of_mib "$(cell "$mused")") $(bytes_of_mib "$(cell "$mtotal")") $(cell "$temp") $(cell "$power")"
  done <<<"$1"
}

# xpu-smi: discovery ties each PCI address to xpu-smi's device id (and gives the UUID and the
# memory in all), then one dump of the selected devices gives the rest. Succeeds only when both
# answered in the layout asked for (xpu-smi prints some errors on stdout and exits 0).
intel_rows() {
  local found sample header id b u total util power temp mused i
  found=$(timeout "$XPU_TIMEOUT" xpu-smi discovery --dump "$XPU_PROPERTIES" 2>/dev/null) || return 1
  IFS= read -r header <<<"$found"
  [[ $header =~ ^Device\ ID,[^,]+,[^,]+,[^,]+$ ]] || return 1
  local -A by_bus=() total_of=() uuid_of=()
  while IFS=, read -r id b u total; do
    id=$(bare "$id"); b=$(bare "$b")
    [[ $id =~ ^[0-9]+$ ]] || continue
    by_bus[${b,,}]=$id; uuid_of[$id]=$(bare "$u")
    total=${total//\"/}; total_of[$id]=${total% MiB}
  done < <(tail -n +2 <<<"$found")
  local -A index_of=()
  local ids=""
  for i in "${list[@]}"; do
    id=${by_bus[${bus[$i]}]:-}
    [ -n "$id" ] || continue
    index_of[$id]=$i; uuid[$i]=${uuid_of[$id]}
    ids+=${ids:+,}$id
  done
  [ -n "$ids" ] || return 1
  sample=$(timeout "$XPU_TIMEOUT" xpu-smi dump -d "$ids" -m "$XPU_METRICS" -n 1 2>/dev/null) || return 1
  IFS= read -r header <<<"$sample"
  [[ $header =~ ^Timestamp,\ DeviceId(,[^,]+){4}$ ]] || return 1
  while IFS=, read -r _ id util power temp mused; do
    id=$(bare "$id")
    i=${index_of[$id]:-}
    [ -n "$i" ] || continue
    row[$i]="$(cell "$util") $(bytes_of_mib "$(cell "$mused")") $(bytes_of_mib "$(cell "${total_of[$id]}")") $(cell "$temp") $(cell "$power")"
  done < <(tail -n +2 <<<"$sample")
}

collect() {
  [[ $gpus =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--gpus: expected indices such as 0,1 (got '$gpus')"
  case "$vendor" in nvidia|amd|intel) ;; *) die "--vendor: expected nvidia, amd or intel (got '$vendor')" ;; esac
  local -A selected=()
  local i idx util mused mtotal temp power tool_ok=0 line
  IFS=, read -ra list <<<"$gpus"
  if [ "$vendor" = intel ]; then
    local address
    IFS=, read -ra addresses <<<"$bus_ids"
    [ "${#addresses[@]}" = "${#list[@]}" ] || die "--bus-ids: expected one PCI address for each of --gpus $gpus (got '$bus_ids')"
    for i in "${!list[@]}"; do
      address=${addresses[$i],,}
      [[ $address =~ ^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] || die "--bus-ids: expected a PCI address such as 0000:4d:00.0 (got '$address')"
      bus[${list[$i]}]=$address
    done
  fi
  for i in "${list[@]}"; do selected[$i]=1; done
  declare -A row=()
  local query=""
  case "$vendor" in
    nvidia)
      if query=$(nvidia-smi --query-gpu="$NVIDIA_QUERY" --format=csv,noheader,nounits 2>/dev/null); then
        tool_ok=1
        nvidia_rows "$query"
      fi
      ;;
    intel) intel_rows && tool_ok=1 ;;
  esac
  # The health watcher's state (its contract: docs/gpu-metrics.md); absent, no health metrics.
  declare -A healthy=() xids=() last=()
  local hb hh hx hl
  if [ -f "$health_dir/gpus.tsv" ]; then
    while IFS= read -r line; do
      # Tabs made another separator first: read would merge the empty fields between tabs.
      IFS=$'\x1f' read -r idx hb hh hx hl _ <<<"${line//$'\t'/$'\x1f'}"
      [ -n "${selected[$idx]:-}" ] || continue
      [ -n "${bus[$idx]:-}" ] || bus[$idx]=$hb
      healthy[$idx]=$hh; xids[$idx]=$hx; last[$idx]=$hl
    done <"$health_dir/gpus.tsv"
  fi
  for i in "${list[@]}"; do
    held[$i]=$(holders "$i")
    if [ -n "${row[$i]:-}" ]; then
      read -r util mused mtotal temp power <<<"${row[$i]}"
      add gpu_workers_gpu_utilization_percent "$i" "$util"
      add gpu_workers_gpu_memory_used_bytes "$i" "$mused"
      add gpu_workers_gpu_memory_total_bytes "$i" "$mtotal"
      add gpu_workers_gpu_temperature_celsius "$i" "$temp"
      add gpu_workers_gpu_power_watts "$i" "$power"
    fi
    if [ -n "${healthy[$i]:-}" ]; then
      add gpu_workers_gpu_healthy "$i" "${healthy[$i]}"
      add gpu_workers_gpu_xid_count "$i" "${xids[$i]}"
      add gpu_workers_gpu_last_xid "$i" "${last[$i]}"
    fi
  done
  {
    section gpu_workers_gpu_utilization_percent "GPU utilisation over the last sample period, percent (nvidia-smi utilization.gpu, xpu-smi dump metric 0)."
    section gpu_workers_gpu_memory_used_bytes "GPU memory in use, bytes."
    section gpu_workers_gpu_memory_total_bytes "GPU memory in all, bytes."
    section gpu_workers_gpu_temperature_celsius "GPU core temperature, degrees Celsius."
    section gpu_workers_gpu_power_watts "GPU board power draw, watts."
    section gpu_workers_gpu_healthy "1 when the health watcher finds the GPU healthy, else 0."
    section gpu_workers_gpu_xid_count "Fatal Xid events the health watcher saw on the GPU since it started."
    section gpu_workers_gpu_last_xid "The last Xid the health watcher saw on the GPU."
    if [ "$vendor" != amd ]; then
      echo "# HELP gpu_workers_tool_success 1 when the vendor's tool (nvidia-smi, xpu-smi) answered, else 0."
      echo "# TYPE gpu_workers_tool_success gauge"
      echo "gpu_workers_tool_success{vendor=\"$vendor\"} $tool_ok"
    fi
    worker_status
  } >"$tmp"
}

# HELP and TYPE, then the metric's samples (nothing when it has none).
section() {
  local s found=0
  for s in "${samples[@]}"; do
    [[ $s == "$1{"* ]] || continue
    if [ "$found" = 0 ]; then echo "# HELP $1 $2"; echo "# TYPE $1 gauge"; found=1; fi
    echo "$s"
  done
}

# The watcher's one-word status as one sample per status, 1 for the present one.
worker_status() {
  local status s statuses=" healthy degraded landed retired unhealthy "
  [ -f "$health_dir/status" ] || return 0
  status=$(head -n1 "$health_dir/status")
  [[ $statuses == *" $status "* ]] || return 0
  echo "# HELP gpu_workers_worker_health The health watcher's status of the worker: 1 for the present one."
  echo "# TYPE gpu_workers_worker_health gauge"
  for s in $statuses; do
    echo "gpu_workers_worker_health{status=\"$s\"} $([ "$s" = "$status" ] && echo 1 || echo 0)"
  done
}

timer() {
  [[ $unit =~ ^[a-z0-9][a-z0-9_.-]*$ ]] || die "--unit: expected a unit name such as gpu-workers-metrics (got '$unit')"
  echo "$unit.timer"
}

case "$action" in
  collect)
    mkdir -p "$textfile_dir"
    tmp=$(mktemp "$textfile_dir/.$OUT_NAME.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    collect
    chmod 0644 "$tmp"
    mv -f "$tmp" "$textfile_dir/$OUT_NAME"
    trap - EXIT
    ;;
  ensure)
    t=$(timer)
    mkdir -p "$textfile_dir"
    systemctl daemon-reload
    systemctl enable --now "$t" >/dev/null 2>&1 || die "could not start $t"
    mkdir -p "$STATE_DIR"
    bash "$HERE/ownership.sh" service-keep "$EXPORTER_BEFORE" "$NODE_EXPORTER"
    systemctl enable --now "$NODE_EXPORTER" >/dev/null 2>&1 || die "could not start $NODE_EXPORTER"
    ;;
  check)
    t=$(timer)
    systemctl is-enabled --quiet "$t" || die "$t is not enabled"
    ;;
  remove)
    t=$(timer)
    systemctl disable --now "$t" >/dev/null 2>&1 || true
    rm -f "$textfile_dir/$OUT_NAME"
    bash "$HERE/ownership.sh" service-restore "$EXPORTER_BEFORE" "$NODE_EXPORTER"
    ;;
  *) die "usage: gpu-metrics.sh collect|ensure|check|remove ..." ;;
esac
