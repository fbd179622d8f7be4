#!/usr/bin/env bash
# Builds the external authorization test service (./main.go: HTTP
# forward-auth and Envoy's Authorization/Check over gRPC, from
# go-control-plane) and prints its path.
#
#   tools/ext-authz/build.sh
#
# Cached under ~/.cache/coxswain/bin with a hash of go.sum and the source in
# its name, so a change builds anew and no change builds nothing; moved into
# place whole, so concurrent callers never see a half-written binary. Used
# by crates/proxy/tests/integration/external_auth.rs and
# crates/coxswain/tests/integration/external_auth.rs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
hash="$(cat "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
mkdir -p "$cache"
out="$cache/ext-authz-$hash"
if [ ! -x "$out" ]; then
  tmp="$(mktemp "$cache/.ext-authz.XXXXXX")"
  (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp" .) >&2 \
    || { rm -f "$tmp"; exit 1; }
  mv -f "$tmp" "$out"
fi
echo "$out"
