#!/usr/bin/env bash
# Builds the gRPC test programs pinned in this directory's go.mod and prints
# their paths, one per line, in this order:
#
#   server   ./server: the interop TestService (grpc.testing) with reflection
#   client   google.golang.org/grpc/interop/client, the standard interop client
#   grpcurl  github.com/fullstorydev/grpcurl/cmd/grpcurl
#
#   tools/grpc-interop/build.sh
#
# The binaries are cached under ~/.cache/coxswain/bin with a hash of go.sum
# and the server's source in their names, so a change builds anew and no
# change builds nothing. Each binary is moved into place whole, so
# concurrent callers never see a half-written one. Used by
# crates/coxswain/tests/integration/grpc.rs and scripts/bench-grpc.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
hash="$(cat "$here/go.sum" "$here/server/main.go" | sha256sum | cut -c1-12)"
mkdir -p "$cache"
for role in server client grpcurl; do
  case $role in
  server) package=./server ;;
  client) package=google.golang.org/grpc/interop/client ;;
  grpcurl) package=github.com/fullstorydev/grpcurl/cmd/grpcurl ;;
  esac
  out="$cache/grpc-interop-$role-$hash"
  if [ ! -x "$out" ]; then
    tmp="$(mktemp "$cache/.grpc-interop-$role.XXXXXX")"
    (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp" "$package") >&2 \
      || { rm -f "$tmp"; exit 1; }
    mv -f "$tmp" "$out"
  fi
  echo "$out"
done
