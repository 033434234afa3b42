#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU, for a machine that has one (run as root there, from
# the repository, after `npm run build`):
#   scripts/gpu-machine-check.sh --runc PATH --out DIR
#
# 1. Discovery: every source host/discover-gpus.sh reads, captured as a fixture
#    (DIR/fixture/tools/*.txt, DIR/fixture/root/...), and the script's own JSON document;
#    then host/gpu-metrics.sh with the real nvidia-smi: GPU 0's metrics carry its real numbers
#    (DIR/gpu_workers.prom).
# 2. The runc wrapper (dist/wrapper/runc-wrapper, the production build: its settings file and
#    real runc are at their fixed paths, which this script fills and puts back) in front of the
#    given runc, with the host's root read-only as each container's root, so the host's
#    nvidia-smi and CUDA libraries are there but no device node is:
#      - the GPU selected (its nodes in deviceNodes): nvidia-smi -L lists it, and a CUDA program
#        built on the host (when nvcc is there) runs a kernel and checks its result;
#      - not selected: nvidia-smi finds no GPU, also after mknod of the nodes inside the
#        container (the device cgroup refuses to open them);
#      - NVIDIA_VISIBLE_DEVICES=all asked by the container is replaced by the selection;
#      - a spec with CAP_SYS_ADMIN is refused, naming allowPrivileged;
#      - datasets: read-only unless the folder's name says otherwise.
# 3. The GPU health watcher (host/gpu-health-watch.sh, with the config the chain renders for
#    every GPU nvidia-smi lists, policy none): it polls the real GPUs and reports each healthy,
#    and its compute-apps query is captured for the fixtures.
# 5. GPUs handed out per task, mode timeSlice with replicas 2 over GPU 0 (the wrapper's
#    allocation block): two containers at once, each asking GPU_WORKERS_GPUS=1, both hold GPU 0
#    and both run the CUDA program (nvidia-smi -L without nvcc) while the other runs; a third
#    asking meanwhile is refused naming the two holders.
# Every check prints "ok" or "FAIL" with what was expected and what was found; the exit status
# is the number of failures. Nothing outside DIR and a temporary folder is left changed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WRAPPER="$HERE/dist/wrapper/runc-wrapper"
SETTINGS=/etc/gpu-workers/runc-wrapper.json
RUNC_REAL=/usr/local/lib/gpu-workers/runc.real

die() { echo "gpu-machine-check: $*" >&2; exit 100; }

runc=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runc) runc=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
if [ -z "$runc" ] || [ ! -x "$runc" ]; then die "--runc PATH: an executable runc is required"; fi
[ -n "$out" ] || die "--out DIR is required"
[ "$(id -u)" -eq 0 ] || die "run as root"
[ -x "$WRAPPER" ] || die "$WRAPPER is missing: npm run build"
command -v nvidia-smi >/dev/null || die "nvidia-smi is not on PATH"
mkdir -p "$out"

