#!/usr/bin/env bash
# Applies gpu-workers' containerd settings as a drop-in imported by the main config.
#   apply-containerd-config.sh apply  --ours FILE [--sha256 HEX] [--main FILE] [--drop-in FILE] [--import GLOB] [--service NAME]
#   apply-containerd-config.sh remove [--main FILE] [--drop-in FILE] [--service NAME]
# --ours     our settings (rendered by components/containerd/render.ts), version 2 TOML
# --sha256   expected checksum of --ours (a half-uploaded file is refused)
# --main     the host's main config (default /etc/containerd/config.toml)
# --drop-in  the file written (default /etc/containerd/conf.d/gpu-workers.toml)
# --import   the glob the main config imports (default: the drop-in's folder + /*.toml)
# --service  systemd unit restarted when the result changed (default containerd; "" = none)
#
# containerd 1.6 merges an imported file by replacing each plugin section it names as a
# whole, so a drop-in holding only our keys would drop the host's own CRI settings (on
# Debian: the CNI paths). The drop-in therefore carries the host's CRI tables from the
# main config with our keys merged in, and `containerd config dump` before and after
# proves that no host setting was lost; if one was, everything is put back and the step
# fails naming the settings. Files are written only when their content differs, and
# containerd is restarted only when the applied content changed.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
SYSTEMCTL=${GPU_WORKERS_SYSTEMCTL:-systemctl}
CONTAINERD=${GPU_WORKERS_CONTAINERD:-containerd}
CRI='plugins."io.containerd.grpc.v1.cri"'

die() { echo "apply-containerd-config: $*" >&2; exit 1; }
say() { echo "apply-containerd-config: $*"; }

action=${1:-}; shift || true
ours=""; sha=""; main=/etc/containerd/config.toml; drop_in=/etc/containerd/conf.d/gpu-workers.toml
import=""; service=containerd
while [ $# -gt 0 ]; do
  case "$1" in
    --ours) ours=$2; shift 2 ;;
    --sha256) sha=$2; shift 2 ;;
    --main) main=$2; shift 2 ;;
    --drop-in) drop_in=$2; shift 2 ;;
    --import) import=$2; shift 2 ;;
    --service) service=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
