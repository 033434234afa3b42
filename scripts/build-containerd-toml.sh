#!/usr/bin/env bash
# Builds containerd-toml (containerd-toml/: the TOML merge that apply-containerd-config.sh runs on
# hosts) into dist/containerd-toml/containerd-toml, as build-go-tool.sh builds the project's Go tools.
#   build-containerd-toml.sh [--output PATH]
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/build-go-tool.sh" containerd-toml 1.19 "its TOML module" "$@"
