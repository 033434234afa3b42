#!/usr/bin/env bash
# Assembles a Concourse release tarball in Concourse's own layout from parts, for this repo's
# dev stack and tests (users give the official release: concourse.binary {url, sha256}):
#
#   concourse/bin/        concourse and init from the kit; containerd, containerd-shim-runc-v2,
#                         runc and the CNI plugins from this machine's Debian packages
#   concourse/resource-types/mock/{rootfs.tgz,resource_metadata.json}
#                         the kit's mock resource on a busybox-static rootfs
#
#   concourse-release.sh [--kit FILE]   prints the tarball's path
#
# The kit is ../shared/concourse/concourse-*-kit.tar.xz beside the repo unless --kit (or
# GPU_WORKERS_CONCOURSE_KIT) names it. The tarball is cached by content (the kit, every binary
# and this script) under ${XDG_CACHE_HOME:-~/.cache}/gpu-workers/concourse/, and is the same
# bytes each time it is made from the same parts. Missing Debian packages are installed when
# run as root.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/concourse"
kit=${GPU_WORKERS_CONCOURSE_KIT:-}

die() { echo "concourse-release: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --kit) kit=$2; shift 2 ;;
    *) die "unknown argument: $1 (usage: concourse-release.sh [--kit FILE])" ;;
  esac
done
if [ -z "$kit" ]; then
  for candidate in "$root"/../shared/concourse/concourse-*-kit.tar.xz; do
    [ -f "$candidate" ] && kit=$candidate
  done
fi
if [ -z "$kit" ] || [ ! -f "$kit" ]; then die "no Concourse kit found (expected ../shared/concourse/concourse-*-kit.tar.xz beside the repo; give --kit FILE)"; fi

# The runtime parts a worker needs beside Concourse, and the Debian packages that bring them.
CONTAINERD=/usr/bin/containerd
SHIM=/usr/bin/containerd-shim-runc-v2
RUNC=/usr/sbin/runc
CNI_DIR=/usr/lib/cni
BUSYBOX=/bin/busybox
# The kit's mock resource is concourse/mock-resource at this version (the kit's README).
MOCK_VERSION=0.14.2
ensure_parts() {
  local missing=()
  [ -x "$CONTAINERD" ] && [ -x "$SHIM" ] || missing+=(containerd)
  [ -x "$RUNC" ] || missing+=(runc)
  [ -x "$CNI_DIR/bridge" ] || missing+=(containernetworking-plugins)
  if [ ! -x "$BUSYBOX" ] || ldd "$BUSYBOX" >/dev/null 2>&1; then missing+=(busybox-static); fi
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages: ${missing[*]} (apt-get install them, as root)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "could not install ${missing[*]}"
}
ensure_parts

parts=("$kit" "$CONTAINERD" "$SHIM" "$RUNC" "$BUSYBOX" "${BASH_SOURCE[0]}" "$CNI_DIR"/*)
key=$(sha256sum "${parts[@]}" | awk '{print $1}' | sha256sum | cut -c1-16)
version=$(basename "$kit" | sed -E 's/^concourse-(.*)-kit\.tar\.xz$/\1/')
out="$cache/$key/concourse-$version-linux-amd64.tgz"
if [ -f "$out" ]; then
  echo "$out"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$kit" -C "$work"
kitdir="$work/concourse-$version"
[ -d "$kitdir" ] || die "$kit does not unpack to concourse-$version/"
(cd "$kitdir" && sha256sum -c --quiet SHA256SUMS) || die "$kit: its parts do not match its SHA256SUMS"

tree="$work/release/concourse"
mkdir -p "$tree/bin" "$tree/resource-types/mock"
install -m 0755 "$kitdir/bin/concourse" "$kitdir/bin/init" "$CONTAINERD" "$SHIM" "$RUNC" "$tree/bin/"
install -m 0755 "$CNI_DIR"/* "$tree/bin/"

# The mock resource type's image: busybox-static with a link per applet, and the resource.
rootfs="$work/mock-rootfs"
mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/root" "$rootfs/usr" "$rootfs/opt/resource"
install -m 0755 "$BUSYBOX" "$rootfs/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ -e "$rootfs/bin/$applet" ] || ln -s busybox "$rootfs/bin/$applet"
done
ln -s bin "$rootfs/sbin"
ln -s ../bin "$rootfs/usr/bin"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"
install -m 0755 "$kitdir"/resource-types/mock/opt-resource/* "$rootfs/opt/resource/"
reproducible_tar() { tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 "$@"; }
reproducible_tar -C "$rootfs" -cf - . | gzip -9n >"$tree/resource-types/mock/rootfs.tgz"
printf '{"type":"mock","version":"%s","privileged":false}\n' "$MOCK_VERSION" >"$tree/resource-types/mock/resource_metadata.json"

mkdir -p "$(dirname "$out")"
reproducible_tar -C "$work/release" -cf - concourse | gzip -1n >"$out.tmp"
mv -f "$out.tmp" "$out"
echo "$out"
