#!/usr/bin/env bash
# What a host had before gpu-workers changed it, and what gpu-workers owns there: the records
# every step keeps so that its remove takes away only what it installed and puts back what was
# there. Each record is written before the change it describes (in one rename), so a run cut
# short (a lost SSH session) leaves a record that the next run, ensure or remove, finishes.
#
#   ownership.sh apt-install RECORD APT-ARGS...  apt-get install APT-ARGS. RECORD gains the
#       packages (dependencies included) that were not installed before and are now.
#   ownership.sh apt-remove RECORD               purges what RECORD names (one the host had only
#       as left-over conffiles goes back to that); nothing if apt would take a package along
#       that is not in RECORD (the host came to depend on it): that is said, and RECORD stays.
#   ownership.sh service-keep RECORD UNIT        notes, once, whether UNIT is enabled and active.
#   ownership.sh service-restore RECORD UNIT     puts that back: enable or disable, restart
#       (what it reads may have been put back too) or stop. Nothing without a record.
#   ownership.sh file-keep FILE                  before FILE is first written: keeps what is at
#       FILE aside, or notes that nothing was, once.
#   ownership.sh file-adopt FILE                 FILE as it is now is ours (written by an earlier
#       version, which kept no record): notes that nothing was there, unless a record exists.
#   ownership.sh file-restore FILE               puts the original back byte for byte, or removes
#       FILE when nothing was there; nothing without a record (done already).
#   ownership.sh user-add RECORD NAME            NAME uses a shared install (one line each).
#   ownership.sh user-remove RECORD NAME         NAME no longer does.
#   ownership.sh if-unused RECORD COMMAND...     runs COMMAND when RECORD lists no user, under the
#       same lock as user-add, so no user joins halfway.
#
# The file records are those of the program's placed files (components/providers/host/
# resources.ts writes them for the files it places), so a step can put back a placed file's
# original itself when it must act after it (restart the service that reads it).
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}

die() { echo "ownership: $*" >&2; exit 1; }
say() { echo "ownership: $*"; }

# Writes stdin to FILE in one rename.
write_record() {
  local file=$1
  mkdir -p "$(dirname "$file")"
  cat >"$file.tmp"
  mv -f "$file.tmp" "$file"
}

# ---- packages

# dpkg's status of a package (installed, config-files, half-configured, ...); nothing for one
# dpkg never saw.
status_of() { dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null || true; }

# Whether RECORD names PACKAGE.
recorded() { [ -f "$2" ] && awk -v p="$1" '$1 == p { found = 1 } END { exit !found }' "$2"; }

# Moves the packages of an install (RECORD.pending: "PACKAGE STATUS-BEFORE") that changed since
# into RECORD. Run after every install, and first by every run: it finishes one cut short.
settle() {
  local record=$1 pending="$1.pending" pkg before now
  [ -f "$pending" ] || return 0
  {
    [ ! -f "$record" ] || cat "$record"
    while read -r pkg before; do
      now=$(status_of "$pkg")
      case "$now" in ""|not-installed|"$before") continue ;; esac
      recorded "$pkg" "$record" || echo "$pkg $before"
    done <"$pending"
  } | write_record "$record"
  [ -s "$record" ] || rm -f "$record"
  rm -f "$pending"
}

apt_install() {
  local record=$1; shift
  [ $# -gt 0 ] || die "apt-install needs apt-get install arguments"
  settle "$record"
  local plan pkg status rc=0
  # What apt would install: "Inst PKG (VERSION ...)"; a package it upgrades or downgrades shows
  # its installed version in brackets first, and is the host's.
  plan=$(apt-get install -s -q "$@" 2>&1) || { echo "$plan" >&2; return 100; }
  sed -n 's/^Inst \([^ ]*\) (.*/\1/p' <<<"$plan" | while read -r pkg; do
    status=$(status_of "$pkg")
    case "$status" in
      ""|not-installed) echo "$pkg not-installed" ;;
      config-files) echo "$pkg config-files" ;;
    esac
  done | write_record "$record.pending"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" || rc=$?
  settle "$record"
  return "$rc"
}

