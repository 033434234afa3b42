#!/usr/bin/env bash
# Puts the runc wrapper where runc is, and the real runc aside; or puts runc back.
#   install-runc-wrapper.sh install [--runc PATH] [--wrapper PATH] [--sha256 HEX] [--aside PATH] [--state PATH] [--runc-cves warn|refuse]
#   install-runc-wrapper.sh remove  [--runc PATH] [--aside PATH] [--state PATH] [--jobs DIR]
#   install-runc-wrapper.sh check   [--aside PATH] [--state PATH]   exit 0 while the wrapper is in place
# --runc     the runtime path callers use (default: the state's, else `command -v runc`)
# --wrapper  the wrapper binary to install (default /usr/local/lib/gpu-workers/runc-wrapper)
# --sha256   its expected checksum (a half-uploaded binary is refused)
# --aside    where the real runc is kept (default /usr/local/lib/gpu-workers/runc.real);
#            the wrapper's settings name this path as its realRuntime
# --state    what was installed, to tell the wrapper from a runc the distribution put back
#            (default: the aside path + .state)
# --jobs     the wrapper's GPU job records (its state folder's gpu-jobs): remove takes them back,
#            with the dcgm-exporter mapping files and folders the wrapper made (default: none)
# --runc-cves what install does when the real runc is open to a known container breakout
#            (RUNC_CVES below): warn (default) says so on a gpu-workers-warning: line, naming the
#            CVE and the versions that fix it; refuse also fails, changing nothing
# Both actions are idempotent. Install after a package upgrade wrote a new runc over the
# wrapper keeps that new runc as the real one; remove restores the original byte for byte.
#
# Interrupted at any point (killed, power lost), the next install or remove finishes the
# job and the real runc is never lost: the state names every wrapper that may be at the
# runtime path before the path changes, and the real runc is set aside before the wrapper
# takes its place. Each file changes in one rename.
set -euo pipefail

LIB_DIR=/usr/local/lib/gpu-workers

die() { echo "install-runc-wrapper: $*" >&2; exit 1; }
say() { echo "install-runc-wrapper: $*"; }

action=${1:-}; shift || true
runc=""; wrapper="$LIB_DIR/runc-wrapper"; aside="$LIB_DIR/runc.real"; state=""; expected=""; runc_cves=warn; jobs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runc) runc=${2:?--runc needs a path}; shift 2 ;;
    --wrapper) wrapper=${2:?--wrapper needs a path}; shift 2 ;;
    --sha256) expected=${2:?--sha256 needs a checksum}; shift 2 ;;
    --aside) aside=${2:?--aside needs a path}; shift 2 ;;
    --state) state=${2:?--state needs a path}; shift 2 ;;
    --runc-cves) runc_cves=${2:?--runc-cves needs warn or refuse}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a folder}; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
state=${state:-$aside.state}
case "$runc_cves" in warn | refuse) ;; *) die "--runc-cves takes warn or refuse (got '$runc_cves')" ;; esac

# runc's known container breakouts: the CVE, the first release of each line that fixes it (a
# version of an older line has no fix), and what it lets a container do.
RUNC_CVES=(
  "CVE-2019-5736|1.0.0-rc7|a container overwrites the host's runc binary and runs as root on the host"
  "CVE-2021-30465|1.0.0-rc95|a symlink swapped in during mount setup mounts a host path into the container"
  "CVE-2024-21626|1.1.12|a file descriptor leaked into the container reaches the host's file system"
  "CVE-2025-31133|1.2.8 1.3.3 1.4.0|a race on the /dev/null bind of maskedPaths lets a container write to host files"
  "CVE-2025-52565|1.2.8 1.3.3 1.4.0|a race on the /dev/console bind lets a container write to host files"
  "CVE-2025-52881|1.2.8 1.3.3 1.4.0|writes redirected past the LSM reach host /proc files"
)

