#!/usr/bin/env bash
# The files the program places on a host, and each path's records: which resources place it
# (one mark per owner id), and what the host had there before. A command that places or takes
# back files carries it and runs it as `bash -c SCRIPT placed-files.sh ARGS...`
# (components/lib/host/placed-files.ts gives the arguments), so each run has the script of its
# own release and a host gets one login per command; the command's stdin is the data alone. It is
# never a file on the host.
#
#   placed-files.sh place STATE-DIR STAGING-DIR OWNER [text|binary PATH MODE]...
#       OWNER places the files of a set. Its stdin holds each file in the order of the
#       arguments: a header "==> PATH (mode M, N bytes, sha256 SUM) <==", then
#       a text file's N bytes and a newline; a binary's header has "staged copy" for its size,
#       and its bytes wait at STAGING-DIR/SUM (relative: the login user's home). MODE is as
#       `stat -c %a` prints it. Every file is checked first, so a stdin or a staged copy that
#       does not hold what its header says fails the set before any path is claimed or written.
#   placed-files.sh write STATE-DIR OWNER PATH MODE keep|adopt
#       OWNER places one file (a secret: a set would show it) from its stdin; with adopt
#       (a file an earlier version placed, which kept no record) what is at PATH is ours.
#   placed-files.sh release STATE-DIR OWNER [PATH own|other]...
#       OWNER no longer places the paths. The last user puts back what was at a path (in one
#       rename) or removes the file where nothing was, and its folder too where that is one of
#       the program's own (own) and now empty; then the record goes. Nothing without a record.
#
# Records: STATE-DIR/placed/PATH/users/OWNER, and .../original (what was there) or .../absent
# (nothing was), each written before the file changes, so a run cut short is done again and
# never keeps the program's own file as the host's. host/ownership.sh reads the same records.
set -euo pipefail

die() { echo "placed-files: $*" >&2; exit 1; }

# ---- records

