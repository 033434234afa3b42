#!/usr/bin/env bash
# Installs the vendor's container toolkit at the pinned version, or checks a preinstalled one.
#   container-toolkit.sh ensure --vendor nvidia|amd --version X.Y.Z|preinstalled [options]
#   container-toolkit.sh remove --vendor nvidia|amd --version X.Y.Z|preinstalled
# --cve ID=FIXED     a known container escape and the first version that fixes it (repeatable):
#                    a preinstalled toolkit below any of them is refused
# --apt-source FILE  the vendor's apt source gpu-workers placed; refreshed when no list offers
#   --keyring FILE   the pinned version yet (the two options name its key for error messages)
#   --fingerprint FPR
# --dev-char-links   (NVIDIA) create the /dev/char links of the device nodes now; the udev
#                    rule placed beside this step keeps them from then on
# Our config files are placed before the package, so dpkg keeps them (--force-confold).
# The apt pin placed beside this step holds the version. "remove" purges only the packages
# this script installed (ownership.sh records them once apt has), never a toolkit the host had:
# after a failed or a successful change of version, the host's package stays.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGES="$STATE_DIR/toolkit-package" # what apt installed for this step (the name is older than the list)

die() { echo "container-toolkit: $*" >&2; exit 1; }

action=${1:-}; shift || true
vendor=""; version=""; apt_source=""; keyring=""; fingerprint=""; dev_char=no
cves=()
while [ $# -gt 0 ]; do
  case "$1" in
    --vendor) vendor=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --cve) cves+=("$2"); shift 2 ;;
    --apt-source) apt_source=$2; shift 2 ;;
    --keyring) keyring=$2; shift 2 ;;
    --fingerprint) fingerprint=$2; shift 2 ;;
    --dev-char-links) dev_char=yes; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done
case "$vendor" in
  nvidia) package=nvidia-container-toolkit ;;
  amd) package=amd-container-toolkit ;;
  *) die "--vendor must be nvidia or amd (got '${vendor}')" ;;
esac
[ -n "$version" ] || die "--version is required"

# Nothing for a package that is absent or removed with its conffiles kept (dpkg still
# reports a version for those, and "remove" leaves ours so).
installed_version() {
  dpkg-query -W -f '${db:Status-Status} ${Version}' "$package" 2>/dev/null | sed -n 's/^installed //p' || true
}

# The first apt version of the package that is the pin with any Debian revision.
offered_version() {
  apt-cache madison "$package" 2>/dev/null | awk -F'|' -v v="$version" '{gsub(/ /,"",$2)} $2 == v || index($2, v"-") == 1 {print $2; exit}'
}

# Refuses an installed version below the first fixed version of any known container escape.
check_floor() {
  local current=$1 entry id fixed open=""
  for entry in "${cves[@]+"${cves[@]}"}"; do
    id=${entry%%=*}; fixed=${entry#*=}
    if dpkg --compare-versions "$current" lt "$fixed"; then open="${open:+$open, }$id (fixed in $fixed)"; fi
  done
  [ -z "$open" ] || die "${package} ${current} is installed and has known container escapes: ${open}; upgrade it, or pin a fixed version in the stack (toolkit.version)"
}

dev_char_links() {
  [ "$dev_char" = yes ] || return 0
  if [ ! -e /dev/nvidiactl ]; then
    echo "container-toolkit: no /dev/nvidiactl yet; the udev rule creates the /dev/char links when the driver binds"
    return 0
  fi
  command -v nvidia-ctk >/dev/null 2>&1 || die "nvidia-ctk is missing: it creates the /dev/char links of the NVIDIA device nodes"
  nvidia-ctk system create-dev-char-symlinks --create-all
}

ensure() {
  local current full
  current=$(installed_version)
  if [ "$version" = preinstalled ]; then
    [ -n "$current" ] || die "toolkit.version is preinstalled, but ${package} is not installed"
    check_floor "$current"
    echo "container-toolkit: ${package} ${current} is installed (preinstalled)"
    dev_char_links
    return 0
  fi
  case "$current" in
    "$version"|"$version"-*) echo "container-toolkit: ${package} ${current} is installed"; dev_char_links; return 0 ;;
  esac
  command -v apt-get >/dev/null 2>&1 || die "${package} ${version} is pinned but ${current:-nothing} is installed, and this host has no apt-get"
  full=$(offered_version)
  if [ -z "$full" ] && [ -n "$apt_source" ]; then
    bash "$HERE/apt-vendor-source.sh" refresh --source "$apt_source" --keyring "$keyring" --fingerprint "$fingerprint"
    full=$(offered_version)
  fi
  if [ -z "$full" ]; then
    if [ -n "$apt_source" ]; then die "${package} ${version} is pinned but no apt source offers it (installed: ${current:-none}); nor does the vendor repository in ${apt_source}"; fi
    die "${package} ${version} is pinned but no apt source offers it (installed: ${current:-none}); add the vendor's repository to the host's apt sources, or pin a version they offer"
  fi
  bash "$HERE/ownership.sh" apt-install "$PACKAGES" -o Dpkg::Options::=--force-confold "${package}=${full}"
  dev_char_links
}

remove() {
  bash "$HERE/ownership.sh" apt-remove "$PACKAGES"
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: container-toolkit.sh ensure|remove --vendor nvidia|amd --version X.Y.Z|preinstalled" ;;
esac
