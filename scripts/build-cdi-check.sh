#!/usr/bin/env bash
# Builds cdi-check (cdi-check/: the CDI spec checker that generate-cdi.sh runs on hosts, with the
# CDI project's own library) into dist/cdi-check/cdi-check, as build-go-tool.sh builds the
# project's Go tools.
#   build-cdi-check.sh [--output PATH]
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/build-go-tool.sh" cdi-check 1.23 "the CDI library" "$@"
