#!/usr/bin/env bash
# Installs the Concourse binaries and runs the worker unit.
#   concourse-worker.sh ensure --version V (--url URL --sha256 HEX | --archive PATH) --unit NAME --watch FILE...
#                              [--wrap-runc INSTALLER --wrapper PATH --wrapper-sha256 HEX]
#   concourse-worker.sh remove --unit NAME [--wrap-runc INSTALLER]
# The archive is Concourse's release tarball (concourse/bin/concourse inside). The unit is
# restarted only when one of the watched files (unit, env, keys, containerd config) changed.
# Concourse's containerd runs the first runc on PATH, its own bin folder's, for containers
# it creates without runtime options; no containerd setting reaches those, so with
# --wrap-runc the wrapper goes in place of that runc (installed again after every unpack).
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
PREFIX=${GPU_WORKERS_CONCOURSE_PREFIX:-/usr/local}

die() { echo "concourse-worker: $*" >&2; exit 1; }

action=${1:-}; shift || true
version=""; url=""; sha=""; archive=""; unit=""; watch=()
wrap_installer=""; wrapper=""; wrapper_sha=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --url) url=$2; shift 2 ;;
    --sha256) sha=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --watch) watch+=("$2"); shift 2 ;;
    --wrap-runc) wrap_installer=$2; shift 2 ;;
    --wrapper) wrapper=$2; shift 2 ;;
    --wrapper-sha256) wrapper_sha=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$unit" ] || die "--unit is required"
CONCOURSE_RUNC="$PREFIX/concourse/bin/runc"
CONCOURSE_RUNC_ASIDE="$STATE_DIR/concourse-runc.real"

wrap_concourse_runc() {
  [ -n "$wrap_installer" ] || return 0
  if [ -z "$wrapper" ] || [ -z "$wrapper_sha" ]; then die "--wrap-runc needs --wrapper and --wrapper-sha256"; fi
  [ -e "$CONCOURSE_RUNC" ] || die "${CONCOURSE_RUNC} is missing: the Concourse tarball should bring its runc"
  "$wrap_installer" install --runc "$CONCOURSE_RUNC" --wrapper "$wrapper" --sha256 "$wrapper_sha" --aside "$CONCOURSE_RUNC_ASIDE"
}

unwrap_concourse_runc() {
  if [ -z "$wrap_installer" ] || [ ! -x "$wrap_installer" ] || [ ! -e "$CONCOURSE_RUNC_ASIDE" ]; then return 0; fi
  "$wrap_installer" remove --runc "$CONCOURSE_RUNC" --aside "$CONCOURSE_RUNC_ASIDE"
}

install_binaries() {
  local marker="$STATE_DIR/concourse.installed" want
  if [ -n "$url" ]; then
    [ -n "$sha" ] || die "--url needs --sha256"
    want="${version} ${sha}"
  else
    [ -n "$archive" ] || die "give --url URL --sha256 HEX or --archive PATH"
    [ -r "$archive" ] || die "archive ${archive} is missing"
    want="${version} $(sha256sum "$archive" | cut -d' ' -f1)"
  fi
  if [ "$(cat "$marker" 2>/dev/null || true)" = "$want" ] && [ -x "$PREFIX/concourse/bin/concourse" ]; then
    return 0
  fi
  # A global and an EXIT trap: a RETURN trap outlives this function and fires again, with
  # the local gone, when ensure returns; and it never runs when die exits.
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
  rm -rf "$PREFIX/concourse.new"
  mv "$unpack_dir/concourse" "$PREFIX/concourse.new"
  rm -rf "$PREFIX/concourse"
  mv "$PREFIX/concourse.new" "$PREFIX/concourse"
  mkdir -p "$STATE_DIR"
  echo "$want" > "$marker"
}

ensure() {
  install_binaries
  wrap_concourse_runc
  local stamp="$STATE_DIR/${unit}.sha256" sum
  # The install marker (version + archive checksum) counts too: a new release must restart
  # the worker, which otherwise keeps running the old, deleted binary.
  sum=$(cat "${watch[@]}" "$STATE_DIR/concourse.installed" | sha256sum | cut -d' ' -f1)
  systemctl daemon-reload
  systemctl enable "$unit" >/dev/null 2>&1
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ] || ! systemctl is-active --quiet "$unit"; then
    systemctl restart "$unit"
    echo "$sum" > "$stamp"
  fi
  echo "concourse-worker: ${unit} is running Concourse ${version}"
}

remove() {
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  rm -f "$STATE_DIR/${unit}.sha256"
  unwrap_concourse_runc
  if [ -f "$STATE_DIR/concourse.installed" ]; then
    rm -rf "$PREFIX/concourse"
    rm -f "$STATE_DIR/concourse.installed"
  fi
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: concourse-worker.sh ensure|remove ..." ;;
esac
