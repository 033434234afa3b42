#!/usr/bin/env bash
# Applies gpu-workers' containerd settings as a drop-in imported by the main config.
#   apply-containerd-config.sh apply  --ours FILE [--sha256 HEX] [--toml PATH] [--main FILE] [--drop-in FILE] [--import GLOB] [--service NAME]
#   apply-containerd-config.sh check  --ours FILE [--toml PATH] [--main FILE] [--drop-in FILE] [--import GLOB]
#   apply-containerd-config.sh remove [--main FILE] [--drop-in FILE] [--service NAME]
# --ours     our settings (rendered by components/lib/links/containerd/render.ts), version 2 TOML
# --sha256   expected checksum of --ours (a half-uploaded file is refused)
# --toml     containerd-toml, which parses and merges the TOML (default /usr/local/lib/gpu-workers/containerd-toml)
# --main     the host's main config (default /etc/containerd/config.toml)
# --drop-in  the file written (default /etc/containerd/conf.d/gpu-workers.toml)
# --import   the glob the main config imports (default: the drop-in's folder + /*.toml)
# --service  systemd unit restarted when the result changed (default containerd; "" = none)
#
# containerd 1.6 merges an imported file by replacing each plugin table it names as a
# whole, so a drop-in holding only our keys would drop the host's own CRI settings (on
# Debian: the CNI paths). The drop-in therefore holds the host's CRI table from the main
# config, parsed, with our keys merged in (containerd-toml), made afresh from the main
# config on every apply. `containerd config dump` before and after is the judge: if a host
# setting would be lost, everything is put back and the step fails naming the settings.
# Files are written only when their content differs, and containerd is restarted only when
# the applied content changed. `check` makes the drop-in again from the main config as it is
# now and fails when the result differs from the file there (the host's config was edited
# since, or the drop-in was), so that a refresh sees drift and the next up applies again.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
SYSTEMCTL=${GPU_WORKERS_SYSTEMCTL:-systemctl}
CONTAINERD=${GPU_WORKERS_CONTAINERD:-containerd}

die() { echo "apply-containerd-config: $*" >&2; exit 1; }
say() { echo "apply-containerd-config: $*"; }

action=${1:-}; shift || true
ours=""; sha=""; main=/etc/containerd/config.toml; drop_in=/etc/containerd/conf.d/gpu-workers.toml
import=""; service=containerd; toml=/usr/local/lib/gpu-workers/containerd-toml
while [ $# -gt 0 ]; do
  case "$1" in
    --ours) ours=$2; shift 2 ;;
    --sha256) sha=$2; shift 2 ;;
    --toml) toml=$2; shift 2 ;;
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

# The drop-in as the main config (or an empty one) and ours give it now.
make_drop_in() {
  "$toml" drop-in "$1" "$ours" > "$2" 2>"$work/toml.err" || die "cannot merge our settings into $main: $(tail -n 3 "$work/toml.err")"
}

# The main config with the import glob added as its first line (comments and order kept).
main_with_import() {
  "$toml" main-with-import "$1" "$import" > "$2" 2>"$work/toml.err" || die "$(sed 's/^containerd-toml: //' "$work/toml.err" | tail -n 3)"
}

need_inputs() {
  [ -n "$ours" ] || die "--ours is required"
  [ -r "$ours" ] || die "$ours is missing"
  [ -x "$toml" ] || die "$toml is missing (it is uploaded with this script)"
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
  need_inputs
  if [ -n "$sha" ] && [ "$(sha256sum "$ours" | cut -d' ' -f1)" != "$sha" ]; then
    die "$ours does not have the expected sha256 $sha (incomplete upload?)"
  fi
  command -v "$CONTAINERD" >/dev/null 2>&1 || die "containerd is not installed (no $CONTAINERD on PATH)"
  : > "$work/empty"
  local src_main=$main
  [ -f "$main" ] || src_main="$work/empty"
  main_with_import "$src_main" "$work/main.toml"
  make_drop_in "$src_main" "$work/drop-in.toml"

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

  local changed=""
  changed+=$(write_if_changed "$work/main.toml" "$main" 0644)
  mkdir -p "$(dirname "$drop_in")"
  cp -- "$work/drop-in.toml" "$drop_in"; chmod 0644 "$drop_in"
  dump "$main" > "$work/after.dump"

  # Every host setting must survive, except the keys ours sets on purpose, and containerd
  # must show our runtime.
  if ! "$toml" compare-dumps "$work/before.dump" "$work/after.dump" "$ours" > "$work/lost" 2>"$work/toml.err"; then
    [ -s "$work/lost" ] || die "cannot compare containerd's config before and after: $(tail -n 3 "$work/toml.err")"
    echo "apply-containerd-config: with the drop-in, containerd would lose these settings of the host, or not show ours; nothing was changed:" >&2
    cat "$work/lost" >&2
    exit 1
  fi
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

# Exit 0 while the drop-in and the main config are what apply would write now; the last
# line says what differs otherwise.
check() {
  need_inputs
  : > "$work/empty"
  local src_main=$main
  [ -f "$main" ] || src_main="$work/empty"
  main_with_import "$src_main" "$work/main.toml"
  make_drop_in "$src_main" "$work/drop-in.toml"
  [ -f "$drop_in" ] || die "the drop-in $drop_in is missing"
  cmp -s "$work/main.toml" "$src_main" || die "$main no longer imports $import"
  cmp -s "$work/drop-in.toml" "$drop_in" ||
    die "$drop_in differs from what $main and our settings give now (the host's config or the drop-in was edited since it was applied)"
  say "$drop_in is what $main and our settings give"
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
  check) check ;;
  remove) remove ;;
  *) die "usage: apply-containerd-config.sh apply|check|remove [--ours FILE] [--sha256 HEX] [--toml PATH] [--main FILE] [--drop-in FILE] [--import GLOB] [--service NAME]" ;;
esac
