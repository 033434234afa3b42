#!/usr/bin/env bash
# Binds a board's NVSwitches, their memory controller (HGX: PMC-Sierra 11f8:4128) and every
# other function of their IOMMU groups to vfio-pci, so that a fabricmanager service VM can
# take them; bridges in those groups stay with their driver (vfio accepts them there).
#   nvswitch-vfio.sh ensure [--sysfs ROOT] [--state DIR] --nvswitch BDF... [--memory-controller BDF]...
#   nvswitch-vfio.sh check  [--sysfs ROOT] --nvswitch BDF... [--memory-controller BDF]...
#   nvswitch-vfio.sh remove [--sysfs ROOT] [--state DIR]
# ensure checks everything before it changes anything: it refuses, naming the device, when
# the IOMMU is off, when a named function is not what it is named as, when an NVSwitch on the
# bus is not named, or when a group holds anything but NVSwitches, that controller and bridges
# (a GPU, say: it would be taken from the host). It records each function's driver before
# the first change; remove gives every function back to it. Both are safe to run again.
# --sysfs is where sysfs is mounted (default /sys; tests give a model of it).
set -euo pipefail

SYSFS=/sys
STATE=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}/nvswitch-vfio
# Bridge classes: host (0x0600), PCI-to-PCI (0x0604), semi-transparent (0x0609).
BRIDGE_CLASSES="0x0600 0x0604 0x0609"

die() { echo "nvswitch-vfio: $*" >&2; exit 1; }

action=${1:-}; shift || true
nvswitches=(); controllers=()
# nvidia-smi writes 8-digit domains (00000000:09:00.0); sysfs has 4 (0000:09:00.0).
bdf() {
  local id=${1,,}
  [[ $id =~ ^([0-9a-f]{4,8}):([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$ ]] || die "\"$1\" is not a PCI address such as 0000:09:00.0"
  echo "${BASH_REMATCH[1]: -4}:${BASH_REMATCH[2]}"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --sysfs) SYSFS=${2%/}; shift 2 ;;
    --state) STATE=$2; shift 2 ;;
    --nvswitch) nvswitches+=("$(bdf "$2")"); shift 2 ;;
    --memory-controller) controllers+=("$(bdf "$2")"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

DEVICES=$SYSFS/bus/pci/devices

# The helpers below set a variable instead of printing: a board has hundreds of PCI
# functions, and a subshell per attribute read would make the bus scan slow.

# ATTR: one attribute of a function ("0x10de").
attr() { ATTR=; read -r ATTR < "$DEVICES/$1/$2" || true; }

# DRIVER: the driver a function is bound to, or none.
driver_of() {
  local link=$DEVICES/$1/driver d
  DRIVER=none
  [ -L "$link" ] || return 0
  for d in "$SYSFS"/bus/pci/drivers/*; do
    if [ "$link" -ef "$d" ]; then DRIVER=${d##*/}; return 0; fi
  done
}

# KIND: nvswitch, memory-controller, bridge or other, from the ids sysfs shows.
kind_of() {
  local vendor device class
  attr "$1" vendor; vendor=$ATTR
  attr "$1" device; device=$ATTR
  attr "$1" class; class=${ATTR:0:6}
  if [ "$vendor" = 0x10de ] && [ "$class" = 0x0680 ]; then KIND=nvswitch
  elif [ "$vendor" = 0x11f8 ] && [ "$device" = 0x4128 ] && [ "$class" = 0x0580 ]; then KIND=memory-controller
  elif [[ " $BRIDGE_CLASSES " == *" $class "* ]]; then KIND=bridge
  else KIND=other
  fi
}

