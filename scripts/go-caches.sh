# shellcheck shell=bash
# Sourced by the dev scripts that run go (build-wrapper.sh, build-containerd-toml.sh,
# bootstrap-engine.sh, and the Go unit tests). go keeps its build cache under XDG_CACHE_HOME or
# HOME, and its module cache under GOPATH or HOME; a service environment may have none of them.
# Then the caches go to a folder of this checkout's ignored .dev/ that belongs to this user and
# only this user can enter: never to a fixed path under /tmp, which another user of the machine
# could create first and fill with build results that end up in the binaries hosts receive.
#
#   go_private_caches ROOT      ROOT: the checkout; exports GOCACHE and GOPATH where go has none
go_private_caches() {
  local root=$1 dir need_cache=no need_path=no
  [ -n "${GOCACHE:-}${XDG_CACHE_HOME:-}${HOME:-}" ] || need_cache=yes
  [ -n "${GOMODCACHE:-}${GOPATH:-}${HOME:-}" ] || need_path=yes
  [ "$need_cache$need_path" != nono ] || return 0
  dir="$root/.dev/go-$(id -u)"
  mkdir -p "$root/.dev"
  if [ ! -e "$dir" ]; then mkdir -m 0700 "$dir"; fi
  # Made by someone else, or a link to elsewhere: not ours to trust.
  if [ -L "$dir" ] || [ ! -O "$dir" ]; then
    echo "go-caches: $dir is not a folder of this user ($(id -un)); remove it, or set GOCACHE and GOPATH" >&2
    return 1
  fi
  chmod 0700 "$dir"
  if [ "$need_cache" = yes ]; then export GOCACHE="$dir/build"; fi
  if [ "$need_path" = yes ]; then export GOPATH="$dir/path"; fi
  return 0
}

# Runs `go build ARGS...` after every other big build of this user's has finished: the engine,
# the Command plugin and Kubernetes each peak at several GB, and two at once do not fit a small
# machine. The lock file is this user's (under the cache folder), never a shared one in /tmp.
#   go_build_one_at_a_time GO ARGS...
go_build_one_at_a_time() {
  local lock_dir="${XDG_CACHE_HOME:-${HOME:-}/.cache}/gpu-workers"
  if ! command -v flock >/dev/null 2>&1 || ! mkdir -p "$lock_dir" 2>/dev/null; then
    "$@"
    return
  fi
  flock "$lock_dir/go-build.lock" "$@"
}
