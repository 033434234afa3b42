#!/usr/bin/env bash
# Builds LXD images for worker instances and tests, and imports them under an alias.
#
#   lxd-build-image.sh build  debian-12|busybox          prints the image tarball's path
#   lxd-build-image.sh import debian-12|busybox [ALIAS]   builds if needed, imports into the LXD
#                                                         that `lxc` reaches (honours LXD_DIR),
#                                                         points ALIAS at it, prints its fingerprint
#
# debian-12: Debian 12 made with debootstrap (minbase + systemd, openssh-server, sudo,
#            ca-certificates, iproute2, runc, containerd, iptables, postgresql). Host keys are
#            made at first boot; PostgreSQL is installed but not started (the web starts it).
#            Default alias gpu-workers/debian-12.
# busybox:   a static busybox and nothing else, for fast tests. Default alias gpu-workers/busybox.
#
# Images are unified LXD tarballs (metadata.yaml, templates/, rootfs/) cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/lxd-images, keyed by a hash of this script, so
# they are built once. The Debian mirror is the one apt uses here (DEBIAN_MIRROR overrides).
# Needs root (debootstrap, numeric ownership). Idempotent.
set -euo pipefail

SUITE=bookworm
# runc and containerd: a worker host brings its container runtime, and the chain configures it.
# iptables: the Concourse worker's container network. postgresql: the web's database. The
# instances have no network, so what a worker or a web needs from Debian is in the image.
DEBIAN_PACKAGES=systemd,systemd-sysv,openssh-server,sudo,ca-certificates,iproute2,runc,containerd,iptables,postgresql
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/lxd-images"
script_hash=$(sha256sum "$0" | cut -c1-16)

die() {
    echo "lxd-build-image: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 build debian-12|busybox | import debian-12|busybox [ALIAS]" >&2
    exit 2
}

# The first Debian mirror apt is configured with for $SUITE (deb822 .sources or one-line lists).
debian_mirror() {
    local f uri
    if [ -n "${DEBIAN_MIRROR:-}" ]; then
        echo "$DEBIAN_MIRROR"
        return
    fi
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk -v suite="$SUITE" '
            /^[[:space:]]*$/ { if (uris != "" && hit) { print uris; exit } uris = ""; hit = 0; next }
            /^URIs:/ { uris = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
            END { if (uris != "" && hit) print uris }' "$f" | head -n1)
        if [ -n "$uri" ]; then
            echo "$uri"
            return
        fi
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(awk -v suite="$SUITE" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $(i + 1) == suite) { print $i; exit } }' "$f")
        if [ -n "$uri" ]; then
            echo "$uri"
            return
        fi
    done
    die "no apt source for $SUITE found in /etc/apt; set DEBIAN_MIRROR to a Debian mirror's URL"
}

arch() {
    uname -m
}

write_metadata() {
    local work=$1 description=$2 os=$3 release=$4
    cat >"$work/metadata.yaml" <<EOF
architecture: $(arch)
creation_date: $(date +%s)
properties:
  description: "$description"
  os: $os
  release: $release
templates:
  /etc/hostname:
    when: [create, copy]
    template: hostname.tpl
  /etc/hosts:
    when: [create, copy]
    template: hosts.tpl
EOF
    mkdir -p "$work/templates"
    printf '%s\n' '{{ container.name }}' >"$work/templates/hostname.tpl"
    printf '%s\n' '127.0.0.1 localhost' '127.0.1.1 {{ container.name }}' '::1 localhost ip6-localhost ip6-loopback' >"$work/templates/hosts.tpl"
}

build_busybox() {
    local work=$1 bb rootfs applet
    bb=$(command -v busybox) || die "busybox not found (install busybox-static)"
    if ldd "$bb" >/dev/null 2>&1; then
        die "$bb is dynamically linked; the image needs a static one (install busybox-static)"
    fi
    rootfs="$work/rootfs"
    mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,dev,proc,sys,tmp,run,root,var/log}
    chmod 1777 "$rootfs/tmp"
    chmod 0700 "$rootfs/root"
    install -m 0755 "$bb" "$rootfs/bin/busybox"
    for applet in $("$rootfs/bin/busybox" --list-full); do
        [ -e "$rootfs/$applet" ] || ln -s /bin/busybox "$rootfs/$applet"
    done
    printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$rootfs/etc/passwd"
    printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$rootfs/etc/group"
    # busybox init with nothing to respawn: it just waits, and stops cleanly on SIGPWR.
    printf '%s\n' '::sysinit:/bin/hostname -F /etc/hostname' '::shutdown:/bin/sync' >"$rootfs/etc/inittab"
    echo busybox >"$rootfs/etc/hostname"
    write_metadata "$work" "busybox (static) test image, built by gpu-workers" busybox "$("$bb" 2>&1 | head -n1 | awk '{print $2}')"
}