import=${import:-$(dirname "$drop_in")/*.toml}
key=$(printf '%s' "$drop_in" | sha256sum | cut -c1-16)
state="$STATE_DIR/containerd-$key.applied"
added_import="$STATE_DIR/containerd-$key.import-added"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Writes content (from a file) to dest only when it differs; prints "changed" when it wrote.
write_if_changed() {
  local src=$1 dest=$2 mode=$3
  if [ -f "$dest" ] && cmp -s "$src" "$dest"; then return 0; fi
  mkdir -p "$(dirname "$dest")"
  cp -- "$src" "$dest.gpu-workers.tmp"
  chmod "$mode" "$dest.gpu-workers.tmp"
  mv -f -- "$dest.gpu-workers.tmp" "$dest"
  echo changed
}

# Table-qualified key lines of a TOML text: "table|key = value", one per line, sorted.
# Enough for containerd's own dump format (one-line values, [table] headers).
keyed_lines() {
  awk '
    /^[[:space:]]*\[[^\[]/ { t = $0; sub(/^[[:space:]]*\[[[:space:]]*/, "", t); sub(/[[:space:]]*\][[:space:]]*(#.*)?$/, "", t); next }
    /^[[:space:]]*(#|$)/ { next }
    { l = $0; sub(/^[[:space:]]+/, "", l); print t "|" l }
  ' "$1" | LC_ALL=C sort
}

# The CRI tables of the main config (text as written) with the tables and keys of ours
# merged in: a key ours sets replaces the host's line (and its continuation lines), keys
# and tables the host lacks are added. Output starts with version = 2.
merge_cri() {
  awk -v cri="$CRI" '
    function tname(line,   t) { t = line; sub(/^[[:space:]]*\[[[:space:]]*/, "", t); sub(/[[:space:]]*\][[:space:]]*(#.*)?$/, "", t); return t }
    function kname(line,   k) { k = line; sub(/^[[:space:]]*/, "", k); sub(/[[:space:]]*=.*/, "", k); return k }
    function is_header(line) { return line ~ /^[[:space:]]*\[[^\[]/ }
    function is_key(line) { return line ~ /^[[:space:]]*("[^"]*"|[A-Za-z0-9_-]+)[[:space:]]*=/ }
    function is_cri(t) { return t == cri || index(t, cri ".") == 1 }
    function depth(line,   o, c, s) { s = line; gsub(/"[^"]*"/, "", s); o = gsub(/\[/, "[", s); c = gsub(/\]/, "]", s); return o - c }
    function flush(   i, k) {
      if (cur == "" || !(cur in otables)) return
      for (i = 1; i <= nkeys[cur]; i++) { k = keys[cur, i]; if (!((cur, k) in used)) print line_of[cur, k] }
    }
    FNR == NR {
      if (is_header($0)) { t = tname($0); if (!(t in otables)) { otables[t] = 1; order[++ntables] = t }; ot = t; next }
      if (ot != "" && is_key($0)) { k = kname($0); keys[ot, ++nkeys[ot]] = k; line_of[ot, k] = $0 }
      next
    }
    skip > 0 { skip += depth($0); next }
    is_header($0) {
      flush(); cur = ""; t = tname($0)
      if (is_cri(t)) { cur = t; seen[t] = 1; print $0 }
      next
    }
    cur != "" && is_key($0) {
      k = kname($0)
      if ((cur, k) in line_of) { print line_of[cur, k]; used[cur, k] = 1; skip = depth($0); next }
      print $0; next
    }
    cur != "" { print $0 }
    END {
      flush()
      for (i = 1; i <= ntables; i++) {
        t = order[i]; if (t in seen) continue
        print ""; print "[" t "]"
        for (j = 1; j <= nkeys[t]; j++) print line_of[t, keys[t, j]]
      }
    }
  ' "$ours" "$1" > "$work/cri.toml"
  { echo "# Written by gpu-workers apply-containerd-config.sh: the host's CRI settings from"
    echo "# $main with gpu-workers' runtime merged in (containerd 1.6 replaces whole plugin sections)."
    echo "version = 2"
    echo
    cat "$work/cri.toml"
  } > "$2"
}

# The main config with the import glob added as its first line (comments and order kept).
main_with_import() {
  local src=$1 dest=$2
  if [ ! -s "$src" ]; then
    printf 'version = 2\nimports = [ "%s" ]\n' "$import" > "$dest"
    return 0
  fi
  if grep -Fq "\"$import\"" "$src" && grep -Eq '^[[:space:]]*imports[[:space:]]*=' "$src"; then
    cp -- "$src" "$dest"
    return 0
  fi
  grep -Eq '^[[:space:]]*version[[:space:]]*=[[:space:]]*2[[:space:]]*(#.*)?$' "$src" ||
    die "$src is not a version 2 config (no 'version = 2' line); gpu-workers only extends version 2 configs"
  if grep -Eq '^[[:space:]]*imports[[:space:]]*=' "$src"; then
    die "$src already has an imports list without \"$import\"; add \"$import\" to it and run again"
  fi
  { printf 'imports = [ "%s" ]\n' "$import"; cat -- "$src"; } > "$dest"
}

dump() { "$CONTAINERD" --config "$1" config dump 2>"$work/dump.err" || die "containerd cannot load $1: $(tail -n 3 "$work/dump.err")"; }

restart_if_changed() {
  local now
  now=$( { cat -- "$main" 2>/dev/null; cat -- "$drop_in" 2>/dev/null; } | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$state" 2>/dev/null || true)" = "$now" ]; then
    say "containerd config unchanged"
    return 0
  fi
  if [ -n "$service" ] && command -v "$SYSTEMCTL" >/dev/null 2>&1 && "$SYSTEMCTL" is-active --quiet "$service"; then
    "$SYSTEMCTL" restart "$service"
    say "restarted $service"
  else
    say "config changed; $service is not running, it takes the config when it starts"
  fi
  mkdir -p "$STATE_DIR"
  echo "$now" > "$state"
}

apply() {
  [ -n "$ours" ] || die "--ours is required"
  [ -r "$ours" ] || die "$ours is missing"
  if [ -n "$sha" ] && [ "$(sha256sum "$ours" | cut -d' ' -f1)" != "$sha" ]; then
    die "$ours does not have the expected sha256 $sha (incomplete upload?)"
  fi
  command -v "$CONTAINERD" >/dev/null 2>&1 || die "containerd is not installed (no $CONTAINERD on PATH)"
  : > "$work/empty"
  local src_main=$main
  [ -f "$main" ] || src_main="$work/empty"

  # What the host's config says without our drop-in: the baseline nothing may be lost from.
  # The old drop-in waits beside it (a name the import glob does not match) and comes
  # back as the same file when the new content is equal.
  old="$drop_in.gpu-workers.old"
  mkdir -p "$work/before"
  rm -f -- "$old"
  if [ -f "$drop_in" ]; then mv -f -- "$drop_in" "$old"; fi
  if [ -f "$main" ]; then cp -p -- "$main" "$work/before/main"; fi
  restore() {
    if [ -f "$old" ]; then mv -f -- "$old" "$drop_in"; else rm -f -- "$drop_in"; fi
    if [ -f "$work/before/main" ]; then cp -p -- "$work/before/main" "$main"; else rm -f -- "$main"; fi
  }
  trap 'restore; rm -rf "$work"' EXIT
  dump "$src_main" > "$work/before.dump"

  main_with_import "$src_main" "$work/main.toml"
  merge_cri "$src_main" "$work/drop-in.toml"
  local changed=""
  changed+=$(write_if_changed "$work/main.toml" "$main" 0644)
  mkdir -p "$(dirname "$drop_in")"
  cp -- "$work/drop-in.toml" "$drop_in"; chmod 0644 "$drop_in"
  dump "$main" > "$work/after.dump"

  # Every host setting must survive, except the keys ours sets on purpose.
  keyed_lines "$work/before.dump" > "$work/before.keys"
  keyed_lines "$work/after.dump" > "$work/after.keys"
  keyed_lines "$ours" | sed 's/[[:space:]]*=.*//' > "$work/ours.keys"
  LC_ALL=C comm -23 "$work/before.keys" "$work/after.keys" | while IFS= read -r line; do
    k=${line%%=*}; k=${k%"${k##*[![:space:]]}"}
    case "$k" in "|imports") continue ;; esac
    # An absent key decodes to its zero value: losing `x = ""`, 0, false or [] changes nothing.
    case "${line#*= }" in '""'|0|false|'[]'|'{}') continue ;; esac
    grep -Fxq -- "$k" "$work/ours.keys" && continue
    printf '%s\n' "$line"
  done > "$work/lost"
  if [ -s "$work/lost" ]; then
    echo "apply-containerd-config: with the drop-in, containerd would lose these settings of the host (table|key = value); nothing was changed:" >&2
    cat "$work/lost" >&2
    exit 1
  fi
  grep -Fq "$(grep -E '^[[:space:]]*BinaryName' "$ours" | head -n1 | sed 's/^[[:space:]]*//')" "$work/after.dump" ||
    die "containerd does not show our runtime after the merge; nothing was changed"
  trap 'rm -rf "$work"' EXIT
  if [ -n "$changed" ]; then
    # Remember what we did to the main config, so remove undoes exactly that.
    mkdir -p "$STATE_DIR"
    if [ -f "$work/before/main" ]; then echo prepended > "$added_import"; else echo created > "$added_import"; fi
  fi
  if [ -f "$old" ] && cmp -s "$old" "$drop_in"; then
    mv -f -- "$old" "$drop_in" # same content: keep the very same file
  fi
  rm -f -- "$old"
  restart_if_changed
}

remove() {
  local changed=""
  if [ -f "$drop_in" ]; then rm -f -- "$drop_in"; changed=1; fi
  if [ -f "$added_import" ] && [ -f "$main" ]; then
    if [ "$(cat "$added_import")" = created ] && [ "$(cat "$main")" = "$(printf 'version = 2\nimports = [ "%s" ]' "$import")" ]; then
      rm -f -- "$main"
      changed=1
    elif [ "$(head -n1 "$main")" = "imports = [ \"$import\" ]" ]; then
      # Drop only the line apply added (the first line, exactly as written).
      tail -n +2 "$main" > "$work/main.toml"
      write_if_changed "$work/main.toml" "$main" 0644 >/dev/null
      changed=1
    fi
  fi
  rm -f -- "$added_import"
  # The drop-in folder is ours by convention: leave no empty one behind.
  rmdir -- "$(dirname "$drop_in")" 2>/dev/null || true
  if [ -z "$changed" ] && [ ! -f "$state" ]; then
    say "nothing to remove"
    return 0
  fi
  rm -f -- "$state"
  if [ -n "$service" ] && command -v "$SYSTEMCTL" >/dev/null 2>&1 && "$SYSTEMCTL" is-active --quiet "$service"; then
    "$SYSTEMCTL" restart "$service"
    say "removed the gpu-workers drop-in and restarted $service"
  else
    say "removed the gpu-workers drop-in"
  fi
}

case "$action" in
  apply) apply ;;
  remove) remove ;;
  *) die "usage: apply-containerd-config.sh apply|remove [--ours FILE] [--main FILE] [--drop-in FILE] [--import GLOB] [--service NAME]" ;;
esac