# version_less A B: whether version A comes before B (runc's -rcN before its release, as dpkg orders ~rcN).
version_less() {
  local a=${1//-rc/\~rc} b=${2//-rc/\~rc}
  if command -v dpkg >/dev/null 2>&1; then dpkg --compare-versions "$a" lt "$b"; else [ "$a" != "$b" ] && [ "$(printf '%s\n%s\n' "$a" "$b" | sort -V | head -n 1)" = "$a" ]; fi
}

# fixed_in VERSION FIXES: whether VERSION has the fix, by its own release line's first fixed
# release, or by being newer than every line's. Builtins but for the comparison: it runs for
# every CVE, and each process started costs the step more than the work.
fixed_in() {
  local version=$1 fix newest="" major minor _
  IFS=. read -r major minor _ <<<"$version"
  for fix in $2; do
    [ "${fix%.*}" = "$major${minor:+.$minor}" ] && { version_less "$version" "$fix" && return 1 || return 0; }
    newest=$fix
  done
  ! version_less "$version" "$newest"
}

# cve_check RUNC: the known breakouts RUNC is open to, each on a gpu-workers-warning: line; a
# fix a distribution backported (its package's changelog names the CVE) counts as fixed.
cve_check() {
  local real=$1 version package changelog="" entry id fixes what found=()
  version=$("$real" --version 2>/dev/null | sed -n '1s/^runc version //p')
  [ -n "$version" ] || { say "cannot tell the version of $real: no CVE check"; return 0; }
  package=$(dpkg -S "$(readlink -f "$real")" 2>/dev/null | cut -d: -f1 | head -n 1 || true)
  [ -n "$package" ] && changelog=$(zcat "/usr/share/doc/$package/changelog.Debian.gz" 2>/dev/null || true)
  for entry in "${RUNC_CVES[@]}"; do
    IFS='|' read -r id fixes what <<<"$entry"
    fixed_in "${version%%+*}" "$fixes" && continue
    [[ $changelog =~ (^|[^[:alnum:]_])$id([^[:alnum:]_]|$) ]] && continue
    found+=("gpu-workers-warning: runc $version at $real${package:+ (package $package)} is open to $id: $what; fixed in runc ${fixes// /, }")
  done
  [ ${#found[@]} -gt 0 ] || return 0
  printf '%s\n' "${found[@]}" >&2
  [ "$runc_cves" = refuse ] && die "refusing to wrap $real: it is open to ${#found[@]} known container breakout(s) above (--runc-cves refuse); install a runc with the fixes"
  return 0
}

sha() {
  local sum _
  read -r sum _ < <(sha256sum "$1")
  echo "$sum"
}

# state file lines: runc=PATH; installed=SHA256 of the wrapper that is (or is being put)
# there; previous=SHA256 of a wrapper it replaces, present only while an update is under way.
state_runc=""; state_installed=""; state_previous=""
if [ -f "$state" ]; then
  while IFS='=' read -r key value; do
    case "$key" in
      runc) state_runc=$value ;;
      installed) state_installed=$value ;;
      previous) state_previous=$value ;;
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

# write_state INSTALLED [PREVIOUS]: always before the runtime path changes.
write_state() {
  local tmp="$state.tmp"
  [ -d "${state%/*}" ] || mkdir -p "${state%/*}"
  { printf 'runc=%s\ninstalled=%s\n' "$runc" "$1"
    if [ -n "${2:-}" ]; then printf 'previous=%s\n' "$2"; fi
  } > "$tmp"
  mv -f -- "$tmp" "$state"
}

# is_wrapper FILE SHA256: FILE is a wrapper the state knows, the wrapper binary itself, or
# any build of the wrapper (each holds the name of its loop marker; no runc does).
is_wrapper() {
  local file=$1 sum=$2
  if [ "$sum" = "$state_installed" ] || [ "$sum" = "$state_previous" ]; then return 0; fi
  if [ -f "$wrapper" ] && [ "$sum" = "$(sha "$wrapper")" ]; then return 0; fi
  grep -qF GPU_WORKERS_WRAPPER_ACTIVE -- "$file"
}

# Leftovers of a copy that was interrupted before its rename.
rm_partial_copies() {
  rm -f -- "$runc.gpu-workers.tmp" "$aside.gpu-workers.tmp" "$state.tmp"
}

install() {
  resolve_runc
  [ -f "$wrapper" ] || die "the wrapper binary $wrapper is missing"
  [ -e "$runc" ] || die "$runc does not exist: install the runc package first"
  [ ! -L "$runc" ] || die "$runc is a symlink; pass the real file as --runc"
  [ -f "$runc" ] || die "$runc is not a regular file"
  [ "$runc" != "$aside" ] || die "--aside must differ from --runc"
  rm_partial_copies
  # The real runc: set aside already, or still at the runtime path.
  if [ -f "$state" ] && [ -f "$aside" ]; then cve_check "$aside"; else cve_check "$runc"; fi
  chmod 0755 "$wrapper"
  local current wanted
  current=$(sha "$runc")
  wanted=$(sha "$wrapper")
  if [ -n "$expected" ] && [ "$wanted" != "$expected" ]; then
    die "$wrapper has sha256 $wanted, expected $expected (incomplete upload?); nothing was changed"
  fi
  if [ -f "$state" ] && is_wrapper "$runc" "$current"; then
    # A wrapper is in place (this version, an older one, or an update that was interrupted).
    [ -f "$aside" ] || die "$runc holds the wrapper but the real runc $aside is missing; reinstall the runc package, then run install again"
    if [ "$current" = "$wanted" ]; then
      say "$runc already holds the wrapper (real runc at $aside)"
    else
      write_state "$wanted" "$current"
      replace_with "$wrapper" "$runc"
      chmod 0755 "$runc"
      say "updated the wrapper at $runc"
    fi
    write_state "$wanted"
    return 0
  fi
  if is_wrapper "$runc" "$current"; then
    die "$runc already is the wrapper but $state does not say where the real runc is; put the real runc back at $runc first"
  fi
  # $runc is a real runtime: a first install, an install that was interrupted before the
  # wrapper took its place, or a package upgrade that wrote over the wrapper.
  if [ -n "$state_installed" ] && [ -f "$aside" ] && ! cmp -s -- "$runc" "$aside"; then
    say "$runc was replaced since the wrapper was installed (package upgrade?): keeping the new runc as the real one"
  fi
  write_state "$wanted"
  [ -d "${aside%/*}" ] || mkdir -p "${aside%/*}"
  replace_with "$runc" "$aside"
  replace_with "$wrapper" "$runc"
  chmod 0755 "$runc"
  say "installed the wrapper at $runc; the real runc is at $aside"
}