apt_remove() {
  local record=$1 pkg before now purge=() back=()
  settle "$record"
  [ -f "$record" ] || { say "nothing installed by gpu-workers ($(basename "$record"))"; return 0; }
  while read -r pkg before; do
    now=$(status_of "$pkg")
    case "$now" in ""|not-installed) continue ;; esac
    if [ "${before:-not-installed}" = config-files ]; then
      [ "$now" = config-files ] || back+=("$pkg")
    else
      purge+=("$pkg")
    fi
  done <"$record"
  if [ $((${#purge[@]} + ${#back[@]})) -gt 0 ]; then
    # apt also removes what depends on a package: only when that is ours too.
    local also
    also=$({
      if [ ${#purge[@]} -gt 0 ]; then apt-get purge -s -q "${purge[@]}"; fi
      if [ ${#back[@]} -gt 0 ]; then apt-get remove -s -q "${back[@]}"; fi
    } | sed -n 's/^\(Purg\|Remv\) \([^ ]*\).*/\2/p' | grep -vxF -f <(cut -d' ' -f1 "$record") | sort -u | tr '\n' ' ' || true)
    if [ -n "$also" ]; then
      say "left installed: ${purge[*]}${back[*]:+ ${back[*]}}: removing them would take along ${also% }, which the host installed since"
      return 0
    fi
    if [ ${#purge[@]} -gt 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${purge[@]}"; fi
    if [ ${#back[@]} -gt 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "${back[@]}"; fi
  fi
  rm -f "$record"
}

# ---- services

service_keep() {
  local record=$1 unit=$2 enabled active
  [ ! -f "$record" ] || return 0
  # is-enabled prints nothing (older systemd) or "not-found" for a unit that does not exist.
  enabled=$(systemctl is-enabled "$unit" 2>/dev/null || true)
  active=$(systemctl is-active "$unit" 2>/dev/null || true)
  echo "${enabled:-not-found} ${active:-inactive}" | write_record "$record"
}

service_restore() {
  local record=$1 unit=$2 enabled active
  [ -f "$record" ] || return 0
  read -r enabled active <"$record"
  case "$enabled" in
    enabled) systemctl enable "$unit" >/dev/null 2>&1 || say "could not enable $unit again" ;;
    disabled|not-found) systemctl disable "$unit" >/dev/null 2>&1 || true ;;
    *) ;; # static, masked, ...: nothing of ours to undo
  esac
  if [ "$active" = active ]; then
    systemctl restart "$unit" || say "could not start $unit again"
  else
    systemctl stop "$unit" >/dev/null 2>&1 || true
  fi
  rm -f "$record"
}

# ---- files

# The records of a path, as the program's placed files keep them (components/lib/host/steps.ts):
# STATE_DIR/placed/PATH/original (what was there), or .../absent (nothing was).
file_records() {
  case "$1" in /*) ;; *) die "expected an absolute path, got '$1'" ;; esac
  record="$STATE_DIR/placed$1"
  original="$record/original"
  absent="$record/absent"
}

has_record() { [ -e "$original" ] || [ -L "$original" ] || [ -e "$absent" ]; }

file_keep() {
  local file=$1 record original absent
  file_records "$file"
  has_record && return 0
  mkdir -p "$record"
  if [ -e "$file" ] || [ -L "$file" ]; then
    cp -a -- "$file" "$original.tmp"
    mv -f -- "$original.tmp" "$original"
  else
    : >"$absent"
  fi
}

file_adopt() {
  local file=$1 record original absent
  file_records "$file"
  has_record && return 0
  mkdir -p "$record"
  : >"$absent"
}

file_restore() {
  local file=$1 record original absent
  file_records "$file"
  if [ -e "$original" ] || [ -L "$original" ]; then
    mkdir -p "$(dirname "$file")"
    # One rename where both are on one filesystem; else mv copies, then deletes the record:
    # a restore cut short is done again from the record.
    mv -f -- "$original" "$file"
    say "put back the original $file"
  elif [ -e "$absent" ]; then
    rm -f -- "$file"
  fi
  rm -f -- "$absent"
  # The record's folders, once empty (a placed file's users stay), up to STATE_DIR.
  (cd "$STATE_DIR" 2>/dev/null && rmdir -p --ignore-fail-on-non-empty "placed$file" 2>/dev/null) || true
}

# ---- users of a shared install

# Holds the lock of RECORD's folder (never removed, so no one waits on a lock that is gone).
lock() {
  mkdir -p "$(dirname "$1")"
  exec 9<"$(dirname "$1")"
  flock 9
}

user_add() {
  local record=$1 name=$2
  lock "$record"
  grep -qxF -- "$name" "$record" 2>/dev/null && return 0
  { [ ! -f "$record" ] || cat "$record"; echo "$name"; } | write_record "$record"
}

user_remove() {
  local record=$1 name=$2
  lock "$record"
  [ -f "$record" ] || return 0
  { grep -vxF -- "$name" "$record" || true; } | write_record "$record"
  [ -s "$record" ] || rm -f "$record"
}

if_unused() {
  local record=$1; shift
  lock "$record"
  if [ -s "$record" ]; then
    say "still in use by $(tr '\n' ' ' <"$record" | sed 's/ $//'): left in place"
    return 0
  fi
  "$@"
}

action=${1:-}; shift || true
case "$action" in
  apt-install) [ $# -ge 2 ] || die "usage: ownership.sh apt-install RECORD APT-ARGS..."; apt_install "$@" ;;
  apt-remove) [ $# -eq 1 ] || die "usage: ownership.sh apt-remove RECORD"; apt_remove "$1" ;;
  service-keep|service-restore)
    [ $# -eq 2 ] || die "usage: ownership.sh $action RECORD UNIT"
    "service_${action#service-}" "$1" "$2" ;;
  file-keep|file-adopt|file-restore)
    [ $# -eq 1 ] || die "usage: ownership.sh $action FILE"
    "file_${action#file-}" "$1" ;;
  user-add|user-remove)
    [ $# -eq 2 ] || die "usage: ownership.sh $action RECORD NAME"
    "user_${action#user-}" "$1" "$2" ;;
  if-unused) [ $# -ge 2 ] || die "usage: ownership.sh if-unused RECORD COMMAND..."; if_unused "$@" ;;
  *) die "usage: ownership.sh apt-install|apt-remove|service-keep|service-restore|file-keep|file-adopt|file-restore|user-add|user-remove|if-unused ..." ;;
esac
