#!/usr/bin/env bash
# Installs the Concourse release and runs the web unit; admits and dismisses workers' keys.
#   concourse-web.sh ensure --version V (--url URL --sha256 HEX | --archive PATH) --unit NAME
#                           --port N [--address IP] --keys-dir DIR --keys FILE --watch FILE...
#   concourse-web.sh remove --unit NAME [--keys FILE]
#   concourse-web.sh admit|dismiss --key FILE --keys-dir DIR --keys FILE --unit NAME --port N [--address IP]
# ensure: the release goes in, and the unit starts, with concourse-install.sh (beside this
# script): restarted only when a watched file (unit, env files, keys of its own) or the release
# changed; ensure returns once the web answers on ADDRESS:PORT (default 127.0.0.1), or fails after
# 120s with the unit's last log lines.
#
# The TSA's authorized keys (--keys) are every *.pub of --keys-dir, in name order: each worker
# places its own key there, and the web's own list is one more file. The web reads them at
# start and again on SIGHUP (Concourse's TSA reloads its keys then and keeps running), so a
# worker is admitted, or dismissed once it has retired, without restarting the web.
# admit joins the keys again and tells a running web; dismiss first removes the worker's --key.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INSTALL="$HERE/concourse-install.sh"

die() { echo "concourse-web: $*" >&2; exit 1; }

action=${1:-}; shift || true
release=(); unit=""; port=""; address=127.0.0.1; watch=(); keys_dir=""; keys=""; key=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version|--url|--sha256|--archive) release+=("$1" "$2"); shift 2 ;;
    --unit) unit=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --address) address=$2; shift 2 ;;
    --watch) watch+=("$1" "$2"); shift 2 ;;
    --keys-dir) keys_dir=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$unit" ] || die "--unit is required"

# The API's info endpoint answers 200 once the web is up (no curl needed on the host). The probe
# is a subshell that ignores SIGPIPE: a web starting or restarting resets connections it took,
# and writing to one must read as "not yet", not kill this script (exit 141). A web that takes
# the request and never answers is "not yet" after 5s.
answers() {
  (
    trap '' PIPE
    exec 3<>"/dev/tcp/$address/$port" || exit 1
    printf 'GET /api/v1/info HTTP/1.0\r\nHost: %s\r\n\r\n' "$address" >&3 || exit 1
    read -r -t 5 _ status _ <&3 || exit 1
    [ "$status" = 200 ]
  )
}

wait_until_answering() {
  local deadline=$((SECONDS + 120))
  until answers 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      journalctl -u "$unit" -n 20 --no-pager >&2 2>/dev/null || true
      die "the web did not answer on ${address}:${port} within 120s (last lines of ${unit} above)"
    fi
    sleep 1
  done
}

# Joins the key files into --keys; succeeds only when that changed the file.
join_keys() {
  local tmp
  if [ -z "$keys_dir" ] || [ -z "$keys" ]; then die "--keys-dir and --keys are required"; fi
  mkdir -p "$keys_dir"
  tmp=$(mktemp "${keys}.XXXXXX")
  find "$keys_dir" -maxdepth 1 -type f -name '*.pub' -print0 | sort -z | xargs -0 -r cat -- | { grep -v '^[[:space:]]*$' || true; } >"$tmp"
  chmod 0644 "$tmp"
  if [ -f "$keys" ] && cmp -s "$tmp" "$keys"; then
    rm -f "$tmp"
    return 1
  fi
  mv -f "$tmp" "$keys"
}

# A web that runs reads its keys again; one that does not reads them when it starts.
reload_keys() {
  systemctl is-active --quiet "$unit" || return 0
  [ -n "$port" ] || die "--port is required"
  # SIGHUP before the web has set up its handler would stop it: wait until it answers.
  wait_until_answering
  systemctl kill --kill-who=main --signal=HUP "$unit"
  echo "concourse-web: ${unit} reads its worker keys again ($(grep -c . "$keys" || true) admitted)"
}

ensure() {
  [ -n "$port" ] || die "--port is required"
  bash "$INSTALL" ensure "${release[@]}" >/dev/null
  local keys_changed=no
  if join_keys; then keys_changed=yes; fi
  # A web that (re)started has read the keys as they are now.
  if [ "$(bash "$INSTALL" start --unit "$unit" "${watch[@]}")" = restarted ]; then keys_changed=no; fi
  wait_until_answering
  if [ "$keys_changed" = yes ]; then reload_keys; fi
  echo "concourse-web: ${unit} answers on ${address}:${port}"
}

admit() {
  [ -n "$key" ] || die "--key is required"
  [ -f "$key" ] || die "${key} is missing: the worker's key file comes before its admission"
  if join_keys; then reload_keys; fi
}

dismiss() {
  [ -n "$key" ] || die "--key is required"
  rm -f "$key"
  if join_keys; then reload_keys; fi
}

remove() {
  bash "$INSTALL" stop --unit "$unit"
  # The joined keys are this script's file; the key files are their owners'.
  if [ -n "$keys" ]; then rm -f "$keys"; fi
  bash "$INSTALL" remove
}

case "$action" in
  ensure) ensure ;;
  remove) remove ;;
  admit) admit ;;
  dismiss) dismiss ;;
  *) die "usage: concourse-web.sh ensure|remove|admit|dismiss ..." ;;
esac
