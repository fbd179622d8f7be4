#!/usr/bin/env bash
# Builds the Gateway API conformance echo server (echo-basic) pinned in
# echo-basic-mod/ into the cache directory the fakelet maps `*echo-basic*`
# images to. Skips the build when the cached binary is newer than go.sum.
# Prints the binary's path on stdout (and what it did on stderr).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin_dir="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
out="$bin_dir/echo-basic"
mkdir -p "$bin_dir"
if [[ -x "$out" && "$out" -nt "$here/echo-basic-mod/go.sum" && "${FORCE:-0}" != 1 ]]; then
    echo "$out is up to date" >&2
    echo "$out"
    exit 0
fi
cd "$here/echo-basic-mod"
# No toolchain downloads; static binary so it runs anywhere on the machine.
GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -o "$out.tmp" sigs.k8s.io/gateway-api/conformance/echo-basic
mv "$out.tmp" "$out"
echo "built $out" >&2
echo "$out"
