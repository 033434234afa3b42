#!/usr/bin/env bash
# npm run down: destroys the dev stack (the LXD instance and everything in it).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=dev-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/dev-env.sh"
cd "$root"
npm run -s build
ensure_engine
ensure_lxd
pulumi destroy --yes --stack dev "$@"