failures=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- 1. discovery fixture --------------------------------------------------------------------
capture_fixture() {
  local fx="$out/fixture"
  mkdir -p "$fx/tools" "$fx/root/proc/driver/nvidia"
  nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,driver_version,mig.mode.current --format=csv,noheader,nounits >"$fx/tools/nvidia-smi-query.txt"
  nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader >"$fx/tools/nvidia-smi-compute-cap.txt"
  nvidia-smi -L >"$fx/tools/nvidia-smi-L.txt"
  nvidia-smi >"$fx/tools/nvidia-smi.txt"
  nvidia-smi -q >"$fx/tools/nvidia-smi-q.txt"
  # host/gpu-metrics.sh's query: the fixtures' nvidia-smi-metrics.txt
  nvidia-smi --query-gpu=index,pci.bus_id,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw --format=csv,noheader,nounits >"$fx/tools/nvidia-smi-metrics.txt"
  # host/gpu-health-watch.sh's two polls (test/fixtures/gpu-health/source.md derives them from -q)
  nvidia-smi --query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits >"$fx/tools/nvidia-smi-health.txt"
  nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.failure --format=csv,noheader >"$fx/tools/nvidia-smi-remapped-rows.txt" 2>&1 || true
  cp /proc/driver/nvidia/version "$fx/root/proc/driver/nvidia/version"
  local dev
  for dev in /sys/bus/pci/devices/*; do
    [ "$(cat "$dev/vendor" 2>/dev/null)" = 0x10de ] || continue
    mkdir -p "$fx/root$dev"
    for f in vendor device class subsystem_vendor subsystem_device numa_node; do
      [ -r "$dev/$f" ] && cat "$dev/$f" >"$fx/root$dev/$f"
    done
  done
  ls -l /dev/nvidia* >"$fx/dev-nodes.txt" 2>&1
  if bash "$HERE/host/discover-gpus.sh" >"$out/discovery.json" 2>"$out/discovery.err"; then
    ok "discover-gpus.sh wrote its document"
  else
    fail "discover-gpus.sh failed: $(head -c 300 "$out/discovery.err")"
  fi
}

# --- 2. the wrapper ----------------------------------------------------------------------------
# Not under /tmp: each container gets a /tmp of its own, and the CUDA program must be seen.
work=$(mktemp -d /var/lib/gpu-machine-check.XXXXXX)
chmod 0755 "$work"
saved_settings=""; saved_runc=""
HOLDS=/run/gpu-workers/gpu-holds
holds_were_there=""; [ -e "$HOLDS" ] && holds_were_there=yes
# shellcheck disable=SC2317 # run by the EXIT trap
restore() {
  umount -R "$work/rootfs" 2>/dev/null
  if [ -n "$saved_settings" ]; then mv -f "$saved_settings" "$SETTINGS"; else rm -f "$SETTINGS"; fi
  if [ -n "$saved_runc" ]; then mv -f "$saved_runc" "$RUNC_REAL"; else rm -f "$RUNC_REAL"; fi
  rm -rf "$work"
  rmdir "$(dirname "$SETTINGS")" "$(dirname "$RUNC_REAL")" 2>/dev/null || true
  if [ -z "$holds_were_there" ]; then rm -rf "$HOLDS"; rmdir "$(dirname "$HOLDS")" 2>/dev/null || true; fi
}
trap restore EXIT

install_wrapper() {
  mkdir -p "$(dirname "$SETTINGS")" "$(dirname "$RUNC_REAL")"
  if [ -e "$SETTINGS" ]; then saved_settings="$work/settings.saved"; cp -p "$SETTINGS" "$saved_settings"; fi
  if [ -e "$RUNC_REAL" ]; then saved_runc="$work/runc.saved"; cp -p "$RUNC_REAL" "$saved_runc"; fi
  install -m 0755 "$runc" "$RUNC_REAL"
  install -m 0755 "$WRAPPER" "$work/runc"
  mkdir -p "$work/srv/models" "$work/srv/scratch_rw"
  echo "weights" >"$work/srv/models/weights.txt"
  chmod 0755 "$work/srv"
  # runc cannot pivot into "/" itself: the host's root, bound elsewhere, is the containers' root.
  mkdir "$work/rootfs"
  mount --rbind / "$work/rootfs" || die "cannot bind the host's root at $work/rootfs"
  mount --make-rslave "$work/rootfs" || die "cannot make $work/rootfs a slave mount"
}

# settings DEVICE_NODES_JSON: the settings file the wrapper reads.
settings() {
  cat >"$SETTINGS" <<EOF
{"realRuntime": "$RUNC_REAL", "datasetRoot": "$work/srv", "writableSuffixes": ["_rw"],
 "env": {"NVIDIA_VISIBLE_DEVICES": "0", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
 "unsetEnv": [], "deviceNodes": $1, "log": "$work/wrapper.log", "allowPrivileged": false}
EOF
  chmod 0644 "$SETTINGS"
}

# bundle NAME CAPS_JSON SCRIPT [ENV_JSON_ITEMS]: a bundle whose root is the host's own, read-only.
bundle() {
  local dir="$work/$1" caps=$2 script=$3 env=${4:-}
  mkdir -p "$dir"
  cat >"$dir/config.json" <<EOF
{"ociVersion": "1.0.2",
 "process": {"terminal": false, "user": {"uid": 0, "gid": 0}, "cwd": "/",
   "args": ["/bin/sh", "-c", $(printf '%s' "$script" | jq -Rs .)],
   "env": ["PATH=$PATH", "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"${env:+, $env}],
   "capabilities": {"bounding": $caps, "effective": $caps, "permitted": $caps},
   "noNewPrivileges": true},
 "root": {"path": "$work/rootfs", "readonly": true},
 "hostname": "gpu-check",
 "mounts": [
   {"destination": "/proc", "type": "proc", "source": "proc"},
   {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
   {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
   {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
   {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]}],
 "linux": {"namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"}],
   "resources": {"devices": [{"allow": false, "access": "rwm"}]}}}
EOF
  echo "$dir"
}

# run NAME CAPS SCRIPT [ENV]: the container's output; its exit status is the container's.
run() {
  local dir
  dir=$(bundle "$@")
  (cd "$dir" && "$work/runc" --root "$work/state" run --bundle "$dir" "gpu-check-$1") 2>&1
}

BASE_CAPS='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FOWNER","CAP_MKNOD","CAP_SETUID","CAP_SETGID","CAP_KILL"]'
NODES='["/dev/nvidia0","/dev/nvidiactl","/dev/nvidia-uvm"]'

check_selected() {
  local uuid o
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n 1)
  settings "$NODES"
  o=$(run selected "$BASE_CAPS" 'nvidia-smi -L')
  if echo "$o" | grep -q "$uuid"; then ok "selected: nvidia-smi -L in the container lists $uuid"; else fail "selected: expected nvidia-smi -L to list $uuid, got: $o"; fi
  o=$(run selected-env "$BASE_CAPS" 'printenv NVIDIA_VISIBLE_DEVICES' '"NVIDIA_VISIBLE_DEVICES=all"')
  if [ "$o" = 0 ]; then ok "NVIDIA_VISIBLE_DEVICES=all asked by the container became the selection (0)"; else fail "expected NVIDIA_VISIBLE_DEVICES=0, got: $o"; fi
  if command -v nvcc >/dev/null; then
    build_cuda && {
      o=$(run selected-cuda "$BASE_CAPS" "$work/vector-add")
      if echo "$o" | grep -q '^vector-add: ok'; then ok "selected: a CUDA kernel ran in the container: $o"; else fail "selected: the CUDA program failed: $o"; fi
    }
  else
    echo "note: no nvcc on this machine, the CUDA kernel check is not run"
  fi
}

build_cuda() {
  cat >"$work/vector-add.cu" <<'EOF'
#include <cstdio>
__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
int main() {
  const int n = 1 << 20;
  float *a, *b, *c;
  if (cudaMallocManaged(&a, n * sizeof(float)) != cudaSuccess) { printf("vector-add: no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError())); return 1; }
  cudaMallocManaged(&b, n * sizeof(float)); cudaMallocManaged(&c, n * sizeof(float));
  for (int i = 0; i < n; i++) { a[i] = i; b[i] = 2 * i; }
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("vector-add: %s\n", cudaGetErrorString(e)); return 1; }
  for (int i = 0; i < n; i++) if (c[i] != 3.0f * i) { printf("vector-add: wrong sum at %d\n", i); return 1; }
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
  printf("vector-add: ok, %d sums on %s (compute %d.%d)\n", n, p.name, p.major, p.minor);
  return 0;
}
EOF
  nvcc -o "$work/vector-add" "$work/vector-add.cu" >"$work/nvcc.log" 2>&1 || { fail "nvcc could not build the CUDA check: $(tail -n 3 "$work/nvcc.log")"; return 1; }
}

# A container that must not reach the GPU: nvidia-smi is there and runs, and fails.
HAS_SMI='command -v nvidia-smi >/dev/null || { echo "nvidia-smi is not in the container"; exit 99; }'
refused_gpu() {
  local what=$1 o status
  o=$(run "${@:2}"); status=$?
  if [ "$status" -eq 0 ]; then fail "$what: expected nvidia-smi -L to fail, it printed: $o"
  elif [ "$status" -eq 99 ]; then fail "$what: $o"
  else ok "$what: nvidia-smi -L fails ($(echo "$o" | tail -n 1))"; fi
}

check_not_selected() {
  settings '[]'
  refused_gpu "not selected" unselected "$BASE_CAPS" "$HAS_SMI; nvidia-smi -L"
  refused_gpu "not selected, nodes made with mknod in the container" unselected-mknod "$BASE_CAPS" \
    "$HAS_SMI; mknod /dev/nvidiactl c 195 255 && mknod /dev/nvidia0 c 195 0 && mknod /dev/nvidia-uvm c 238 0 && nvidia-smi -L"
}

check_privileged_refused() {
  local o
  settings "$NODES"
  if o=$(run privileged '["CAP_SYS_ADMIN","CAP_MKNOD"]' 'echo ran'); then
    fail "a spec with CAP_SYS_ADMIN ran: $o"
  elif echo "$o" | grep -q allowPrivileged; then
    ok "a spec with CAP_SYS_ADMIN is refused: $(echo "$o" | grep -m 1 'gpu-workers runc wrapper')"
  else
    fail "a spec with CAP_SYS_ADMIN failed for another reason: $o"
  fi
}

check_datasets() {
  local o
  settings "$NODES"
  o=$(run datasets "$BASE_CAPS" "cat $work/srv/models/weights.txt; { echo x >$work/srv/models/new; } 2>/dev/null && echo models-writable; echo y >$work/srv/scratch_rw/new && echo scratch-written")
  if [ "$o" = "$(printf 'weights\nscratch-written')" ]; then ok "datasets: models read-only, scratch_rw writable"; else fail "datasets: expected the weights, no write to models and a write to scratch_rw, got: $o"; fi
}

# --- 3. the health watcher on the real GPUs ---------------------------------------------------
check_health_watcher() {
  local conf="$work/gpu-health.conf" state="$work/health" pid rows
  nvidia-smi --query-compute-apps=gpu_bus_id,pid --format=csv,noheader >"$out/fixture/tools/nvidia-smi-compute-apps.txt" 2>&1
  # The config as the chain plans and renders it, for every GPU the driver lists.
  nvidia-smi --query-gpu=index,pci.bus_id,name,memory.total --format=csv,noheader,nounits | node -e '
    const [plan, render] = process.argv.slice(1).map((m) => require(m));
    const gpus = require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => l.split(/, */))
      .map(([i, b, name, mem]) => ({ index: Number(i), pciBusId: b, model: name, memoryMiB: Number(mem) }));
    const settings = plan.planGpuHealth({ inventory: { vendor: "nvidia", nvswitches: 0, gpus: gpus.map((g) => ({ ...g, integrated: false, mig: [] })) }, health: { onFatal: "none", pollSeconds: 1, settleSeconds: 3 } });
    process.stdout.write(render.renderHealthConfig(settings));
  ' "$HERE/dist/components/lib/links/gpu-health/plan.js" "$HERE/dist/components/lib/links/gpu-health/render.js" >"$conf" || { fail "health watcher: could not render its config"; return 1; }
  bash "$HERE/host/gpu-health-watch.sh" --config "$conf" --state-dir "$state" >"$out/gpu-health.log" 2>&1 &
  pid=$!
  sleep 5
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  rows=$(cat "$state/gpus.tsv" 2>/dev/null)
  if [ "$(cat "$state/status" 2>/dev/null)" = healthy ] && [ -n "$rows" ] && ! cut -f3 <<<"$rows" | grep -qv '^1$'; then
    ok "health watcher: every GPU healthy ($(cut -f1,2 <<<"$rows" | tr '\t\n' '= '))"
  else
    fail "health watcher: expected every GPU healthy, status $(cat "$state/status" 2>/dev/null), rows: ${rows}; it said: $(tail -n 5 "$out/gpu-health.log")"
  fi
}


