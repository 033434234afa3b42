#!/usr/bin/env bash
# Sourced by up.sh, down.sh and fly.sh: the environment the dev stack runs in. A local file backend
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
  bin=$(bash "$root/scripts/bootstrap-engine.sh") || die "could not provide the Pulumi engine (see above)"
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
  [ "$(id -u)" -eq 0 ] || die "no LXD daemon answers on $LXD_SOCKET; start LXD (as root: $root/scripts/lxd-test-daemon.sh start /var/lib/lxd)"
  bash "$root/scripts/lxd-test-daemon.sh" start /var/lib/lxd >/dev/null
}

ensure_image() {
  LXD_DIR=/var/lib/lxd bash "$root/scripts/lxd-build-image.sh" import debian-12 >/dev/null
}

# The dev stack's config for pulumi (--config-file): Pulumi.dev.yaml with the Concourse release
# that is reachable here (scripts/concourse-release.sh: supplied, or downloaded by its sha256), or
# without the web and the worker's release where none is. Sets DEV_CONFIG, and DEV_RELEASE to the
# release's version or to nothing.
DEV_CONFIG="$root/.dev/Pulumi.dev.effective.yaml"
DEV_RELEASE=""
ensure_dev_config() {
  local found rc=0 tarball link
  mkdir -p "$root/.dev"
  found=$(bash "$root/scripts/concourse-release.sh") || rc=$?
  if [ "$rc" -eq 0 ]; then
    tarball=$(sed -n 1p <<<"$found")
    DEV_RELEASE=$(sed -n 2p <<<"$found")
    link=".dev/concourse-$DEV_RELEASE-linux-amd64.tgz"
    ln -sfn "$tarball" "$root/$link"
    node "$root/scripts/dev-stack-config.js" --release "$link" "$DEV_RELEASE" >"$DEV_CONFIG.tmp"
  elif [ "$rc" -eq 3 ]; then
    node "$root/scripts/dev-stack-config.js" --no-release >"$DEV_CONFIG.tmp"
  else
    die "the Concourse release given is not usable (see above)"
  fi
  mv -f "$DEV_CONFIG.tmp" "$DEV_CONFIG"
}

# The dev worker's datasets on this machine: one read-only folder and one writable one. The
# worker's container maps its users away from this machine's, so the writable folder is open to all.
DEV_DATASETS=/var/lib/gpu-workers-dev/datasets
ensure_datasets() {
  [ -d "$DEV_DATASETS/models" ] && [ -d "$DEV_DATASETS/scratch_rw" ] && return 0
  [ "$(id -u)" -eq 0 ] || die "the dev datasets folder $DEV_DATASETS is missing; create it as root (models/, scratch_rw/ open to all)"
  mkdir -p "$DEV_DATASETS/models" "$DEV_DATASETS/scratch_rw"
  echo "a read-only dataset of the dev stack" >"$DEV_DATASETS/models/README"
  chmod 0755 "$DEV_DATASETS/models"
  chmod 1777 "$DEV_DATASETS/scratch_rw"
}

remove_datasets() {
  rm -rf "$DEV_DATASETS"
  rmdir "$(dirname "$DEV_DATASETS")" 2>/dev/null || true
}

# fly as the dev stack's web serves it (/api/v1/cli: the binary itself, which the web unpacks from
# its fly-assets tarball), kept in DIR (default .dev/fly) while its version (fly --version) is the
# web's (/api/v1/info), downloaded again when it is not: a fly of another release warns on every
# command, or refuses the web when their major versions differ. Prints its path.
ensure_fly() {
  local url=$1 dir=${2:-$root/.dev/fly} fly info want have
  fly="$dir/fly"
  info=$(curl -fsS "$url/api/v1/info") || die "could not read the web's version from $url/api/v1/info"
  want=$(node -e 'const v = JSON.parse(process.argv[1]).version; if (typeof v !== "string" || v === "") process.exit(1); process.stdout.write(v)' "$info" 2>/dev/null) ||
    die "$url/api/v1/info: no version in its answer: $info"
  if [ -x "$fly" ]; then
    have=$("$fly" --version 2>/dev/null) || have=""
    if [ "$have" = "$want" ]; then
      echo "$fly"
      return 0
    fi
    echo "gpu-workers: the kept $fly is ${have:+fly }${have:-a fly whose --version fails}, the web is $want: downloading fly again" >&2
  fi
  mkdir -p "$dir"
  curl -fsS -o "$fly.part" "$url/api/v1/cli?arch=amd64&platform=linux" || die "could not download fly from $url/api/v1/cli"
  [ "$(head -c 4 "$fly.part" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || die "$url/api/v1/cli gave no Linux program"
  chmod 0755 "$fly.part"
  have=$("$fly.part" --version 2>/dev/null) || have=""
  if [ "$have" != "$want" ]; then
    rm -f "$fly.part"
    die "$url/api/v1/cli gave ${have:+fly }${have:-a fly whose --version fails}, but the web is $want"
  fi
  mv -f "$fly.part" "$fly"
  echo "$fly"
}

# What the up made: where the web is and how to reach it, or, without a release, what was
# converged and what to set for the rest.
print_result() {
  local web url user version
  web=$(pulumi stack output web --json --stack dev 2>/dev/null) || web=null
  if [ "$web" = "null" ]; then
    version=$(node -p 'require("yaml").parse(require("fs").readFileSync(process.argv[1], "utf8")).config["gpu-workers:defaults"].concourse.version' "$root/Pulumi.dev.yaml")
    cat <<MSG

The dev worker host is converged through its validator: containerd, the runc wrapper and the
datasets, checked by a container through them. No Concourse release was reachable, so the stack
has no web and no Concourse worker. For them, set GPU_WORKERS_CONCOURSE_RELEASE to the official
concourse-$version-linux-amd64.tgz (or the folder it unpacks to), or GPU_WORKERS_CONCOURSE_SHA256
to its sha256 to download it, and run npm run up again.
MSG
    return 0
  fi
  url=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).url)' "$web")
  user=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).username)' "$web")
  cat <<MSG

Concourse $DEV_RELEASE web: $url (user: $user)
  npm run fly -- workers                                   the dev worker and its tags
  npm run fly -- execute -c examples/gpu-task.yml --tag dev   a task through the runc wrapper
  pulumi stack output web --show-secrets --stack dev       the password (PULUMI_CONFIG_PASSPHRASE: gpu-workers-dev)
MSG
}
