#!/usr/bin/env bash
# Sourced by up.sh and down.sh: the environment the dev stack runs in. A local file backend
# under .pulumi-state/ (you can look at it), a passphrase secrets provider, no Pulumi Cloud,
# and the engine built by bootstrap-engine.sh when no pulumi is installed.
# shellcheck disable=SC2034 # sourced: the variables are for the caller
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

export PULUMI_BACKEND_URL=${PULUMI_BACKEND_URL:-file://$root/.pulumi-state}
# The dev stack's passphrase: it guards a throwaway stack on this machine only. Set your own
# PULUMI_CONFIG_PASSPHRASE for any stack that matters.
export PULUMI_CONFIG_PASSPHRASE=${PULUMI_CONFIG_PASSPHRASE-gpu-workers-dev}
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_SKIP_UPDATE_CHECK=true
# The dev stack's LXD daemon: the system's, or one this script starts in the same place.
LXD_SOCKET=/var/lib/lxd/unix.socket

die() { echo "gpu-workers: $*" >&2; exit 1; }

ensure_engine() {
  local bin
  bin=$(bash "$root/dev/bootstrap-engine.sh") || die "could not provide the Pulumi engine (see above)"
  export PATH="$bin:$PATH"
}

# Tools the dev stack needs, and the Debian packages that bring them.
ensure_dev_tools() {
  local missing=() packages=()
  command -v lxc >/dev/null 2>&1 || { missing+=(lxc); packages+=(lxd lxd-client); }
  command -v debootstrap >/dev/null 2>&1 || { missing+=(debootstrap); packages+=(debootstrap); }
  command -v ssh >/dev/null 2>&1 || { missing+=(ssh); packages+=(openssh-client); }
  command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || missing+=("go (from go.dev or your distribution; it builds the wrapper and the engine)")
  # The wrapper's C front is linked with the static C library.
  { command -v gcc >/dev/null 2>&1 && [ -f "$(gcc -print-file-name=libc.a)" ]; } || { missing+=("gcc and the static C library"); packages+=(gcc libc6-dev); }
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && [ ${#packages[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    return 0
  fi
  die "missing: ${missing[*]}. Install them (Debian: apt-get install ${packages[*]}) and run again."
}

# The LXD daemon the dev stack talks to; started here (dir storage, no network) when none answers.
ensure_lxd() {
  if LXD_DIR=/var/lib/lxd lxc query /1.0 >/dev/null 2>&1; then return 0; fi
  [ "$(id -u)" -eq 0 ] || die "no LXD daemon answers on $LXD_SOCKET; start LXD (as root: $root/dev/lxd-test-daemon.sh start /var/lib/lxd)"
  bash "$root/dev/lxd-test-daemon.sh" start /var/lib/lxd >/dev/null
}

ensure_image() {
  LXD_DIR=/var/lib/lxd bash "$root/dev/lxd-build-image.sh" import debian-12 >/dev/null
}