# --- 4. GPU metrics: the collector with the real nvidia-smi carries the GPU's real numbers -------
check_metrics() {
  local prom="$work/textfile/gpu_workers.prom" total line
  if ! bash "$HERE/host/gpu-metrics.sh" collect --vendor nvidia --gpus 0 --textfile-dir "$work/textfile" \
    --jobs-dir "$work/no-jobs" --health-dir "$work/no-health" 2>"$out/gpu-metrics.err"; then
    fail "gpu-metrics.sh collect failed: $(cat "$out/gpu-metrics.err")"
    return
  fi
  cp "$prom" "$out/gpu_workers.prom"
  total=$(nvidia-smi -i 0 --query-gpu=memory.total --format=csv,noheader,nounits | tr -d ' ')
  line=$(grep '^gpu_workers_gpu_memory_total_bytes{gpu="0"' "$prom" || true)
  if [ "${line##* }" = "$((total * 1048576))" ]; then ok "metrics: GPU 0's memory total is nvidia-smi's ($total MiB)"
  else fail "metrics: expected gpu_workers_gpu_memory_total_bytes of GPU 0 = $((total * 1048576)), got: $line"; fi
  if grep -q '^gpu_workers_gpu_temperature_celsius{gpu="0"' "$prom"; then ok "metrics: GPU 0 has a temperature"
  else fail "metrics: no temperature for GPU 0 in $prom"; fi
}


