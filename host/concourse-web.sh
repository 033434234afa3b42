#!/usr/bin/env bash
# Installs the Concourse release and runs the web unit.
#   concourse-web.sh ensure --version V (--url URL --sha256 HEX | --archive PATH) --unit NAME
#                           --port N [--address IP] --watch FILE...
#   concourse-web.sh remove --unit NAME
# The release goes in with concourse-install.sh (beside this script). The unit is restarted
# only when a watched file (unit, env files, keys) or the release changed, and ensure returns
# once the web answers on ADDRESS:PORT (default 127.0.0.1), or fails after 120s with the
# unit's last log lines.
set -euo pipefail

STATE_DIR=${GPU_WORKERS_STATE_DIR:-/var/lib/gpu-workers}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INSTALL="$HERE/concourse-install.sh"

die() { echo "concourse-web: $*" >&2; exit 1; }

action=${1:-}; shift || true
release=(); unit=""; port=""; address=127.0.0.1; watch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version|--url|--sha256|--archive) release+=("$1" "$2"); shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --address) address=$2; shift 2 ;;
    --watch) watch+=("$2"); shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$unit" ] || die "--unit is required"

# The API's info endpoint answers 200 once the web is up (no curl needed on the host).
answers() {
  local status
  exec 3<>"/dev/tcp/$address/$port" || return 1
  printf 'GET /api/v1/info HTTP/1.0\r\nHost: %s\r\n\r\n' "$address" >&3
  read -r _ status _ <&3 || status=""
  exec 3<&-
  [ "$status" = 200 ]
}

ensure() {
  [ -n "$port" ] || die "--port is required"
  "$INSTALL" ensure "${release[@]}" >/dev/null
  local stamp="$STATE_DIR/${unit}.sha256" sum waited=0
  sum=$(cat "${watch[@]}" "$STATE_DIR/concourse.installed" | sha256sum | cut -d' ' -f1)
  systemctl daemon-reload
  systemctl enable "$unit" >/dev/null 2>&1
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ] || ! systemctl is-active --quiet "$unit"; then
    systemctl restart "$unit"
    echo "$sum" >"$stamp"
  fi
  until answers 2>/dev/null; do
    if [ "$waited" -ge 120 ]; then
      journalctl -u "$unit" -n 20 --no-pager >&2 2>/dev/null || true
      die "the web did not answer on ${address}:${port} within 120s (last lines of ${unit} above)"
    fi
    sleep 1
    waited=$((waited + 1))
  done
  echo "concourse-web: ${unit} answers on ${address}:${port}"
}

remove() {
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  rm -f "$STATE_DIR/${unit}.sha256"
  "$INSTALL" remove
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  *) die "usage: concourse-web.sh ensure|remove ..." ;;
esac
