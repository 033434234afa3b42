#!/usr/bin/env bash
# Makes the Pulumi engine available on a machine that cannot download the Pulumi CLI:
# builds it from Go modules (through the Go module proxy) and caches the binaries outside the
# repository, keyed by their versions.
#
#   PATH="$(scripts/bootstrap-engine.sh):$PATH"
#
# The last line on stdout is the directory to put on PATH; progress goes to stderr.
# What lands there:
#   pulumi                          the CLI/engine          (github.com/pulumi/pulumi/pkg/v3)
#   pulumi-language-nodejs          Node.js language host (where its module is not served: a
#                                   launcher of an older one, pulumi-language-nodejs-sdk<version>,
#                                   which langhost-options.js hands the project's runtime options)
#   pulumi-resource-pulumi-nodejs   launcher of Node.js dynamic providers (a shell script)
#
# Nothing else: the Command provider's plugin is not served by any registry, so the `builtin`
# host-step transport (the project's own, over SSH) needs none. Users of the `command` transport
# install that plugin the usual way (`pulumi plugin install resource command <version>`), and the
# tests that need it find it on PATH.
#
# If `pulumi` and those plugins are already found (PATH, or PULUMI_HOME's plugins), it only
# says where they are. A complete cache entry is reused without running Go at all.
#
# Environment:
#   GPU_WORKERS_ENGINE_CACHE            cache root; binaries go to <root>/<versions key>/bin
#                                       (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/pulumi-engine)
#   GPU_WORKERS_ENGINE_REBUILD=1        ignore what is installed or cached and build again
#   GO                                  the go command to use (default: go on PATH)
#
# The Go builds take turns with every other big Go build of this user's (go_build_one_at_a_time
# in go-caches.sh): two at once do not fit a small machine.
#
# Callers then run pulumi with PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true and
# PULUMI_SKIP_UPDATE_CHECK=true (nothing may be downloaded), plus a backend and passphrase,
# e.g. PULUMI_BACKEND_URL=file://DIR and PULUMI_CONFIG_PASSPHRASE.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '[bootstrap-engine] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------------------
# Version pin. The engine MUST match @pulumi/pulumi in package.json (the devDependency this repo
# builds and tests with; consumers bring their own as a peer): it is read from there,
# so that is the one place to change it. An exact version only (no ^ or ~ range).
command -v node >/dev/null 2>&1 || die "node is needed to read the version from package.json"
PULUMI_VERSION=$(node -p 'require(process.argv[1]).devDependencies["@pulumi/pulumi"] || "MISSING"' "$root/package.json")
[[ $PULUMI_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "package.json must pin @pulumi/pulumi to an exact version (got '$PULUMI_VERSION')"
# Where the Node.js language host comes from when its own module
# (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3) is not to be had at
# PULUMI_VERSION: the last github.com/pulumi/pulumi/sdk/v3 release served here that still
# carries it. It speaks the engine's gRPC protocol, but the newer engine hands it the runtime
# options of Pulumi.yaml (typescript, tsconfig, nodeargs) over an RPC it does not know, so a
# launcher reads them from the project and passes them as the flags it takes
# (scripts/langhost-options.js): without them it would load ts-node into every program.
LANGHOST_FALLBACK_SDK_VERSION=3.68.0
# Bump when the way the binaries are built changes, so that old cache entries are not used.
RECIPE=4
# ---------------------------------------------------------------------------------------

cache_root=${GPU_WORKERS_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/pulumi-engine}
key="v${PULUMI_VERSION}-r${RECIPE}"
entry="$cache_root/$key"
bin="$entry/bin"
pulumi_home=${PULUMI_HOME:-$HOME/.pulumi}

# plugin_path KIND NAME VERSION: where pulumi would find that plugin, or nothing.
plugin_path() {
  local found
  if found=$(command -v "pulumi-$1-$2" 2>/dev/null); then
    printf '%s\n' "$found"
  elif [[ -x "$pulumi_home/plugins/$1-$2-v$3/pulumi-$1-$2" ]]; then
    printf '%s\n' "$pulumi_home/plugins/$1-$2-v$3/pulumi-$1-$2"
  fi
}

# 1. Already installed: say where, change nothing.
if [[ -z ${GPU_WORKERS_ENGINE_REBUILD:-} ]] && existing=$(command -v pulumi 2>/dev/null); then
  missing=()
  where=("pulumi: $existing")
  for spec in "language nodejs $PULUMI_VERSION" "resource pulumi-nodejs $PULUMI_VERSION"; do
    read -r kind name version <<<"$spec"
    found=$(plugin_path "$kind" "$name" "$version")
    if [[ -z $found && -x "$(dirname "$existing")/pulumi-$kind-$name" ]]; then
      found="$(dirname "$existing")/pulumi-$kind-$name"
    fi
    if [[ -n $found ]]; then where+=("pulumi-$kind-$name: $found"); else missing+=("pulumi-$kind-$name"); fi
  done
  if ((${#missing[@]} == 0)); then
    for w in "${where[@]}"; do log "$w"; done
    dirname "$existing"
    exit 0
  fi
  log "pulumi is on PATH ($existing) but not ${missing[*]}; using the cached build"
fi

# 2. A complete cache entry: nothing to build.
report_cached() {
  log "engine $key: $bin"
  printf '%s\n' "$bin"
}
complete() { [[ -f "$entry/complete" && -x "$bin/pulumi" && -x "$bin/pulumi-language-nodejs" ]]; }
if [[ -z ${GPU_WORKERS_ENGINE_REBUILD:-} ]] && complete; then
  report_cached
  exit 0
fi

# 3. Build.
GO=${GO:-$(command -v go || true)}
[[ -n $GO && -x $GO ]] || die "the go command is needed (put it on PATH or set GO)"
# shellcheck source-path=SCRIPTDIR source=go-caches.sh
. "$root/scripts/go-caches.sh"
go_private_caches "$root" || die "no private place for go's caches"
export GOFLAGS=-mod=mod CGO_ENABLED=0
# The checksum database has no entry for some Pulumi release modules (it answered 404 for
# github.com/pulumi/pulumi/pkg/v3 v3.248.0); skip it for the modules fetched by name here.
# Every other module is still checked against it, and all hashes go into the wrapper's go.sum.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/pulumi/pulumi/pkg,github.com/pulumi/pulumi/sdk/nodejs/cmd"

mkdir -p "$entry"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$entry/lock"
  flock 9 # one build at a time per entry; a second caller waits, then finds it complete
  if [[ -z ${GPU_WORKERS_ENGINE_REBUILD:-} ]] && complete; then
    report_cached
    exit 0
  fi
fi

work=$(mktemp -d -t gpu-workers-engine.XXXXXX)
trap 'rm -rf "$work"' EXIT
stage="$entry/bin.partial"
rm -rf "$stage" "$entry/complete"
mkdir -p "$stage"
SECONDS=0
log "building the Pulumi engine $key with $("$GO" env GOVERSION) (cold: several minutes)"

# fetch MODULE VERSION: downloads it; sets mod_dir and mod_gomod. Fails (with the proxy's
# answer on stderr) when the module proxy does not serve that version.
fetch() {
  local out
  if ! out=$(cd "$work" && "$GO" mod download -json "$1@v$2" 2>&1); then
    log "cannot get $1@v$2 from the Go module proxy:" \
        "$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$out" | sed 's/\\[nt]/ /g' | head -n 1)"
    return 1
  fi
  mod_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  mod_gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  [[ -d $mod_dir && -f $mod_gomod ]] || die "unexpected answer from go mod download for $1@v$2"
}

# wrapper NAME: a throwaway main module in the temp dir; cd's into it.
wrapper() {
  mkdir -p "$work/$1"
  cd "$work/$1" || die "cannot enter $work/$1"
  "$GO" mod init "gpu-workers-engine/$1" 2>/dev/null || die "go mod init failed in $work/$1"
}

# use MODULE VERSION: fetch it, require it from the current wrapper and repeat the replace
# directives of its go.mod that point at other modules (the ones a dependency's go.mod
# cannot impose). Local-path replaces are logged and left out.
use() {
  local replaces what old new
  fetch "$1" "$2" || return 1
  "$GO" mod edit -require="$1@v$2"
  replaces=$("$GO" mod edit -json "$mod_gomod" | node -e '
    const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
    for (const r of m.Replace || []) {
      const old = r.Old.Path + (r.Old.Version ? "@" + r.Old.Version : "");
      console.log(r.New.Version ? "R " + old + " " + r.New.Path + "@" + r.New.Version : "L " + old + " " + r.New.Path);
    }')
  while read -r what old new; do
    case $what in
      R) "$GO" mod edit -replace="$old=$new" ;;
      L) log "ignoring the local-path replace $old => $new of $1" ;;
    esac
  done <<<"$replaces"
}

build() { # build NAME LDFLAGS PACKAGE...
  local name=$1 ldflags=$2 start=$SECONDS
  shift 2
  log "go build $* ..."
  go_build_one_at_a_time "$GO" build -trimpath -ldflags="-s -w $ldflags" -o "$stage/" "$@"
  log "$name built in $((SECONDS - start))s"
}

# --- The CLI, and the Node.js language host when its own module exists at that version.
sdk_version_var=github.com/pulumi/pulumi/sdk/v3/go/common/version.Version
langhost_mod=github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3
wrapper cli
use github.com/pulumi/pulumi/pkg/v3 "$PULUMI_VERSION" || die "cannot build the pulumi CLI $PULUMI_VERSION"
"$GO" mod edit -require="github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION"
cli_pkgs=(github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
if use "$langhost_mod" "$PULUMI_VERSION"; then
  cli_pkgs+=("$langhost_mod")
  langhost_done=1
else
  langhost_done=""
fi
build "pulumi${langhost_done:+ and pulumi-language-nodejs}" "-X $sdk_version_var=v$PULUMI_VERSION" "${cli_pkgs[@]}"

# --- Otherwise the Node.js language host from the last sdk/v3 release that carries it.
if [[ -z $langhost_done ]]; then
  log "using pulumi-language-nodejs from github.com/pulumi/pulumi/sdk/v3@v$LANGHOST_FALLBACK_SDK_VERSION instead"
  wrapper langhost
  use github.com/pulumi/pulumi/sdk/v3 "$LANGHOST_FALLBACK_SDK_VERSION" ||
    die "cannot build the Node.js language host"
  build pulumi-language-nodejs "-X $sdk_version_var=v$LANGHOST_FALLBACK_SDK_VERSION" \
    github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs
  fallback_host=pulumi-language-nodejs-sdk$LANGHOST_FALLBACK_SDK_VERSION
  mv "$stage/pulumi-language-nodejs" "$stage/$fallback_host"
  cp "$root/scripts/langhost-options.js" "$stage/"
  cat >"$stage/pulumi-language-nodejs" <<EOF
#!/usr/bin/env bash
# The Node.js language host of sdk v$LANGHOST_FALLBACK_SDK_VERSION, given the project's runtime options as its flags.
here=\$(dirname "\$(readlink -f "\$0")")
flags=\$(node "\$here/langhost-options.js") || exit 1
args=()
[[ -z \$flags ]] || mapfile -t args <<<"\$flags"
exec "\$here/$fallback_host" "\${args[@]}" "\$@"
EOF
  chmod +x "$stage/pulumi-language-nodejs"
fi

# --- The launcher the engine runs for Node.js dynamic providers. Same as the script the
# Pulumi SDK ships: the engine starts it in the program's directory, so @pulumi/pulumi is
# resolved from the program's node_modules.
cat >"$stage/pulumi-resource-pulumi-nodejs" <<'EOF'
#!/bin/sh
script=$(node -e "console.log(require.resolve('@pulumi/pulumi/cmd/dynamic-provider'))") || exit 1
exec node "$script" "$@"
EOF
chmod +x "$stage/pulumi-resource-pulumi-nodejs"

cd "$root" || die "cannot enter $root"
rm -rf "$bin"
mv "$stage" "$bin"
printf 'built %s in %ss\n' "$key" "$SECONDS" >"$entry/complete"
log "done in ${SECONDS}s"
report_cached