# --- 5. timeSlice: two containers at once on GPU 0 -----------------------------------------------
settings_time_slice() {
  cat >"$SETTINGS" <<EOF
{"realRuntime": "$RUNC_REAL", "datasetRoot": "$work/srv", "writableSuffixes": ["_rw"],
 "env": {}, "unsetEnv": ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"], "deviceNodes": [],
 "gpuNodes": ["/dev/nvidia0"], "log": "$work/wrapper.log", "allowPrivileged": false,
 "allocation": {"mode": "timeSlice", "perTask": 1, "replicas": 2, "waitSeconds": 0,
   "visibleEnv": "NVIDIA_VISIBLE_DEVICES", "holderEnv": {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
   "holderDeviceNodes": ["/dev/nvidiactl", "/dev/nvidia-uvm"],
   "units": [{"id": "0", "gpu": "0", "visible": "0", "deviceNodes": ["/dev/nvidia0"], "gpuNodes": ["/dev/nvidia0"]}]}}
EOF
  chmod 0644 "$SETTINGS"
}

# The program each holder runs twice: the CUDA check where nvcc built it, else nvidia-smi -L.
slice_ran_twice() {
  if [ -x "$work/vector-add" ]; then [ "$(grep -c '^vector-add: ok' <<<"$1")" -eq 2 ]; else [ "$(grep -c '^GPU 0' <<<"$1")" -eq 2 ]; fi
}

check_time_slice() {
  local program='nvidia-smi -L' i o status both=yes
  [ -x "$work/vector-add" ] && program="$work/vector-add"
  settings_time_slice
  # Each holds GPU 0 for 20 s and runs the program at its start and its end, so the two overlap.
  for i in 1 2; do
    run "slice-$i" "$BASE_CAPS" "printenv NVIDIA_VISIBLE_DEVICES; $program && sleep 20 && $program" '"GPU_WORKERS_GPUS=1"' >"$work/slice-$i.out" 2>&1 &
  done
  sleep 8
  o=$(run slice-3 "$BASE_CAPS" 'echo ran' '"GPU_WORKERS_GPUS=1"'); status=$?
  if [ "$status" -ne 0 ] && grep -q 'unit 0: held by gpu-check-slice-1, gpu-check-slice-2' <<<"$o"; then
    ok "timeSlice: a third container asking while two hold GPU 0 is refused: $(grep -m 1 -o 'too few free.*' <<<"$o")"
  else
    fail "timeSlice: expected a third container to be refused naming both holders, got ($status): $o"
  fi
  wait
  for i in 1 2; do
    o=$(cat "$work/slice-$i.out")
    if [ "$(head -n 1 <<<"$o")" != 0 ] || ! slice_ran_twice "$o"; then
      both=""
      fail "timeSlice: container $i expected NVIDIA_VISIBLE_DEVICES=0 and $program to run twice, got: $o"
    fi
  done
  if [ -n "$both" ]; then ok "timeSlice: two containers at once on GPU 0 both ran $program, each while the other held it"; fi
}

capture_fixture
check_health_watcher
check_metrics
install_wrapper
check_selected
check_not_selected
check_privileged_refused
check_datasets
check_time_slice
cp "$work/wrapper.log" "$out/wrapper.log" 2>/dev/null || true
echo "failures: $failures"
exit "$failures"