# root_only DIR: DIR and every folder above it are real folders (no link), root's, and writable
# by nobody else, but one above DIR may be with the sticky bit; as the wrapper walks them
# (wrapper/safepath.go). Only root can then change the path, so it leads where it says. Else
# why says which folder fails, and how.
why=""
root_only() {
  local at="" part last mode owner
  local -a parts
  [[ $1 == /* ]] || return 1
  IFS=/ read -r -a parts <<<"${1#/}"
  parts=("" "${parts[@]}")
  last=$(( ${#parts[@]} - 1 ))
  for part in "${!parts[@]}"; do
    at=${at%/}/${parts[$part]}
    if [ ! -d "$at" ] || [ -L "$at" ]; then why="$at is a link or no folder"; return 1; fi
    read -r owner mode < <(stat -c '%u %a' -- "$at")
    [ "$owner" = 0 ] || { why="$at is not root's (owner uid $owner)"; return 1; }
    (( 8#$mode & 8#022 )) || continue
    if [ "$part" = "$last" ] || ! (( 8#$mode & 8#1000 )); then why="others may write $at (mode $mode)"; return 1; fi
  done
}

# The wrapper's GPU job records, and what it made for dcgm-exporter: the mapping file of each GPU
# it kept records for, and the folders it made on the way (its .made list), those only when
# empty. Files in the mapping folder that the wrapper did not write, and a folder it did not
# make, stay.
forget_gpu_jobs() {
  [ -n "$jobs" ] && [ -e "$jobs" ] || return 0
  root_only "$jobs" || { say "leaving the GPU job records $jobs as they are: $why"; return 0; }
  local mapping="" gpu made=() i parent
  if [ -f "$jobs/.mapping-dir" ] && [ ! -L "$jobs/.mapping-dir" ]; then mapping=$(head -n 1 -- "$jobs/.mapping-dir"); fi
  if [ -n "$mapping" ] && ! root_only "$mapping"; then
    say "leaving the dcgm-exporter mapping files in $mapping: $why"
    mapping=""
  fi
  if [ -n "$mapping" ]; then
    for gpu in "$jobs"/*; do
      gpu=${gpu##*/}
      [[ $gpu =~ ^[0-9]{1,8}$ ]] && rm -f -- "$mapping/$gpu" "$mapping/.tmp-$gpu"
    done
  fi
  if [ -f "$jobs/.made" ] && [ ! -L "$jobs/.made" ]; then mapfile -t made < "$jobs/.made"; fi
  for (( i = ${#made[@]} - 1; i >= 0; i-- )); do
    # Its parent only root can change, so the folder there is the one the wrapper made.
    parent=${made[$i]%/*}
    if root_only "${parent:-/}"; then rmdir -- "${made[$i]}" 2>/dev/null || true; else say "leaving ${made[$i]}: $why"; fi
  done
  rm -rf -- "$jobs"
  say "removed the wrapper's GPU job records $jobs${mapping:+ and its dcgm-exporter mapping files in $mapping}"
}

remove() {
  if [ ! -f "$state" ]; then
    rm -f -- "$state.tmp"
    forget_gpu_jobs
    say "the wrapper is not installed (no $state)"
    return 0
  fi
  resolve_runc
  rm_partial_copies
  if [ -f "$runc" ] && is_wrapper "$runc" "$(sha "$runc")"; then
    [ -f "$aside" ] || die "$runc holds the wrapper but the real runc $aside is missing; reinstall the runc package"
    replace_with "$aside" "$runc"
    say "restored the real runc at $runc"
  else
    say "$runc does not hold the wrapper (package upgrade, or an install that was interrupted); leaving it as it is"
  fi
  # No wrapper runs from here on to add records.
  forget_gpu_jobs
  # The state goes last: while it is there, the next remove still knows the wrapper.
  rm -f -- "$aside"
  rm -f -- "$state"
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
  *) die "usage: install-runc-wrapper.sh install|remove|check [--runc PATH] [--wrapper PATH] [--sha256 HEX] [--aside PATH] [--state PATH] [--jobs DIR]" ;;
esac
