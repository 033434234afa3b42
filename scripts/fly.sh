#!/usr/bin/env bash
# npm run fly -- ARGS: runs fly against the dev stack's web, logged in as its main team user
# (the URL, user and password are the stack's outputs). fly comes from that web (/api/v1/cli), and
# again when the web's version is no longer the kept fly's (ensure_fly in dev-env.sh).
#   npm run fly -- workers
#   npm run fly -- execute -c examples/gpu-task.yml --tag dev
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=dev-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/dev-env.sh"
cd "$root"
ensure_engine
target=gpu-workers-dev
web=$(pulumi stack output web --json --show-secrets --stack dev 2>/dev/null) || die "the dev stack has no web yet: run npm run up"
[ "$web" != "null" ] || die "the dev stack has no web (no Concourse release was reachable): see the end of npm run up"
url=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).url)' "$web")
fly=$(ensure_fly "$url")
if ! "$fly" -t "$target" status >/dev/null 2>&1; then
  user=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).username)' "$web")
  password=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).password)' "$web")
  # One argument: a password of an earlier release may begin with "-", which fly reads after -p as an option.
  "$fly" -t "$target" login -c "$url" -u "$user" --password="$password" >/dev/null
fi
exec "$fly" -t "$target" "$@"
