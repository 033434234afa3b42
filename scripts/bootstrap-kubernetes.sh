#!/usr/bin/env bash
# Makes a Kubernetes control plane and the Kubernetes provider's plugin available to the tests on
# a machine that cannot download them: builds them from Go modules (through the Go module proxy)
# and caches the results outside the repository, keyed by their versions.
#
#   bin=$(scripts/bootstrap-kubernetes.sh)
#
# The last line on stdout is the bin directory; progress goes to stderr. The cache entry holds:
#   bin/etcd                        etcd            (go.etcd.io/etcd/server/v3, its etcdmain)
#   bin/kube-apiserver              the API server  (k8s.io/kubernetes/cmd/...)
#   bin/kube-controller-manager     the controller manager (namespace deletion needs it)
#   bin/kubectl                     the client
#   bin/pulumi-resource-kubernetes  the Kubernetes provider's plugin, for @pulumi/kubernetes (kubernetes-plugin/)
#   crds/cilium/*.yaml              Cilium's v2 CRDs (CiliumNetworkPolicy, ...) from the
#                                   github.com/cilium/cilium module; the path is <bin>/../crds/cilium
#
# The control plane comes from a throwaway module that requires k8s.io/kubernetes: its go.mod
# points the staging modules (k8s.io/api, k8s.io/client-go, ...) at ./staging/, which a module
# zip does not have, so each such replace is repeated here with the staging release (v0.X.Y for
# Kubernetes v1.X.Y).
#
# The plugin is kubernetes-plugin/, a Go module of the project's own: its main hands the provider
# module's exported provider.Serve (github.com/pulumi/pulumi-kubernetes/provider/v4, at the version
# its go.mod pins, which the module proxy serves) the schema and the Terraform mapping, embedded.
# The provider module carries them as cmd/pulumi-resource-kubernetes/schema.json and
# terraform-mapping.json, but not the two files the provider's own build embeds, so they are
# written here, beside a copy of kubernetes-plugin/: the schema with its "version" set to the
# plugin's, the mapping as it is; both compacted. The plugin reports the version of
# @pulumi/kubernetes in package.json, the SDK it serves. Users elsewhere install the plugin the
# usual way (`pulumi plugin install`).
#
# A complete cache entry is reused without running Go at all. Cold, on 2 cores, the builds take
# 15 minutes (idle) to 30 (loaded) and up to about 5 GB of memory; they run under
# go_build_one_at_a_time (go-caches.sh), as every big Go build of this project does, so that two never run at once.
#
# Environment:
#   GPU_WORKERS_KUBERNETES_CACHE      cache root; the entry is <root>/<versions key>
#                                     (default ${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/kubernetes)
#   GPU_WORKERS_KUBERNETES_REBUILD=1  ignore the cache and build again
#   GO                                the go command to use (default: go on PATH)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '[bootstrap-kubernetes] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------------------
# Version pins. The plugin MUST match @pulumi/kubernetes in package.json's dependencies (the
# SDK that declares its resources): it is read from there, the one place to change it.
command -v node >/dev/null 2>&1 || die "node is needed to read the version from package.json"
PLUGIN_VERSION=$(node -p 'require(process.argv[1]).dependencies["@pulumi/kubernetes"] || "MISSING"' "$root/package.json")
[[ $PLUGIN_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "package.json must pin @pulumi/kubernetes to an exact version (got '$PLUGIN_VERSION')"
# The provider module kubernetes-plugin/go.mod pins: the code the plugin runs. The cache key names
# its commit, and a digest of kubernetes-plugin/'s files, so that any change to them builds anew.
PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
PROVIDER_VERSION=$(sed -n "s|^require $PROVIDER_MODULE \(v[^ ]*\)\$|\1|p" "$root/kubernetes-plugin/go.mod")
[[ -n $PROVIDER_VERSION ]] || die "kubernetes-plugin/go.mod requires no $PROVIDER_MODULE on a line of its own"
PLUGIN_SOURCES=$(cd "$root/kubernetes-plugin" && cat go.mod go.sum ./*.go | sha256sum) ||
  die "cannot read kubernetes-plugin/'s go.mod, go.sum and Go files"
KUBERNETES_VERSION=1.37.2 # the control plane the tests run against
ETCD_VERSION=3.7.0        # what go.etcd.io/etcd/server/v3 resolves to beside that Kubernetes
CILIUM_VERSION=1.20.2     # the module whose CRDs the tenants' CiliumNetworkPolicy must pass
# Bump when the way the binaries are built changes, so that old cache entries are not used.
RECIPE=2
# ---------------------------------------------------------------------------------------

cache_root=${GPU_WORKERS_KUBERNETES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-workers/kubernetes}
key="k8s${KUBERNETES_VERSION}-etcd${ETCD_VERSION}-plugin${PLUGIN_VERSION}-${PROVIDER_VERSION##*-}-${PLUGIN_SOURCES:0:8}-cilium${CILIUM_VERSION}-r${RECIPE}"
entry="$cache_root/$key"
bin="$entry/bin"
tools=(etcd kube-apiserver kube-controller-manager kubectl pulumi-resource-kubernetes)

complete() {
  local tool
  [[ -f "$entry/complete" && -f "$entry/crds/cilium/ciliumnetworkpolicies.yaml" ]] || return 1
  for tool in "${tools[@]}"; do [[ -x "$bin/$tool" ]] || return 1; done
}
report_cached() {
  log "kubernetes tools $key: $bin (Cilium's CRDs in $entry/crds/cilium)"
  printf '%s\n' "$bin"
}

# 1. A complete cache entry: nothing to build.
if [[ -z ${GPU_WORKERS_KUBERNETES_REBUILD:-} ]] && complete; then
  report_cached
  exit 0
fi

# 2. Build.
GO=${GO:-$(command -v go || true)}
[[ -n $GO && -x $GO ]] || die "the go command is needed (put it on PATH or set GO)"
command -v flock >/dev/null 2>&1 || die "flock is needed (util-linux): big Go builds take turns"
# shellcheck source-path=SCRIPTDIR source=go-caches.sh
. "$root/scripts/go-caches.sh"
go_private_caches "$root" || die "no private place for go's caches"
export GOFLAGS=-mod=mod CGO_ENABLED=0

mkdir -p "$entry"
exec 9>"$entry/lock"
flock 9 # one build at a time per entry; a second caller waits, then finds it complete
if [[ -z ${GPU_WORKERS_KUBERNETES_REBUILD:-} ]] && complete; then
  report_cached
  exit 0
fi

work=$(mktemp -d -t gpu-workers-kubernetes.XXXXXX)
trap 'rm -rf "$work"' EXIT
stage="$entry/partial"
rm -rf "$stage" "$entry/complete"
mkdir -p "$stage/bin" "$stage/crds/cilium"
SECONDS=0
log "building $key with $("$GO" env GOVERSION) (cold: 15 to 30 minutes on 2 cores)"

# fetch MODULE VERSION: downloads it; sets mod_dir and mod_gomod.
fetch() {
  local out
  out=$(cd "$work" && "$GO" mod download -json "$1@v$2" 2>&1) ||
    die "cannot get $1@v$2 from the Go module proxy: $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$out" | head -n 1)"
  mod_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  mod_gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  [[ -d $mod_dir && -f $mod_gomod ]] || die "unexpected answer from go mod download for $1@v$2"
}

build() { # build NAME LDFLAGS PACKAGE...: in the current directory, into the stage
  local name=$1 ldflags=$2 start=$SECONDS
  shift 2
  log "go build $* ..."
  go_build_one_at_a_time "$GO" build -trimpath -ldflags="-s -w $ldflags" -o "$stage/bin/" "$@" ||
    die "building $name failed"
  log "$name built in $((SECONDS - start))s"
}

# --- Cilium's CRDs: plain YAML files inside its module.
fetch github.com/cilium/cilium "$CILIUM_VERSION"
crds="$mod_dir/pkg/k8s/apis/cilium.io/client/crds/v2"
[[ -f $crds/ciliumnetworkpolicies.yaml ]] || die "github.com/cilium/cilium@v$CILIUM_VERSION has no $crds/ciliumnetworkpolicies.yaml"
cp "$crds"/*.yaml "$stage/crds/cilium/"
chmod u+w "$stage/crds/cilium"/*.yaml

# --- The control plane, from a throwaway module.
fetch k8s.io/kubernetes "$KUBERNETES_VERSION"
mkdir -p "$work/control-plane/cmd/etcd"
cd "$work/control-plane" || die "cannot enter $work/control-plane"
"$GO" mod init gpu-workers-kubernetes/control-plane 2>/dev/null || die "go mod init failed in $work/control-plane"
"$GO" mod edit -require="k8s.io/kubernetes@v$KUBERNETES_VERSION" -require="go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
staging_version="0.${KUBERNETES_VERSION#1.}"
staging=$("$GO" mod edit -json "$mod_gomod" | node -e '
  const m = JSON.parse(require("fs").readFileSync(0, "utf8"));
  for (const r of m.Replace || []) if (r.New.Path.startsWith("./staging/")) console.log(r.Old.Path);')
[[ -n $staging ]] || die "k8s.io/kubernetes@v$KUBERNETES_VERSION's go.mod names no staging module"
while read -r module; do
  "$GO" mod edit -replace="$module=$module@v$staging_version"
done <<<"$staging"
for cmd in kube-apiserver kube-controller-manager kubectl; do
  "$GO" mod edit -tool="k8s.io/kubernetes/cmd/$cmd"
done
cat >cmd/etcd/main.go <<'EOF'
// etcd, as its own release builds it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
"$GO" mod tidy >/dev/null 2>"$work/tidy.log" || die "go mod tidy of the control plane's module failed: $(tail -n 5 "$work/tidy.log")"
resolved=$("$GO" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
[[ $resolved == "v$ETCD_VERSION" ]] || die "etcd resolved to $resolved, not v$ETCD_VERSION: update ETCD_VERSION"
# The version the binaries report (kubectl version, /version), as Kubernetes's own build sets it.
version_flags=""
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  minor=${KUBERNETES_VERSION#1.}
  version_flags+=" -X $pkg.gitVersion=v$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
done
build "etcd, kube-apiserver, kube-controller-manager and kubectl" "$version_flags" \
  ./cmd/etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl

# --- The Kubernetes provider's plugin: kubernetes-plugin/, in a copy, with the two files it embeds.
cp -r "$root/kubernetes-plugin" "$work/plugin"
cd "$work/plugin" || die "cannot enter $work/plugin"
rm -f schema-embed.json terraform-mapping-embed.json # never a stale copy from the checkout
out=$("$GO" mod download -json "$PROVIDER_MODULE" 2>&1) ||
  die "cannot get $PROVIDER_MODULE@$PROVIDER_VERSION from the Go module proxy: $(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$out" | head -n 1)"
from="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")/cmd/pulumi-resource-kubernetes"
[[ -f $from/schema.json && -f $from/terraform-mapping.json ]] ||
  die "$PROVIDER_MODULE@$PROVIDER_VERSION has no cmd/pulumi-resource-kubernetes/schema.json and terraform-mapping.json"
# What the provider's own build does before it compiles: the schema gets the version the plugin
# reports (the engine reads it from GetSchema), and both files are written compact.
node -e '
  const fs = require("fs");
  const [schemaIn, mappingIn, version, schemaOut, mappingOut] = process.argv.slice(1);
  const schema = JSON.parse(fs.readFileSync(schemaIn, "utf8"));
  if (schema.name !== "kubernetes" || typeof schema.resources !== "object") throw new Error(schemaIn + " is no schema of the kubernetes package");
  schema.version = version;
  fs.writeFileSync(schemaOut, JSON.stringify(schema));
  const mapping = JSON.parse(fs.readFileSync(mappingIn, "utf8"));
  if (mapping.name !== "kubernetes") throw new Error(mappingIn + " is no Terraform mapping of the kubernetes provider");
  fs.writeFileSync(mappingOut, JSON.stringify(mapping));
' "$from/schema.json" "$from/terraform-mapping.json" "$PLUGIN_VERSION" schema-embed.json terraform-mapping-embed.json ||
  die "cannot write the plugin's schema and Terraform mapping from $from"
# The version it reports, where the provider's own build sets it.
build pulumi-resource-kubernetes "-X $PROVIDER_MODULE/pkg/version.Version=$PLUGIN_VERSION" .
[[ -x $stage/bin/pulumi-resource-kubernetes ]] || die "go build wrote no $stage/bin/pulumi-resource-kubernetes (kubernetes-plugin/go.mod's module path must end in that name)"

cd "$root" || die "cannot enter $root"
rm -rf "$bin" "$entry/crds"
mv "$stage/bin" "$bin"
mv "$stage/crds" "$entry/crds"
rm -rf "$stage"
printf 'built %s in %ss\n' "$key" "$SECONDS" >"$entry/complete"
log "done in ${SECONDS}s"
report_cached