build_debian() {
    local work=$1 rootfs mirror
    command -v debootstrap >/dev/null || die "debootstrap not found (install debootstrap)"
    rootfs="$work/rootfs"
    mirror=$(debian_mirror)
    echo "lxd-build-image: debootstrap $SUITE from $mirror (a few minutes, once)" >&2
    if ! debootstrap --variant=minbase --include="$DEBIAN_PACKAGES" "$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
        tail -n 30 "$work/debootstrap.log" >&2
        die "debootstrap failed (full log above, last lines)"
    fi
    # Each instance makes its own identity at first boot.
    rm -f "$rootfs"/etc/ssh/ssh_host_*
    : >"$rootfs/etc/machine-id"
    rm -f "$rootfs/var/lib/dbus/machine-id"
    cat >"$rootfs/etc/systemd/system/ssh-host-keys.service" <<'EOF'
[Unit]
Description=Generate sshd host keys missing on first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
EOF
    ln -sf /etc/systemd/system/ssh-host-keys.service "$rootfs/etc/systemd/system/multi-user.target.wants/ssh-host-keys.service"
    # PostgreSQL runs where a web needs it (the web's step enables it), not in every instance.
    rm -f "$rootfs"/etc/systemd/system/multi-user.target.wants/postgresql*.service
    echo debian >"$rootfs/etc/hostname"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
    write_metadata "$work" "Debian 12 (bookworm) minimal with systemd and sshd, built by gpu-workers" debian "$SUITE"
}

unmount_below() {
    local m
    awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
}

# Prints the cached tarball of KIND, building it first when the cache has none for this script.
build() {
    local kind=$1 key tarball work
    case "$kind" in
        debian-12) key=$script_hash ;;
        busybox) key="$script_hash-$(sha256sum "$(command -v busybox || echo /dev/null)" | cut -c1-8)" ;;
        *) usage ;;
    esac
    tarball="$cache_dir/$kind-$key.tar.gz"
    if [ -s "$tarball" ]; then
        echo "$tarball"
        return
    fi
    [ "$(id -u)" -eq 0 ] || die "building images needs root (numeric ownership, debootstrap)"
    mkdir -p "$cache_dir"
    work=$(mktemp -d "$cache_dir/.build-$kind-XXXXXX")
    # shellcheck disable=SC2064 # expand $work now: it is local to this function
    trap "unmount_below '$work'; rm -rf --one-file-system '$work'" EXIT
    case "$kind" in
        debian-12) build_debian "$work" ;;
        busybox) build_busybox "$work" ;;
    esac
    tar --numeric-owner --xattrs -C "$work" -cf - metadata.yaml templates rootfs | gzip -1 >"$work/image.tar.gz"
    mv "$work/image.tar.gz" "$tarball"
    # Older builds of this kind are now stale.
    find "$cache_dir" -maxdepth 1 -name "$kind-*.tar.gz" ! -name "$(basename "$tarball")" -delete
    echo "$tarball"
}

import() {
    local kind=$1 alias=$2 tarball fingerprint target
    command -v lxc >/dev/null || die "lxc not found (install lxd-client)"
    tarball=$(build "$kind")
    # A unified tarball's fingerprint is its sha256.
    fingerprint=$(sha256sum "$tarball" | cut -d' ' -f1)
    if ! lxc image info "$fingerprint" >/dev/null 2>&1; then
        lxc image import "$tarball" >/dev/null
    fi
    target=$(lxc query "/1.0/images/aliases/$alias" 2>/dev/null | sed -n 's/.*"target": *"\([0-9a-f]*\)".*/\1/p' || true)
    if [ "$target" != "$fingerprint" ]; then
        [ -z "$target" ] || lxc image alias delete "$alias" >/dev/null
        lxc image alias create "$alias" "$fingerprint" >/dev/null
    fi
    echo "$fingerprint"
}

[ $# -ge 2 ] || usage
case "$1" in
    build)
        [ $# -eq 2 ] || usage
        build "$2"
        ;;
    import)
        [ $# -le 3 ] || usage
        case "$2" in
            debian-12) import "$2" "${3:-gpu-workers/debian-12}" ;;
            busybox) import "$2" "${3:-gpu-workers/busybox}" ;;
            *) usage ;;
        esac
        ;;
    *) usage ;;
esac
