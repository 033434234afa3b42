#!/usr/bin/env bash
# Who applied what on a host: a step that undoes something records, in its slot's folder, that
# its resource applied it, one record per resource (named by its owner id). A delete takes its
# own record away and undoes only when no other resource's record is left; otherwise it leaves
# the host alone and says which resources hold it (components/lib/host/owner-records.ts tells
# why, and gives the arguments). A command carries it and runs it as `bash -c SCRIPT
# owner-records.sh ARGS...`, so a host gets one login per command; it is never a file there.
#
#   owner-records.sh claim SLOT-DIR OWNER RESOURCE SLOT DELETE-SUM
#       records that OWNER (resource RESOURCE) applied SLOT; DELETE-SUM: the sha256 of its delete.
#   owner-records.sh release SLOT-DIR OWNER RESOURCE SLOT DELETE
#       OWNER's delete: its record goes, and DELETE (a command line) runs only when no other
#       record is left in SLOT-DIR; then the folder goes, and the two above it once empty.
#   owner-records.sh release-unowned OWNERS-DIR DELETE-SUM DELETE
#       a delete from state made before records: DELETE runs unless a record in OWNERS-DIR
#       carries the same DELETE-SUM (a resource of this release applied the same thing).
#
# A failing DELETE fails the action with its status, and the record stays for the retry.
set -euo pipefail

# The first word of the line a delete prints when it leaves the host alone (the program reads it).
KEPT_MARK=gpu-workers-kept:

die() { echo "owner-records: $*" >&2; exit 1; }

claim() {
  local dir=$1 owner=$2 resource=$3 slot=$4 sum=$5
  mkdir -p "$dir"
  printf 'resource=%s\nslot=%s\ndelete=%s\n' "$resource" "$slot" "$sum" >"$dir/$owner.tmp"
  mv -f "$dir/$owner.tmp" "$dir/$owner"
}

# Runs the delete command in a shell of its own (an `exit` in it ends only it); its stdin ends at
# once, as a drained command's did.
undo() { bash -c "$1" </dev/null; }

release() {
  local dir=$1 owner=$2 resource=$3 slot=$4 delete=$5 others f
  others=$(for f in "$dir"/*; do
    if [ -f "$f" ] && [ "${f##*/}" != "$owner" ]; then sed -n 's/^resource=//p' "$f"; fi
  done | paste -sd, -)
  if [ -n "$others" ]; then
    rm -f "$dir/$owner"
    echo "$KEPT_MARK $resource ($slot): left in place: applied since by $others (records: $dir)"
  else
    undo "$delete"
    rm -rf "$dir"
    rmdir "${dir%/*}" "${dir%/*/*}" 2>/dev/null || true
  fi
}

release_unowned() {
  local owners=$1 sum=$2 delete=$3 others
  others=$({ grep -lx "delete=$sum" "$owners"/*/* 2>/dev/null || true; } | xargs -r sed -n 's/^resource=//p' | paste -sd, -)
  if [ -n "$others" ]; then
    echo "$KEPT_MARK left in place: applied since by $others (records: $owners)"
  else
    undo "$delete"
    rmdir "$owners" "${owners%/*}" 2>/dev/null || true
  fi
}

main() {
  local action=${1:-}
  shift || true
  case "$action" in
    claim) [ $# -eq 5 ] || die "usage: owner-records.sh claim SLOT-DIR OWNER RESOURCE SLOT DELETE-SUM"; claim "$@" ;;
    release) [ $# -eq 5 ] || die "usage: owner-records.sh release SLOT-DIR OWNER RESOURCE SLOT DELETE"; release "$@" ;;
    release-unowned) [ $# -eq 3 ] || die "usage: owner-records.sh release-unowned OWNERS-DIR DELETE-SUM DELETE"; release_unowned "$@" ;;
    *) die "usage: owner-records.sh claim|release|release-unowned ..." ;;
  esac
}
main "$@"
