#!/usr/bin/env bash
# Refreshes apt's lists for one vendor source that gpu-workers placed, and turns apt's
# signature errors into one line that names the key that signed the repository and the key
# the source trusts.
#   apt-vendor-source.sh refresh --source FILE --keyring FILE --fingerprint FPR
# --source       the deb822 source (Signed-By names --keyring)
# --keyring      the vendor's key, shipped with gpu-workers
# --fingerprint  the fingerprint the vendor publishes for it
# Only this source is refreshed: the host's other sources are not contacted.
set -euo pipefail

die() { echo "apt-vendor-source: $*" >&2; exit 1; }

action=${1:-}; shift || true
source_file=""; keyring=""; fingerprint=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source_file=$2; shift 2 ;;
    --keyring) keyring=$2; shift 2 ;;
    --fingerprint) fingerprint=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ "$action" = refresh ] || die "usage: apt-vendor-source.sh refresh --source FILE --keyring FILE --fingerprint FPR"
[ -f "$source_file" ] || die "the source $source_file is missing"
[ -f "$keyring" ] || die "the keyring $keyring is missing"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
apt-get update -q -o "Dir::Etc::sourcelist=$source_file" -o Dir::Etc::sourceparts=- \
  -o APT::Get::List-Cleanup=0 > "$out" 2>&1 || rc=$?
cat "$out"
# apt names the key of a signature it cannot check (NO_PUBKEY) or that is bad or expired.
signer=$(grep -oE '(NO_PUBKEY|EXPKEYSIG|BADSIG|REVKEYSIG) [0-9A-Fa-f]+' "$out" | head -n 1 || true)
if [ -n "$signer" ]; then
  die "apt refused the repository of $source_file: it is signed by key ${signer#* } (${signer%% *}), but the source trusts only the vendor's key $fingerprint in $keyring"
fi
if [ "$rc" -ne 0 ] || grep -qE '^(E|W): (GPG error|The repository .* is not signed|Failed to fetch)' "$out"; then
  die "apt could not use the repository of $source_file (exit $rc): $(grep -E '^(E|W):' "$out" | head -n 1)"
fi
