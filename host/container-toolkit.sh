#!/usr/bin/env bash
# Installs the vendor's container toolkit at the pinned version.
#   container-toolkit.sh ensure --vendor nvidia|amd --version X.Y.Z
#   container-toolkit.sh remove --vendor nvidia|amd --version X.Y.Z
# Our config files are placed before the package, so dpkg keeps them (--force-confold).
# "remove" only removes a package this script installed itself.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}

die() { echo "container-toolkit: $*" >&2; exit 1; }

action=${1:-}; shift || true
vendor=""; version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vendor) vendor=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
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

ensure() {
  local current full
  current=$(installed_version)
  case "$current" in
    "$version"|"$version"-*) echo "container-toolkit: ${package} ${current} is installed"; return 0 ;;
  esac
  command -v apt-get >/dev/null 2>&1 || die "${package} ${version} is pinned but ${current:-nothing} is installed, and this host has no apt-get"
  full=$(apt-cache madison "$package" 2>/dev/null | awk -F'|' -v v="$version" '{gsub(/ /,"",$2)} $2 == v || index($2, v"-") == 1 {print $2; exit}')
  [ -n "$full" ] || die "${package} ${version} is pinned but no apt source offers it (installed: ${current:-none}); add the vendor's repository"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold \
    "${package}=${full}"
  mkdir -p "$STATE_DIR"
  echo "$package" > "$STATE_DIR/toolkit-package"
}

remove() {
  [ -f "$STATE_DIR/toolkit-package" ] || { echo "container-toolkit: nothing installed by gpu-workers"; return 0; }
  if dpkg -s "$package" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "$package"
  fi
  rm -f "$STATE_DIR/toolkit-package"
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: container-toolkit.sh ensure|remove --vendor nvidia|amd --version X.Y.Z" ;;
esac
