#!/usr/bin/env bash
# fabricmanager's service VM on a shared board's host, through libvirt.
#   fabric-service-vm.sh ensure --name N --uri URI --state DIR --console LOG --domain XML --seed DIR
#                               --image PATH [--disk-gib N] --plan ID --timeout SECONDS [--vfio BDF]...
#   fabric-service-vm.sh check  --name N --uri URI --state DIR --console LOG --plan ID
#   fabric-service-vm.sh remove --name N --uri URI --state DIR --console LOG
# ensure builds the cloud-init seed (NoCloud: an ISO labelled cidata) from the seed folder,
# gives the VM a disk layer of its own over the image, defines the domain, marks it autostart
# and starts it, then waits until the VM reports on its serial console (which libvirt logs to
# LOG) that fabricmanager runs and plan ID's partitions are active. It restarts the VM only
# when the seed or the domain changed. remove stops and undefines the VM and removes its
# disk layer, seed and log. The functions in --vfio must be on vfio-pci (the nvswitch-vfio step).
set -euo pipefail

SYSFS=${GPU_WORKERS_SYSFS:-/sys}

die() { echo "fabric-service-vm: $*" >&2; exit 1; }

action=${1:-}; shift || true
name=""; uri=qemu:///system; state=""; console=""; domain=""; seed=""; image=""; disk_gib=""; plan=""; timeout=600
vfio=()
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --uri) uri=$2; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --console) console=$2; shift 2 ;;
    --domain) domain=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --disk-gib) disk_gib=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --vfio) vfio+=("$2"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
if [ -z "$name" ] || [ -z "$state" ] || [ -z "$console" ]; then die "--name, --state and --console are required"; fi
# Only a daemon on this machine over its local socket (libvirt's test driver too, for tests): a
# remote transport or another parameter could have virsh run a program (qemu+ext's command=).
[[ $uri =~ ^(qemu|test)(\+unix)?:///[a-z]+(\?socket=/[A-Za-z0-9._+@:,=~/-]+)?$ ]] ||
  die "--uri $uri: expected a local libvirt URI (qemu:///system, or qemu+unix:///system?socket=/path); no remote transport, no other parameter"

virsh_() { virsh -q -c "$uri" "$@"; }

defined() { virsh_ dominfo "$name" >/dev/null 2>&1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is not installed (package $2)"
}

# NoCloud seed: user-data and meta-data on a volume labelled cidata.
make_seed() {
  local out=$state/seed.iso.new
  rm -f "$out"
  if command -v cloud-localds >/dev/null 2>&1; then
    cloud-localds "$out" "$seed/user-data" "$seed/meta-data"
  elif command -v genisoimage >/dev/null 2>&1; then
    genisoimage -quiet -output "$out" -volid cidata -joliet -rock "$seed/user-data" "$seed/meta-data"
  elif command -v xorriso >/dev/null 2>&1; then
    xorriso -as mkisofs -quiet -output "$out" -volid cidata -joliet -rock "$seed/user-data" "$seed/meta-data"
  else
    die "no tool to build the cloud-init seed: install cloud-image-utils (cloud-localds), genisoimage or xorriso"
  fi
  mv "$out" "$state/seed.iso"
}

sum_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# The last lines the VM wrote on its console, for messages.
console_tail() {
  if [ -r "$console" ]; then tail -n 20 "$console" | sed 's/^/    /'; else echo "    (no console log at $console)"; fi
}

# The VM's last report on plan ID (every boot reports again; the log keeps earlier boots).
last_report() {
  [ -r "$console" ] || return 0
  grep -E "gpu-workers-fabric: (ready|failed) plan=${plan}[ :]" "$console" | tail -n 1 | tr -d '\r' || true
}

wait_ready() {
  local deadline line
  deadline=$((SECONDS + timeout))
  while :; do
    line=$(last_report)
    case "$line" in
      *"gpu-workers-fabric: ready "*) echo "fabric-service-vm: ${name} runs fabricmanager: ${line#*gpu-workers-fabric: }"; return 0 ;;
      *"gpu-workers-fabric: failed "*) die "the service VM ${name} reports: ${line#*gpu-workers-fabric: } (console log: ${console})" ;;
    esac
    [ "$SECONDS" -lt "$deadline" ] || die "no word from the service VM ${name} within ${timeout}s (plan ${plan}); its console (${console}) ends with:
$(console_tail)"
    sleep 2
  done
}

ensure() {
  local f driver changed=no sum fmt size=() current
  if [ -z "$domain" ] || [ -z "$seed" ] || [ -z "$image" ] || [ -z "$plan" ]; then die "ensure needs --domain, --seed, --image and --plan"; fi
  need virsh libvirt-clients
  need qemu-img qemu-utils
  for f in "${vfio[@]+"${vfio[@]}"}"; do
    driver=none
    [ -L "$SYSFS/bus/pci/devices/$f/driver" ] && driver=$(basename "$(readlink "$SYSFS/bus/pci/devices/$f/driver")")
    [ "$driver" = vfio-pci ] || die "PCI function $f is on driver ${driver}, not vfio-pci: the nvswitch-vfio step binds it before the VM starts"
  done
  [ -r "$image" ] || die "the service VM's image ${image} is missing: it needs cloud-init, the NVIDIA driver and fabricmanager of the same version"
  if [ ! -r "$domain" ] || [ ! -r "$seed/user-data" ] || [ ! -r "$seed/meta-data" ]; then die "the domain ${domain} or the seed in ${seed} is missing"; fi
  mkdir -p "$state" "$(dirname "$console")"

  sum=$(sum_of "$seed/user-data" "$seed/meta-data")
  if [ ! -f "$state/seed.iso" ] || [ "$(cat "$state/seed.sha256" 2>/dev/null || true)" != "$sum" ]; then
    make_seed
    echo "$sum" > "$state/seed.sha256"
    changed=yes
  fi
  if [ ! -f "$state/disk.qcow2" ]; then
    fmt=$(qemu-img info --output=json "$image" | sed -n 's/^ *"format": *"\([^"]*\)".*/\1/p' | head -n 1)
    [ -n "$disk_gib" ] && size=("${disk_gib}G")
    qemu-img create -q -f qcow2 -F "${fmt:-qcow2}" -b "$image" "$state/disk.qcow2" "${size[@]+"${size[@]}"}"
    changed=yes
  fi
  sum=$(sum_of "$domain")
  if ! defined || [ "$(cat "$state/domain.sha256" 2>/dev/null || true)" != "$sum" ]; then
    virsh_ define "$domain" >/dev/null
    echo "$sum" > "$state/domain.sha256"
    changed=yes
  fi
  virsh_ autostart "$name" >/dev/null
  current=$(virsh_ domstate "$name")
  if [ "$current" = running ] && [ "$changed" = yes ]; then
    # fabricmanager takes a new plan at boot (cloud-init sees a new instance id).
    virsh_ destroy "$name" >/dev/null
    current="shut off"
  fi
  if [ "$current" != running ]; then
    : > "$console"
    virsh_ start "$name" >/dev/null
  fi
  wait_ready
}

check() {
  local info
  # Read whole: grep -q on a pipe would end virsh early, which pipefail counts as a failure.
  info=$(virsh_ dominfo "$name" 2>/dev/null) || { echo "fabric-service-vm: ${name} is not defined" >&2; exit 1; }
  [ "$(virsh_ domstate "$name")" = running ] || { echo "fabric-service-vm: ${name} is not running" >&2; exit 1; }
  grep -Eq '^Autostart: +enable' <<< "$info" || { echo "fabric-service-vm: ${name} is not marked autostart" >&2; exit 1; }
  case "$(last_report)" in
    *"gpu-workers-fabric: ready "*) ;;
    *) echo "fabric-service-vm: ${name} has not reported plan ${plan} ready since it last started" >&2; exit 1 ;;
  esac
}

remove() {
  if command -v virsh >/dev/null 2>&1 && defined; then
    [ "$(virsh_ domstate "$name")" = "shut off" ] || virsh_ destroy "$name" >/dev/null 2>&1 || true
    virsh_ undefine "$name" >/dev/null
  fi
  rm -f "$state/disk.qcow2" "$state/seed.iso" "$state/seed.iso.new" "$state/seed.sha256" "$state/domain.sha256" "$console"
  [ ! -d "$state" ] || rmdir "$state" 2>/dev/null || true
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  *) die "usage: fabric-service-vm.sh ensure|check|remove --name N --uri URI --state DIR --console LOG ..." ;;
esac
