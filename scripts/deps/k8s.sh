#!/usr/bin/env bash
# scripts/deps/k8s.sh: build kube-apiserver, kube-controller-manager,
# kube-scheduler and kubelet from the Go module proxy: the first two for the
# tests that validate loadlab's Kubernetes manifests against a real API
# server and Job controller (TestK8sIndexedJob), all four for the one-node
# cluster of scripts/cluster (TestK8sCluster). Cached under
# ${LOADLAB_DEPS_CACHE:-$HOME/.cache/loadlab-deps}/k8s-VERSION/bin; only the
# binaries missing there are built. The first two take 17 minutes of CPU (52
# min of wall-clock on this project's 2 cores shared with three other builds
# and test runs, 2026-12-01); kube-scheduler and kubelet, built after them,
# take about 10 more minutes of CPU (their own packages; the rest is in Go's
# build cache); ~330 MB of binaries in all.
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod
# replaces its staging modules (k8s.io/api, k8s.io/client-go and the rest)
# with ./staging/src/... directories. A throwaway module requires it and
# replaces each staging module with its published v0.X.Y instead.
set -euo pipefail

version="${K8S_VERSION:-1.37.2}"
staging="0.${version#1.}"
cache="${LOADLAB_DEPS_CACHE:-$HOME/.cache/loadlab-deps}/k8s-v$version"
bin="$cache/bin"
all=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
missing=()
for b in "${all[@]}"; do
  [[ -x $bin/$b ]] || missing+=("$b")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "k8s.sh: building ${missing[*]} v$version into $bin (several minutes)" >&2

# The staging modules are the ones k8s.io/kubernetes replaces with a local path.
modfile="$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
if [[ ! -f $modfile ]]; then
  echo "k8s.sh: could not download k8s.io/kubernetes@v$version's go.mod" >&2
  exit 1
fi
mapfile -t mods < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$modfile" | sort -u)
if ((${#mods[@]} == 0)); then
  echo "k8s.sh: found no staging replace directives in $modfile" >&2
  exit 1
fi
echo "k8s.sh: pinning ${#mods[@]} staging modules to v$staging" >&2

cat >go.mod <<MOD
module loadlab.invalid/k8sdeps

go $(go env GOVERSION | sed 's/^go\([0-9]*\.[0-9]*\).*/\1/')

require k8s.io/kubernetes v$version
MOD
for m in "${mods[@]}"; do
  echo "replace $m => $m v$staging" >>go.mod
done
cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
out="$work/bin"
mkdir -p "$out" "$bin"
pkgs=()
for b in "${missing[@]}"; do
  pkgs+=("k8s.io/kubernetes/cmd/$b")
done
# One go build for the missing binaries, so they share compilation. kubelet
# builds without cgo too (CGO_ENABLED=0, as Kubernetes' release builds it).
start=$SECONDS
GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags=-s -o "$out/" "${pkgs[@]}"
for b in "${missing[@]}"; do
  mv "$out/$b" "$bin/$b"
done
echo "k8s.sh: built ${missing[*]} in $((SECONDS - start)) s of wall-clock" >&2
