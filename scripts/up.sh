#!/usr/bin/env bash
# npm run up: converges the dev stack (Pulumi.dev.yaml) with one `pulumi up`: a Concourse web
# and a worker, each in an LXD container on this machine. On a fresh machine it first sets up
# what that needs: npm packages, the wrapper, the Pulumi engine, an LXD daemon and the Debian 12
# image, the Concourse release assembled from the kit, the dev datasets (as root), or says what
# is missing. It ends with where the web is and how to use it.
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
ensure_release
ensure_datasets
mkdir -p "$root/.pulumi-state"
pulumi stack select dev 2>/dev/null || pulumi stack init dev --secrets-provider passphrase
pulumi up --yes --stack dev "$@"
print_web
