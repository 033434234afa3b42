#!/usr/bin/env bash
# Puts the runc wrapper where runc is, and the real runc aside; or puts runc back.
#   install-runc-wrapper.sh install [--runc PATH] [--wrapper PATH] [--sha256 HEX] [--aside PATH] [--state PATH]
#   install-runc-wrapper.sh remove  [--runc PATH] [--aside PATH] [--state PATH]
#   install-runc-wrapper.sh check   [--aside PATH] [--state PATH]   exit 0 while the wrapper is in place
# --runc     the runtime path callers use (default: the state's, else `command -v runc`)
# --wrapper  the wrapper binary to install (default /usr/local/lib/gpu-workers/runc-wrapper)
# --sha256   its expected checksum (a half-uploaded binary is refused)
# --aside    where the real runc is kept (default /usr/local/lib/gpu-workers/runc.real);
#            the wrapper's settings name this path as its realRuntime
# --state    what was installed, to tell the wrapper from a runc the distribution put back
#            (default: the aside path + .state)
# Both actions are idempotent. Install after a package upgrade wrote a new runc over the
# wrapper keeps that new runc as the real one; remove restores the original byte for byte.
set -euo pipefail

LIB_DIR=/usr/local/lib/gpu-workers

die() { echo "install-runc-wrapper: $*" >&2; exit 1; }
say() { echo "install-runc-wrapper: $*"; }

action=${1:-}; shift || true
runc=""; wrapper="$LIB_DIR/runc-wrapper"; aside="$LIB_DIR/runc.real"; state=""; expected=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runc) runc=${2:?--runc needs a path}; shift 2 ;;
    --wrapper) wrapper=${2:?--wrapper needs a path}; shift 2 ;;
    --sha256) expected=${2:?--sha256 needs a checksum}; shift 2 ;;
    --aside) aside=${2:?--aside needs a path}; shift 2 ;;
    --state) state=${2:?--state needs a path}; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
state=${state:-$aside.state}

sha() { sha256sum "$1" | cut -d' ' -f1; }

# state file lines: runc=PATH, installed=SHA256 of the wrapper put there.
state_runc=""; state_installed=""
if [ -f "$state" ]; then
  while IFS='=' read -r key value; do
    case "$key" in
      runc) state_runc=$value ;;
      installed) state_installed=$value ;;
    esac
  done < "$state"
fi

resolve_runc() {
  if [ -z "$runc" ]; then runc=$state_runc; fi
  if [ -z "$runc" ]; then runc=$(command -v runc || true); fi
  [ -n "$runc" ] || die "no runc found on PATH; install the runc package or pass --runc PATH"
  case "$runc" in /*) ;; *) die "--runc must be an absolute path (got '$runc')" ;; esac
  if [ -n "$state_runc" ] && [ "$state_runc" != "$runc" ]; then
    die "$state records the wrapper at $state_runc, not $runc; remove it there first or use another --aside"
  fi
}

# Copies src over dst in one rename, keeping src's mode, owner and times.
replace_with() {
  local src=$1 dst=$2 tmp
  tmp="$dst.gpu-workers.tmp"
  cp -p -- "$src" "$tmp"
  mv -f -- "$tmp" "$dst"
}

write_state() {
  local tmp="$state.tmp"
  mkdir -p "$(dirname "$state")"
  printf 'runc=%s\ninstalled=%s\n' "$runc" "$1" > "$tmp"
  mv -f -- "$tmp" "$state"
}

install() {
  resolve_runc
  [ -f "$wrapper" ] || die "the wrapper binary $wrapper is missing"
  [ -e "$runc" ] || die "$runc does not exist: install the runc package first"
  [ ! -L "$runc" ] || die "$runc is a symlink; pass the real file as --runc"
  [ -f "$runc" ] || die "$runc is not a regular file"
  [ "$runc" != "$aside" ] || die "--aside must differ from --runc"
  chmod 0755 "$wrapper"
  local current wanted
  current=$(sha "$runc")
  wanted=$(sha "$wrapper")
  if [ -n "$expected" ] && [ "$wanted" != "$expected" ]; then
    die "$wrapper has sha256 $wanted, expected $expected (incomplete upload?); nothing was changed"
  fi
  if [ -n "$state_installed" ] && { [ "$current" = "$state_installed" ] || [ "$current" = "$wanted" ]; }; then
    # The wrapper is in place (this version or an older one).
    [ -f "$aside" ] || die "$runc holds the wrapper but the real runc $aside is missing; reinstall the runc package, then run install again"
    if [ "$current" = "$wanted" ]; then
      say "$runc already holds the wrapper (real runc at $aside)"
    else
      replace_with "$wrapper" "$runc"
      chmod 0755 "$runc"
      say "updated the wrapper at $runc"
    fi
    write_state "$wanted"
    return 0
  fi
  if [ "$current" = "$wanted" ]; then
    die "$runc already is the wrapper but $state does not say where the real runc is; put the real runc back at $runc first"
  fi
  # $runc is a real runtime: a first install, or a package upgrade wrote over the wrapper.
  mkdir -p "$(dirname "$aside")"
  if [ -n "$state_installed" ]; then
    say "$runc was replaced since the wrapper was installed (package upgrade?): keeping the new runc as the real one"
  fi
  replace_with "$runc" "$aside"
  write_state "$wanted"
  replace_with "$wrapper" "$runc"
  chmod 0755 "$runc"
  say "installed the wrapper at $runc; the real runc is at $aside"
}

remove() {
  if [ ! -f "$state" ]; then
    say "the wrapper is not installed (no $state)"
    return 0
  fi
  resolve_runc
  if [ -f "$runc" ] && [ "$(sha "$runc")" = "$state_installed" ]; then
    [ -f "$aside" ] || die "$runc holds the wrapper but the real runc $aside is missing; reinstall the runc package"
    replace_with "$aside" "$runc"
    say "restored the real runc at $runc"
  else
    say "$runc no longer holds the wrapper (package upgrade?); leaving it as it is"
  fi
  rm -f -- "$aside" "$state"
}

# Exit 0 when the runtime path still holds the wrapper and the real runc is aside (a refresh
# uses it to notice the wrapper was removed by hand).
check() {
  [ -f "$state" ] || die "the wrapper is not installed (no $state)"
  [ -f "$state_runc" ] || die "$state_runc is missing"
  [ "$(sha "$state_runc")" = "$state_installed" ] || die "$state_runc no longer holds the wrapper"
  [ -f "$aside" ] || die "the real runc $aside is missing"
  say "$state_runc holds the wrapper; the real runc is at $aside"
}

case "$action" in
  install) install ;;
  remove) remove ;;
  check) check ;;
  *) die "usage: install-runc-wrapper.sh install|remove|check [--runc PATH] [--wrapper PATH] [--sha256 HEX] [--aside PATH] [--state PATH]" ;;
esac