# The path's record folder: r; the path: p.
records_of() {
  case "$1" in /*) ;; *) die "expected an absolute path, got '$1'" ;; esac
  p=$1
  r=$state/placed$1
}

# Makes OWNER a user of the path before it is written: the first user keeps what is there
# aside (keep), or notes that nothing is (adopt: what is there is ours).
claim() {
  records_of "$1"
  [ -d "$r/users" ] || mkdir -p "$r/users"
  if ! { [ -e "$r/original" ] || [ -L "$r/original" ] || [ -e "$r/absent" ]; }; then
    if [ "$2" = keep ] && { [ -e "$p" ] || [ -L "$p" ]; }; then
      cp -a "$p" "$r/original.tmp"
      mv -f "$r/original.tmp" "$r/original"
    else
      : >"$r/absent"
    fi
  fi
  : >"$r/users/$owner"
}

release_path() {
  records_of "$1"
  rm -f "$r/users/$owner"
  if rmdir "$r/users" 2>/dev/null || [ ! -e "$r/users" ]; then
    if [ -e "$r/original" ] || [ -L "$r/original" ]; then
      mkdir -p "$(dirname "$p")"
      mv -f "$r/original" "$p"
    elif [ -e "$r/absent" ]; then
      rm -f "$p"
      if [ "$2" = own ]; then rmdir "$(dirname "$p")" 2>/dev/null || true; fi
    fi
    rm -f "$r/absent"
    # The record's folders, once empty, and the state folder.
    (cd "$state" && rmdir -p --ignore-fail-on-non-empty "placed$p" 2>/dev/null) || true
    rmdir "$state" 2>/dev/null || true
  fi
}

# ---- a file's bytes

wrong_bytes() { echo "$1: the bytes for it are not sha256 $sum" >&2; }

# The path holds the bytes of the file $3, with mode $2.
holds_already() { [ -e "$1" ] && cmp -s "$3" "$1" && [ "$(stat -c %a "$1")" = "$2" ]; }

# Makes the folder of the path $1 where it is missing.
folder_of() {
  local dir=${1%/*}
  [ -d "${dir:-/}" ] || mkdir -p "${dir:-/}"
}

# Writes the path from the file $3 (verified: it holds `$sum`) with mode $2, in one rename. The
# temp file is private (umask 077) until install sets its mode, so a secret is never readable by
# others on the way; a copy that differs from $3 never moves in place.
put() {
  local tmp="$1.gpu-workers.tmp"
  if ! { folder_of "$1" && private_install "$2" "$3" "$tmp" && { cmp -s "$3" "$tmp" || { wrong_bytes "$1"; false; }; } &&
    mv -f "$tmp" "$1"; }; then
    rm -f "$tmp"
    exit 1
  fi
}

# Copies the file $2 to $3 with mode $1, made under umask 077 (one process for the copy and the mode).
private_install() {
  umask 077
  install -m "$1" -- "$2" "$3"
  local status=$?
  umask "$umask"
  return $status
}

# Copies stdin to $1, made under umask 077. In this shell, not a subshell: each process started
# on a host costs more than the work.
private_copy() {
  umask 077
  cat >"$1"
  local status=$?
  umask "$umask"
  return $status
}

# ---- a set's stdin

# Reads the next header: it must name PATH ($1) with a size of KIND ($2, text or staged); sets
# `$n` (a text file's size; its bytes follow, then a newline) and `$sum`. Builtins only: a set
# runs this once per file, and a process started on the host costs more than the work.
next_file() {
  local h
  IFS= read -r h || return 1
  case $h in "==> $1 (mode "*) ;; *) return 1 ;; esac
  sum=${h##*, sha256 }
  sum=${sum%") <=="}
  n=${h%", sha256 "*}
  n=${n##*, }
  case $2:$n in
    "staged:staged copy") n=0 ;;
    text:*" bytes") n=${n%" bytes"}; case $n in '' | *[!0-9]*) return 1 ;; esac ;;
    *) return 1 ;;
  esac
  case $sum in '' | *[!0-9a-f]*) return 1 ;; esac
}

found() { next_file "$1" "$2" || die "file set: the stdin does not hold $1 where expected"; }

# Files to check against their sums, all by one sha256sum once the stdin is read (checks), and
# what to say for each that fails (misfits).
checks=(); misfits=()
to_check() {
  checks+=("$sum  $1")
  misfits+=("$2")
}

# A text file's part of the stdin goes to the private folder `$w`, as file $i, to be checked
# there; its trailing newline is read off after it (a stdin cut short fails the sum).
read_text() {
  local rest
  found "$1" text
  head -c "$n" >"$w/$i"
  IFS= read -r rest || :
  to_check "$w/$i" "$1: the bytes for it are not sha256 $sum"
}

# A binary's staged copy is checked where it is; with none (a set rewritten for another file,
# or a mode change) the path must hold those bytes already.
read_binary() {
  found "$1" staged
  local s="$staging/$sum"
  if [ -f "$s" ]; then
    to_check "$s" "$1: the bytes for it are not sha256 $sum"
  else
    to_check "$1" "$1: no staged copy, and the file is not sha256 $sum"
  fi
}

# Whether each "SUM  FILE" line given holds.
sums_hold() { printf '%s\n' "$@" | sha256sum -c --quiet - >/dev/null 2>&1; }

# Every file to check holds its sum; the first that does not is named, and the set fails.
verify_all() {
  [ ${#checks[@]} -gt 0 ] || return 0
  sums_hold "${checks[@]}" && return 0
  local j
  for j in "${!checks[@]}"; do
    sums_hold "${checks[j]}" || { echo "${misfits[j]}" >&2; exit 1; }
  done
  exit 1
}

# A path that holds those bytes with that mode is left alone (its inode too).
place_text() {
  claim "$1" keep
  holds_already "$1" "$2" "$w/$i" || put "$1" "$2" "$w/$i"
}

# A staged copy goes once installed (or found in place already); with none, the bytes at the
# path were verified and get the mode alone.
place_binary() {
  claim "$1" keep
  local s="$staging/$sum"
  if [ -f "$s" ]; then
    holds_already "$1" "$2" "$s" || put "$1" "$2" "$s"
    rm -f "$s"
  else
    [ "$(stat -c %a "$1")" = "$2" ] || chmod "$2" "$1"
  fi
  rmdir "$staging" 2>/dev/null || true
}

# ---- actions

place() {
  [ $(($# % 3)) -eq 0 ] || die "place: expected KIND PATH MODE for each file"
  local args=("$@") sums=() k
  w=$(mktemp -d)
  trap 'rm -rf "$w"' EXIT
  i=0
  for ((k = 0; k < $#; k += 3)); do
    case ${args[k]} in
      text) read_text "${args[k + 1]}" ;;
      binary) read_binary "${args[k + 1]}" ;;
      *) die "place: unknown kind '${args[k]}' (text or binary)" ;;
    esac
    sums+=("$sum")
    i=$((i + 1))
  done
  verify_all
  # Every record folder a claim below needs, made at once: each process started costs the step.
  local missing=()
  for ((k = 0; k < $#; k += 3)); do
    records_of "${args[k + 1]}"
    [ -d "$r/users" ] || missing+=("$r/users")
  done
  [ ${#missing[@]} -eq 0 ] || mkdir -p "${missing[@]}"
  i=0
  for ((k = 0; k < $#; k += 3)); do
    sum=${sums[i]}
    case ${args[k]} in
      text) place_text "${args[k + 1]}" "${args[k + 2]}" ;;
      binary) place_binary "${args[k + 1]}" "${args[k + 2]}" ;;
    esac
    i=$((i + 1))
  done
}

write() {
  case $#:${3:-} in 3:keep | 3:adopt) ;; *) die "usage: placed-files.sh write STATE-DIR OWNER PATH MODE keep|adopt" ;; esac
  claim "$1" "$3"
  local tmp="$1.gpu-workers.tmp"
  if ! { folder_of "$1" && private_copy "$tmp" && chmod "$2" "$tmp" && mv -f "$tmp" "$1"; }; then
    rm -f "$tmp"
    exit 1
  fi
}

release() {
  [ $(($# % 2)) -eq 0 ] || die "release: expected PATH own|other for each file"
  while [ $# -gt 0 ]; do
    case $2 in own | other) ;; *) die "release: '$2' is neither own nor other" ;; esac
    release_path "$1" "$2"
    shift 2
  done
}

# The owner id is a file name in a path's users/.
owner_is() {
  case $1 in '' | */* | . | ..) die "expected an owner id (a file name), got '$1'" ;; esac
  owner=$1
}

main() {
  local action=${1:-}
  umask=$(umask)
  case "$action" in
    place) [ $# -ge 4 ] || die "usage: placed-files.sh place STATE-DIR STAGING-DIR OWNER [KIND PATH MODE]..."; state=$2 staging=$3; owner_is "$4"; shift 4; place "$@" ;;
    write) [ $# -ge 3 ] || die "usage: placed-files.sh write STATE-DIR OWNER PATH MODE keep|adopt"; state=$2; owner_is "$3"; shift 3; write "$@" ;;
    release) [ $# -ge 3 ] || die "usage: placed-files.sh release STATE-DIR OWNER [PATH own|other]..."; state=$2; owner_is "$3"; shift 3; release "$@" ;;
    *) die "usage: placed-files.sh place|write|release STATE-DIR ..." ;;
  esac
}
main "$@"
