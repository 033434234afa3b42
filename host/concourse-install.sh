#!/usr/bin/env bash
# Installs a Concourse release (web and worker run the same tarball) under PREFIX/concourse.
#   concourse-install.sh ensure --version V (--url URL --sha256 HEX | --archive PATH)
#   concourse-install.sh check  --version V (--url URL --sha256 HEX | --archive PATH)
#   concourse-install.sh remove           (its own work, under the users' lock: drop)
#   concourse-install.sh start --unit NAME --watch FILE...
#   concourse-install.sh stop  --unit NAME
# The archive is Concourse's release tarball (concourse/bin/concourse inside). A release is
# unpacked once: a marker records its version and checksum, and ensure does nothing while the
# marker and the binary are there. It prints "changed" when it unpacked a release.
#
# start enables the unit (web or worker) and restarts it when a watched file or the installed
# release changed since it last started it, or when the unit is not running; it prints
# "restarted" when it did. stop disables and stops the unit and forgets what it started.
#
# A web and a worker on one host share the release: each unit start runs is a user of it
# (ownership.sh), stop takes that user away, and remove deletes the release only when no user
# is left, so removing one never breaks the other. A PREFIX/concourse the host had before the
# first install is kept aside (a copy in the state folder, made before anything is replaced) and
# put back by that last remove.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
PREFIX=${GPU_WORKERS_CONCOURSE_PREFIX:-/usr/local}
MARKER="$STATE_DIR/concourse.installed"
KEPT="$STATE_DIR/concourse.kept"
USERS="$STATE_DIR/concourse.users"
OWNERSHIP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/ownership.sh"

die() { echo "concourse-install: $*" >&2; exit 1; }

action=${1:-}; shift || true
version=""; url=""; sha=""; archive=""; unit=""; watch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --url) url=$2; shift 2 ;;
    --sha256) sha=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --watch) watch+=("$2"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

# What the marker must say for the release asked for: "VERSION SHA256".
wanted() {
  [ -n "$version" ] || die "--version is required"
  if [ -n "$url" ]; then
    [ -n "$sha" ] || die "--url needs --sha256"
    echo "${version} ${sha}"
  else
    [ -n "$archive" ] || die "give --url URL --sha256 HEX or --archive PATH"
    [ -r "$archive" ] || die "archive ${archive} is missing"
    echo "${version} $(sha256sum "$archive" | cut -d' ' -f1)"
  fi
}

# Before the first install: a release the host had there is copied aside whole, and only then
# replaced (a run cut short copies again, or finds the copy made).
keep_hosts_release() {
  if [ -f "$MARKER" ] || [ -e "$KEPT" ]; then return 0; fi
  if [ ! -e "$PREFIX/concourse" ] && [ ! -L "$PREFIX/concourse" ]; then return 0; fi
  mkdir -p "$STATE_DIR"
  rm -rf "$KEPT.tmp"
  cp -a "$PREFIX/concourse" "$KEPT.tmp"
  mv "$KEPT.tmp" "$KEPT"
  echo "concourse-install: the host's own $PREFIX/concourse is kept aside in $KEPT; remove puts it back" >&2
}

installed() {
  [ "$(cat "$MARKER" 2>/dev/null || true)" = "$1" ] && [ -x "$PREFIX/concourse/bin/concourse" ]
}

ensure() {
  local want
  want=$(wanted)
  installed "$want" && return 0
  # A global and an EXIT trap: a RETURN trap would outlive this function, and never runs on die.
  unpack_dir=$(mktemp -d)
  trap 'rm -rf "$unpack_dir"' EXIT
  if [ -n "$url" ]; then
    command -v curl >/dev/null 2>&1 || die "curl is needed to download ${url}"
    curl -fsSL --retry 3 -o "$unpack_dir/concourse.tgz" "$url" || die "could not download ${url}"
    echo "${sha}  $unpack_dir/concourse.tgz" | sha256sum -c --quiet - || die "${url} does not match sha256 ${sha}"
    archive="$unpack_dir/concourse.tgz"
  fi
  tar -xzf "$archive" -C "$unpack_dir" || die "${archive} is not a gzip tarball"
  [ -x "$unpack_dir/concourse/bin/concourse" ] || die "${archive} has no concourse/bin/concourse"
  keep_hosts_release
  rm -rf "$PREFIX/concourse.new"
  mv "$unpack_dir/concourse" "$PREFIX/concourse.new"
  rm -rf "$PREFIX/concourse"
  mv "$PREFIX/concourse.new" "$PREFIX/concourse"
  mkdir -p "$STATE_DIR"
  echo "$want" >"$MARKER"
  echo changed
}

check() {
  installed "$(wanted)" || die "Concourse ${version} is not the installed release (marker: $(cat "$MARKER" 2>/dev/null || echo none))"
}

remove() {
  if [ ! -f "$MARKER" ] && [ ! -e "$KEPT" ]; then return 0; fi
  bash "$OWNERSHIP" if-unused "$USERS" bash "${BASH_SOURCE[0]}" drop
}

# The release goes, and the host's own comes back where it was kept. Each part is done again by
# a remove cut short: the marker goes with ours, the copy once the host's is back in place.
drop() {
  if [ -f "$MARKER" ]; then
    rm -rf -- "$PREFIX/concourse"
    rm -f "$MARKER"
  fi
  [ -e "$KEPT" ] || return 0
  if [ ! -e "$PREFIX/concourse" ] && [ ! -L "$PREFIX/concourse" ]; then
    rm -rf "$PREFIX/concourse.restore"
    cp -a "$KEPT" "$PREFIX/concourse.restore"
    mv "$PREFIX/concourse.restore" "$PREFIX/concourse"
    echo "concourse-install: the host's own $PREFIX/concourse is back" >&2
  fi
  rm -rf "$KEPT"
}

start() {
  [ -n "$unit" ] || die "--unit is required"
  [ -f "$MARKER" ] || die "no Concourse release is installed: ensure comes first"
  local stamp="$STATE_DIR/${unit}.sha256" sum
  # The marker (version + archive checksum) counts too: a new release must restart the unit,
  # which otherwise keeps running the old, deleted binary.
  sum=$(cat "${watch[@]}" "$MARKER" | sha256sum | cut -d' ' -f1)
  bash "$OWNERSHIP" user-add "$USERS" "$unit"
  systemctl daemon-reload
  systemctl enable "$unit" >/dev/null 2>&1
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ] || ! systemctl is-active --quiet "$unit"; then
    systemctl restart "$unit"
    echo "$sum" >"$stamp"
    echo restarted
  fi
}

stop() {
  [ -n "$unit" ] || die "--unit is required"
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  rm -f "$STATE_DIR/${unit}.sha256"
  bash "$OWNERSHIP" user-remove "$USERS" "$unit"
}

case "$action" in
  ensure) ensure ;;
  check) check ;;
  remove) remove ;;
  drop) drop ;;
  start) start ;;
  stop) stop ;;
  *) die "usage: concourse-install.sh ensure|check|remove|start|stop ..." ;;
esac
