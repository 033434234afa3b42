#!/usr/bin/env bash
# Installs the Debian packages the test suite's real-tool checks use. The tests install
# what is missing themselves too; doing it once up front keeps their timings honest.
set -euo pipefail

packages=(
  runc crun containerd        # the runtime chain under the wrapper
  podman fuse-overlayfs uidmap # the CDI consumer
  lxd debootstrap             # LXD hosts and their images
  busybox-static umoci        # images built with no network
  openssh-server openssh-client
  shellcheck jq bats libvirt-clients
  gnupg dpkg-dev apt           # vendor apt repositories: keys, signed test repositories
  libxml2-utils                # virt-xml-validate runs xmllint
  libvirt-daemon qemu-utils genisoimage  # the service VM script against libvirt's test driver
  dnsmasq-base                 # a managed LXD bridge, for the worker VMs' nics
  cloud-init                   # cloud-init schema checks the rendered user-data
  strace                      # which calls the wrapper makes before runc takes over
  gcc libc6-dev               # the wrapper's C front, linked statically
  prometheus-node-exporter    # scraped for the GPU metrics (its textfile collector)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-test-deps: all present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-test-deps: missing ${missing[*]}; run as root or install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-test-deps: installed ${missing[*]}"
