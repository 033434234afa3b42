#!/usr/bin/env bash
# npm run up: converges the dev stack (Pulumi.dev.yaml) with one `pulumi up`, its host steps by the
# builtin transport: a worker host in an LXD container on this machine, through the whole chain to
# its validator; and where a Concourse release is reachable (scripts/concourse-release.sh), a
# Concourse web in a second container and the Concourse worker, registered with it. On a fresh
# machine it first sets up what that needs: npm packages, the wrapper, the Pulumi engine, an LXD
# daemon and the Debian 12 image, the dev datasets (as root), or says what is missing. It ends with
# which of the two it made, and how to use it or what to set for the rest.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=dev-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/dev-env.sh"
cd "$root"

[ -d node_modules/@pulumi/pulumi ] || npm ci --no-audit --no-fund
ensure_dev_tools
npm run -s build
ensure_engine
ensure_lxd
ensure_image
ensure_datasets
ensure_dev_config
mkdir -p "$root/.pulumi-state"
pulumi stack select dev 2>/dev/null || pulumi stack init dev --secrets-provider passphrase
pulumi up --yes --stack dev --config-file "$DEV_CONFIG" "$@"
print_result
