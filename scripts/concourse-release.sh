#!/usr/bin/env bash
# Finds the Concourse release for this repo's dev stack and tests: the official
# concourse-<version>-linux-amd64.tgz, which no package registry serves, so it is supplied:
#
#   GPU_WORKERS_CONCOURSE_RELEASE=FILE   that tarball (any name; it must unpack to concourse/bin/concourse)
#   GPU_WORKERS_CONCOURSE_RELEASE=DIR    that tarball unpacked (DIR holds concourse/, or is it): packed
#                                        again, reproducibly, into the cache
#   GPU_WORKERS_CONCOURSE_SHA256=SUM     no file: download the official release of
#                                        GPU_WORKERS_CONCOURSE_VERSION (default below) from its release
#                                        page into the cache, and use it only if its sha256 is SUM
#
#   concourse-release.sh            prints the tarball's path, then its version, one per line
#
# Exits 3, saying what to set, when no release is supplied; 1 when one is supplied but unusable.
# Users of the stacks give their release as concourse.binary {url, sha256} or {path} instead.
set -euo pipefail

DEFAULT_VERSION=8.2.5
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/concourse"
given=${GPU_WORKERS_CONCOURSE_RELEASE:-}
sum=${GPU_WORKERS_CONCOURSE_SHA256:-}
version=${GPU_WORKERS_CONCOURSE_VERSION:-$DEFAULT_VERSION}

die() { echo "concourse-release: $*" >&2; exit "${2:-1}"; }

# version_of TREE: the version the release's own binary reports (concourse --version prints it alone).
version_of() {
  local v
  v=$("$1/concourse/bin/concourse" --version 2>/dev/null | head -n 1) || die "$1/concourse/bin/concourse --version failed"
  [[ $v =~ ^[0-9]+(\.[0-9]+)+$ ]] || die "$1/concourse/bin/concourse --version printed '$v', not a version"
  printf '%s\n' "$v"
}

reproducible_tar() { tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 "$@"; }

if [ -n "$given" ] && [ -d "$given" ]; then
  tree=$(cd "$given" && pwd)
  [ -x "$tree/concourse/bin/concourse" ] || { [ -x "$tree/bin/concourse" ] && [ "$(basename "$tree")" = concourse ] && tree=$(dirname "$tree"); }
  [ -x "$tree/concourse/bin/concourse" ] || die "$given holds no concourse/bin/concourse: give the official release tarball, or the folder it unpacks to"
  version=$(version_of "$tree")
  # The cache key: every file's path, mode and bytes.
  key=$(cd "$tree" && find concourse -type f -printf '%p %m\n' | LC_ALL=C sort | while read -r f m; do printf '%s %s %s\n' "$f" "$m" "$(sha256sum <"$f" | cut -d' ' -f1)"; done | sha256sum | cut -c1-16)
  out="$cache/$key/concourse-$version-linux-amd64.tgz"
  if [ ! -f "$out" ]; then
    mkdir -p "$(dirname "$out")"
    reproducible_tar -C "$tree" -cf - concourse | gzip -1n >"$out.tmp"
    mv -f "$out.tmp" "$out"
  fi
elif [ -n "$given" ]; then
  [ -f "$given" ] || die "GPU_WORKERS_CONCOURSE_RELEASE=$given is neither a file nor a folder"
  out=$(cd "$(dirname "$given")" && pwd)/$(basename "$given")
  listing=$(tar -tzf "$out" 2>/dev/null | head -n 400) || die "$given is not a gzipped tarball"
  grep -qx 'concourse/bin/concourse' <<<"$listing" || die "$given holds no concourse/bin/concourse: is it the official linux-amd64 release?"
  if [[ $(basename "$out") =~ ^concourse-([0-9]+(\.[0-9]+)+)-linux-amd64\.tgz$ ]]; then
    version=${BASH_REMATCH[1]}
  else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    tar -xzf "$out" -C "$work" concourse/bin/concourse
    version=$(version_of "$work")
  fi
elif [ -n "$sum" ]; then
  [[ $sum =~ ^[0-9a-f]{64}$ ]] || die "GPU_WORKERS_CONCOURSE_SHA256 must be 64 hex digits"
  [[ $version =~ ^[0-9]+(\.[0-9]+)+$ ]] || die "GPU_WORKERS_CONCOURSE_VERSION must be a version such as $DEFAULT_VERSION"
  out="$cache/$sum/concourse-$version-linux-amd64.tgz"
  if [ ! -f "$out" ]; then
    url="https://github.com/concourse/concourse/releases/download/v$version/concourse-$version-linux-amd64.tgz"
    command -v curl >/dev/null 2>&1 || die "curl is needed to download $url"
    mkdir -p "$(dirname "$out")"
    curl -fsSL --retry 2 -o "$out.part" "$url" || { rm -f "$out.part"; die "cannot download $url" 3; }
    got=$(sha256sum "$out.part" | cut -d' ' -f1)
    [ "$got" = "$sum" ] || { rm -f "$out.part"; die "$url has sha256 $got, not $sum" 1; }
    mv -f "$out.part" "$out"
  fi
else
  die "no Concourse release: set GPU_WORKERS_CONCOURSE_RELEASE to the official concourse-<version>-linux-amd64.tgz (or the folder it unpacks to), or GPU_WORKERS_CONCOURSE_SHA256 to the sha256 of concourse-$version-linux-amd64.tgz to download it" 3
fi

printf '%s\n%s\n' "$out" "$version"
