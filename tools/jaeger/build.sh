#!/usr/bin/env bash
# Builds Jaeger (the all-in-one `jaeger` binary pinned in this directory's
# go.mod: an OTLP gRPC and HTTP receiver with in-memory storage and a query
# API) and prints its path.
#
#   tools/jaeger/build.sh
#
# Cached under ~/.cache/coxswain/bin with a hash of go.sum and go.mod in its
# name, so a change builds anew and no change builds nothing; moved into
# place whole, so concurrent callers never see a half-written binary. Used
# by crates/coxswain/tests/integration/tracing.rs (the real receiver of exported spans).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
hash="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
mkdir -p "$cache"
out="$cache/jaeger-$hash"
if [ ! -x "$out" ]; then
  tmp="$(mktemp "$cache/.jaeger.XXXXXX")"
  (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp" github.com/jaegertracing/jaeger/cmd/jaeger) >&2 \
    || { rm -f "$tmp"; exit 1; }
  mv -f "$tmp" "$out"
fi
echo "$out"
