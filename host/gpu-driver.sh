#!/usr/bin/env bash
# Makes sure the GPU driver a worker needs is loaded, and with a pinned version installs it.
#   gpu-driver.sh ensure --vendor nvidia|amd|intel --version preinstalled|X.Y[.Z]
#   gpu-driver.sh remove --vendor nvidia|amd|intel --version preinstalled|X.Y[.Z]
# Intel's drivers (i915, xe) are the kernel's: only preinstalled, checked as loaded.
# --apt-source FILE --keyring FILE --fingerprint FPR: the vendor's driver repository that
# gpu-workers placed, refreshed when no apt list offers the pinned version yet. The apt pin
# placed beside this step holds a pinned version.
# "remove" purges only the packages this script installed (ownership.sh records them once apt
# has), never a driver package the host had, even one this script moved to another version.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
ROOT=${GPU_WORKERS_ROOT:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGES="$STATE_DIR/driver-package" # what apt installed for this step (the name is older than the list)

die() { echo "gpu-driver: $*" >&2; exit 1; }

action=${1:-}; shift || true
vendor=""; version=""; apt_source=""; keyring=""; fingerprint=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vendor) vendor=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --apt-source) apt_source=$2; shift 2 ;;
    --keyring) keyring=$2; shift 2 ;;
    --fingerprint) fingerprint=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
case "$vendor" in nvidia|amd|intel) ;; *) die "--vendor must be nvidia, amd or intel (got '${vendor}')" ;; esac
[ -n "$version" ] || die "--version is required (preinstalled or a version)"
if [ "$vendor" = intel ] && [ "$version" != preinstalled ]; then
  die "Intel's GPU drivers (i915, xe) come with the kernel: only --version preinstalled (got '${version}')"
fi

# The loaded driver's version, or nothing when no driver is loaded.
running_version() {
  if [ "$vendor" = intel ]; then
    local module loaded=""
    for module in i915 xe; do
      [ -d "$ROOT/sys/module/$module" ] && loaded="${loaded:+$loaded,}$module"
    done
    [ -z "$loaded" ] || echo "$loaded"
  elif [ "$vendor" = nvidia ]; then
    if [ -r "$ROOT/proc/driver/nvidia/version" ]; then
      # "... x86_64 Kernel Module  550.54.15 ..." or "... Open Kernel Module for x86_64  560.35.03 ..."
      sed -nE 's/.*Kernel Module( for [^ ]+)? +([0-9]+\.[0-9.]+).*/\2/p' "$ROOT/proc/driver/nvidia/version" | head -n 1
    fi
  else
    if [ -r "$ROOT/opt/rocm/.info/version" ]; then
      head -n 1 "$ROOT/opt/rocm/.info/version"
    elif [ -d "$ROOT/sys/module/amdgpu" ]; then
      echo loaded
    fi
  fi
}

driver_present() {
  if [ "$vendor" = intel ]; then
    { [ -d "$ROOT/sys/module/i915" ] || [ -d "$ROOT/sys/module/xe" ]; } && [ -d "$ROOT/dev/dri" ]
  elif [ "$vendor" = nvidia ]; then
    [ -r "$ROOT/proc/driver/nvidia/version" ]
  else
    [ -e "$ROOT/dev/kfd" ] && [ -d "$ROOT/sys/module/amdgpu" ]
  fi
}

# What a host without the vendor's driver lacks, in words.
missing_driver() {
  case "$vendor" in
    nvidia) echo "/proc/driver/nvidia/version is missing" ;;
    amd) echo "/dev/kfd or the amdgpu module is missing" ;;
    intel) echo "neither the i915 nor the xe module is loaded, or /dev/dri is missing" ;;
  esac
}

# Prints "package=version" of the first apt package that offers the pinned version.
apt_candidate() {
  local major=${version%%.*} pkg full
  local candidates
  if [ "$vendor" = nvidia ]; then
    candidates="nvidia-driver-${major}-server nvidia-driver-${major} cuda-drivers-${major}"
  else
    candidates="rocm amdgpu-install"
  fi
  for pkg in $candidates; do
    # The pin, or the pin followed by "." or "-", after an optional epoch: 550.54 takes
    # 550.54.15-1, 550.54.1 does not.
    full=$(apt-cache madison "$pkg" 2>/dev/null | awk -F'|' -v v="$version" '{gsub(/ /,"",$2); s=$2; sub(/^[0-9]+:/,"",s)} s == v || index(s, v".") == 1 || index(s, v"-") == 1 {print $2; exit}')
    if [ -n "$full" ]; then echo "${pkg}=${full}"; return 0; fi
  done
  return 1
}

ensure() {
  local running
  running=$(running_version)
  if [ "$version" = preinstalled ]; then
    driver_present || die "expected a preinstalled ${vendor} driver, but none is loaded ($(missing_driver))"
    echo "gpu-driver: ${vendor} driver ${running:-loaded} is present"
    return 0
  fi
  case "$running" in
    "$version"|"$version".*) echo "gpu-driver: ${vendor} driver ${running} matches the pin ${version}"; return 0 ;;
  esac
  command -v apt-get >/dev/null 2>&1 || die "driver ${version} is pinned but ${running:-no driver} is loaded, and this host has no apt-get to install it"
  local spec
  if ! spec=$(apt_candidate) && [ -n "$apt_source" ]; then
    bash "$HERE/apt-vendor-source.sh" refresh --source "$apt_source" --keyring "$keyring" --fingerprint "$fingerprint"
  fi
  spec=${spec:-$(apt_candidate)} || die "driver ${version} is pinned but ${running:-no driver} is loaded, and no apt package offers ${version}; add the vendor's repository or preinstall the driver"
  bash "$HERE/ownership.sh" apt-install "$PACKAGES" "$spec"
  running=$(running_version)
  case "$running" in
    "$version"|"$version".*) echo "gpu-driver: installed ${spec}" ;;
    *) die "installed ${spec}, but ${running:-no driver} is loaded: reboot the host, then run pulumi up again" ;;
  esac
}

remove() {
  bash "$HERE/ownership.sh" apt-remove "$PACKAGES"
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: gpu-driver.sh ensure|remove --vendor nvidia|amd|intel --version preinstalled|X.Y.Z" ;;
esac
