#!/usr/bin/env bash
# Starts or stops a private LXD daemon that keeps everything under one folder (LXD_DIR),
# for tests and development: it never touches the system's LXD, needs no systemd, logs to
# DIR/lxd.log, and is set up with a `dir` storage pool and a default profile that holds only
# a root disk (no managed network).
#
#   lxd-test-daemon.sh start DIR   start (or find running) and set up; prints the socket path
#   lxd-test-daemon.sh stop DIR    stop every instance, shut the daemon down, unmount leftovers
#
# Both are idempotent. Needs root and the lxd and lxd-client packages.
set -euo pipefail

usage() {
    echo "usage: $0 start|stop DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
action=$1
dir=$2
case "$dir" in
    /*) ;;
    *) dir="$PWD/$dir" ;;
esac
# Unix socket paths are limited to 107 bytes; devlxd/sock is the deepest LXD makes.
if [ "${#dir}" -gt 80 ]; then
    echo "lxd-test-daemon: $dir is too long for LXD's sockets (at most 80 characters)" >&2
    exit 1
fi
export LXD_DIR="$dir"
pidfile="$dir/lxd.pid"

running_pid() {
    local pid
    [ -f "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

setup() {
    if ! lxc storage show default >/dev/null 2>&1; then
        lxc storage create default dir >/dev/null
    fi
    if ! lxc profile device get default root pool >/dev/null 2>&1; then
        lxc profile device add default root disk path=/ pool=default >/dev/null
    fi
}

start() {
    for tool in lxd lxc; do
        command -v "$tool" >/dev/null || { echo "lxd-test-daemon: $tool not found (install the lxd and lxd-client packages)" >&2; exit 1; }
    done
    mkdir -p "$dir"
    chmod 0711 "$dir"
    if ! running_pid >/dev/null; then
        # Detached, in its own session, output to its own files: never the caller's stdio.
        setsid lxd --group root --logfile "$dir/lxd.log" </dev/null >>"$dir/lxd.out" 2>&1 &
        echo $! >"$pidfile"
    fi
    if ! lxd waitready --timeout=60; then
        echo "lxd-test-daemon: LXD in $dir did not become ready; last log lines:" >&2
        tail -n 20 "$dir/lxd.log" "$dir/lxd.out" >&2 || true
        exit 1
    fi
    setup
    echo "$dir/unix.socket"
}

unmount_below() {
    local m
    # Deepest first, so nested mounts come off before their parents.
    awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
}

stop() {
    local pid i
    if pid=$(running_pid); then
        # Force-stop instances first: a clean shutdown waits for each one's init to cooperate.
        for name in $(lxc list --format csv -c n 2>/dev/null || true); do
            lxc stop --force "$name" >/dev/null 2>&1 || true
        done
        timeout 60 lxd shutdown --timeout 30 >/dev/null 2>&1 || true
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            if [ "$i" -eq 50 ]; then kill -9 "$pid" 2>/dev/null || true; fi
            sleep 0.2
        done
    fi
    rm -f "$pidfile"
    [ -d "$dir" ] && unmount_below
    return 0
}

case "$action" in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
