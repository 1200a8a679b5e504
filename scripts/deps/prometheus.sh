#!/usr/bin/env bash
# deps/prometheus.sh: build a Prometheus 3.x from the Go module proxy for the
# tests that need a newer one than Debian's 2.42 (TestOTLPPrometheus: the
# OTLP receiver, --web.enable-otlp-receiver). Cached: skipped when the binary
# is there. Built without the builtinassets tag, so no npm and no web UI, and
# with remove_all_sd: no service discovery (the tests' targets are static),
# a third fewer packages to build.
# Prints nothing on success; the binary is
#   ${LOADLAB_DEPS_CACHE:-$HOME/.cache/loadlab-deps}/prometheus-$VERSION/prometheus
set -euo pipefail

VERSION=v0.316.0 # module version of Prometheus 3.x (github.com/prometheus/prometheus)
cache="${LOADLAB_DEPS_CACHE:-$HOME/.cache/loadlab-deps}/prometheus-$VERSION"
bin="$cache/prometheus"
if [[ -x $bin ]]; then
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "deps/prometheus.sh: no go toolchain" >&2; exit 1; }
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "deps/prometheus.sh: building Prometheus $VERSION (minutes, once)" >&2
# The module's own go.mod (and its replace directives) must hold, so build in a
# copy of the module's source rather than with `go install pkg@version`.
dir="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/prometheus/prometheus@$VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n $dir && -d $dir ]] || { echo "deps/prometheus.sh: go mod download of prometheus@$VERSION failed" >&2; exit 1; }
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && GOWORK=off GOFLAGS=-buildvcs=false go build -trimpath -tags remove_all_sd -o "$work/prometheus" ./cmd/prometheus)
mv "$work/prometheus" "$bin.tmp"
mv "$bin.tmp" "$bin"