# DESC: a function as messages name it: "0000:0d:00.0 (10de:2330, class 0x030200, driver nvidia)".
describe() {
  local vendor device
  attr "$1" vendor; vendor=${ATTR#0x}
  attr "$1" device; device=${ATTR#0x}
  attr "$1" class; driver_of "$1"
  DESC="$1 ($vendor:$device, class $ATTR, driver $DRIVER)"
}

# GROUP: the function's IOMMU group, or empty.
group_of() {
  local link=$DEVICES/$1/iommu_group g
  GROUP=
  [ -L "$link" ] || return 0
  for g in "$SYSFS"/kernel/iommu_groups/*; do
    if [ "$link" -ef "$g" ]; then GROUP=${g##*/}; return 0; fi
  done
}

iommu_on() {
  local g
  for g in "$SYSFS"/kernel/iommu_groups/*; do [ -d "$g" ] && return 0; done
  return 1
}

# A write to a sysfs attribute; the kernel answers a refused one with an error.
put() {
  printf '%s' "$2" > "$1" || die "writing \"${2%$'\n'}\" to $1 failed"
}

# Waits until the function's driver is $2. The kernel has acted by the time a write returns;
# the short wait also lets the tests' model of sysfs act.
wait_driver() {
  local i
  for ((i = 0; i < 200; i++)); do
    driver_of "$1"
    [ "$DRIVER" = "$2" ] && return 0
    sleep 0.02
  done
  return 1
}

# Every function to bind: the named ones and the other members of their groups, checked
# (all of it, before anything changes).
plan_targets() {
  local dev role member
  [ "${#nvswitches[@]}" -gt 0 ] || die "name the board's NVSwitches (--nvswitch BDF)"
  iommu_on || die "the IOMMU is off (no groups under $SYSFS/kernel/iommu_groups), so NVSwitch ${nvswitches[0]} cannot be given to a VM: enable VT-d (or AMD-Vi) in the firmware and boot with intel_iommu=on (or amd_iommu=on)"
  for dev in "${nvswitches[@]}" "${controllers[@]+"${controllers[@]}"}"; do
    role=nvswitch
    [[ " ${controllers[*]+"${controllers[*]}"} " == *" $dev "* ]] && role=memory-controller
    [ -d "$DEVICES/$dev" ] || die "there is no PCI function $dev (named as the $role)"
    kind_of "$dev"
    if [ "$KIND" != "$role" ]; then
      describe "$dev"
      die "$DESC is named as the $role but is not one (an NVSwitch is 10de with class 0x0680, the memory controller 11f8:4128 with class 0x0580)"
    fi
    group_of "$dev"
    if [ -z "$GROUP" ]; then describe "$dev"; die "$DESC has no IOMMU group: the IOMMU does not cover it"; fi
  done
  # fabricmanager in the VM needs every NVSwitch of the board.
  for dev in "$DEVICES"/*; do
    dev=${dev##*/}
    kind_of "$dev"
    [ "$KIND" = nvswitch ] || continue
    if [[ " ${nvswitches[*]} " != *" $dev "* ]]; then
      describe "$dev"
      die "NVSwitch $DESC is on the bus but not named: the service VM's fabricmanager needs every NVSwitch of the board"
    fi
  done
  targets=()
  for dev in "${nvswitches[@]}" "${controllers[@]+"${controllers[@]}"}"; do
    group_of "$dev"
    for member in "$SYSFS/kernel/iommu_groups/$GROUP/devices"/*; do
      member=${member##*/}
      kind_of "$member"
      case "$KIND" in
        bridge) continue ;;
        nvswitch) ;;
        memory-controller)
          if [[ " ${controllers[*]+"${controllers[*]}"} " != *" $member "* ]]; then
            describe "$member"
            die "IOMMU group $GROUP (of $dev) holds memory controller $DESC, which is not named (--memory-controller)"
          fi ;;
        *)
          describe "$member"
          die "IOMMU group $GROUP (of $dev) also holds $DESC, which is neither an NVSwitch, the NVSwitch memory controller nor a bridge: giving the group to the service VM would take it from the host (move the card, or check the ACS settings of the slot)" ;;
      esac
      [[ " ${targets[*]+"${targets[*]}"} " == *" $member "* ]] || targets+=("$member")
    done
  done
}

vfio_loaded() {
  if [ ! -d "$SYSFS/bus/pci/drivers/vfio-pci" ] && [ "$SYSFS" = /sys ]; then modprobe vfio-pci || true; fi
  [ -d "$SYSFS/bus/pci/drivers/vfio-pci" ] || die "the vfio-pci driver is not loaded ($SYSFS/bus/pci/drivers/vfio-pci is missing)"
}

bind_vfio() {
  local dev=$1 current
  driver_of "$dev"; current=$DRIVER
  [ "$current" = vfio-pci ] && return 0
  mkdir -p "$STATE"
  # The driver from before the first change, which remove gives the function back to.
  [ -f "$STATE/$dev" ] || echo "$current" > "$STATE/$dev"
  put "$DEVICES/$dev/driver_override" vfio-pci
  if [ "$current" != none ]; then
    put "$DEVICES/$dev/driver/unbind" "$dev"
    wait_driver "$dev" none || { describe "$dev"; die "could not unbind $DESC from $current"; }
  fi
  put "$SYSFS/bus/pci/drivers_probe" "$dev"
  wait_driver "$dev" vfio-pci || { describe "$dev"; die "could not bind $DESC to vfio-pci"; }
  changed=$((changed + 1))
}

ensure() {
  local dev
  plan_targets
  vfio_loaded
  changed=0
  for dev in "${targets[@]}"; do bind_vfio "$dev"; done
  echo "nvswitch-vfio: ${#targets[@]} functions on vfio-pci (${changed} bound now): ${targets[*]}"
}

check() {
  local dev bad=()
  plan_targets
  for dev in "${targets[@]}"; do
    driver_of "$dev"
    if [ "$DRIVER" != vfio-pci ]; then describe "$dev"; bad+=("$DESC"); fi
  done
  if [ "${#bad[@]}" -gt 0 ]; then
    echo "nvswitch-vfio: not on vfio-pci: ${bad[*]}" >&2
    exit 1
  fi
}

remove() {
  local file dev original
  [ -d "$STATE" ] || return 0
  for file in "$STATE"/*; do
    [ -f "$file" ] || continue
    dev=${file##*/}
    read -r original < "$file" || original=none
    if [ -d "$DEVICES/$dev" ]; then
      # An empty line clears the override: the function matches drivers by its ids again.
      put "$DEVICES/$dev/driver_override" $'\n'
      driver_of "$dev"
      if [ "$DRIVER" = vfio-pci ]; then
        put "$DEVICES/$dev/driver/unbind" "$dev"
        wait_driver "$dev" none || { describe "$dev"; die "could not unbind $DESC from vfio-pci (is the service VM still running?)"; }
      fi
      if [ "$original" != none ] && [ "$DRIVER" = none ]; then
        if [ -d "$SYSFS/bus/pci/drivers/$original" ]; then put "$SYSFS/bus/pci/drivers/$original/bind" "$dev"
        else put "$SYSFS/bus/pci/drivers_probe" "$dev"
        fi
        wait_driver "$dev" "$original" || { describe "$dev"; die "could not give $DESC back to $original"; }
      fi
    fi
    rm -f "$file"
  done
  rmdir "$STATE" 2>/dev/null || true
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  *) die "usage: nvswitch-vfio.sh ensure|check [--sysfs ROOT] [--state DIR] --nvswitch BDF... [--memory-controller BDF]... | remove [--sysfs ROOT] [--state DIR]" ;;
esac
