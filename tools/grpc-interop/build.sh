#!/usr/bin/env bash
# Builds the standard gRPC interop test server and client (the main
# packages google.golang.org/grpc/interop/server and .../interop/client, at
# the version pinned in this directory's go.mod) and prints their paths,
# server first, one per line:
#
#   tools/grpc-interop/build.sh
#
# The binaries are cached under ~/.cache/coxswain/bin with a hash of go.sum
# in their names, so a pin change builds anew and an unchanged pin builds
# nothing. Each binary is moved into place whole, so concurrent callers
# never see a half-written one. Used by crates/coxswain/tests/grpc.rs.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
hash="$(sha256sum "$here/go.sum" | cut -c1-12)"
mkdir -p "$cache"
for role in server client; do
  out="$cache/grpc-interop-$role-$hash"
  if [ ! -x "$out" ]; then
    tmp="$(mktemp "$cache/.grpc-interop-$role.XXXXXX")"
    (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp" "google.golang.org/grpc/interop/$role") >&2 \
      || { rm -f "$tmp"; exit 1; }
    mv -f "$tmp" "$out"
  fi
  echo "$out"
done
