#!/usr/bin/env bash
# npm run down: destroys the dev stack: the worker is retired, then both LXD instances go, and
# the dev datasets folder with them. The LXD daemon and the image stay for the next `up`.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=dev-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/dev-env.sh"
cd "$root"
npm run -s build
ensure_engine
ensure_lxd
ensure_dev_config
pulumi destroy --yes --stack dev --config-file "$DEV_CONFIG" "$@"
remove_datasets
